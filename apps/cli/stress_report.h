// The report of `rcuda stress`: what ran on each GPU, what was wrong, the figures against the
// baseline, the verdict and its exit status; as JSON (docs/stress-schema.json) or text.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "stress_baseline.h"
#include "stress_check.h"
#include "stress_plan.h"
#include "stress_telemetry.h"

namespace rcuda::stress {

struct GemmResult {
  GemmKind kind = GemmKind::Float32;
  std::string skipped;   // why it did not run; "" when it ran
  std::string error;     // the exception that ended it (a device fault), "" when none
  int64_t n = 0;         // matrix side
  int64_t sets = 0;      // operand sets in device memory
  uint64_t bytes = 0;    // device memory the sets took
  int64_t products = 0;  // timed products, each compared with its set's first
  double seconds = 0;    // device time of the timed products
  double tflops = 0;     // 2 n^3 products / seconds / 1e12
  int64_t compared_elements = 0;
  int64_t wrong_elements = 0;  // differences from the first products
  int64_t reference_sets = 0;  // first products checked against the host's reference
  int64_t reference_rows = 0;  // rows of each
  ReferenceCheck reference;
};

struct CopyResult {
  std::string skipped, error;
  uint64_t bytes = 0;  // per copy
  int64_t copies = 0;
  double seconds = 0;
  double gbps = 0;  // bytes moved (device copies: read + write) / seconds / 1e9
  int64_t compared_elements = 0;
  int64_t wrong_elements = 0;
};

struct GpuReport {
  int index = 0;  // CUDA index
  std::string name, uuid;
  int major = 0, minor = 0;
  int64_t total_memory_bytes = 0;
  std::optional<uint64_t> free_memory_bytes;  // at the start, from NVML
  std::vector<GemmResult> gemm;
  CopyResult device_copy, host_to_device, device_to_host;
  TelemetrySummary telemetry;
  // baseline
  std::string baseline_file;
  bool baseline_found = false;  // an entry for this GPU and level was there
  bool baseline_saved = false;
  std::string baseline_note;  // why it was not compared or saved, "" otherwise
  std::vector<Figure> figures;

  int64_t wrong_elements() const;           // every kind of wrong element together
  std::vector<std::string> errors() const;  // the phases' exceptions, "gemm float32: ..."
};

// Exit statuses (docs/stress.md): 0 pass; 1 wrong results or a device error; 2 a bad argument
// or an error before the run (main's); 3 a figure below the baseline's threshold; 4 no GPU;
// 5 stopped by SIGINT/SIGTERM before the end (a partial report, no baseline verdict).
enum class Verdict { Pass = 0, Failed = 1, BelowBaseline = 3, NoGpu = 4, Interrupted = 5 };
const char* verdict_name(Verdict v);  // "pass", "failed", "below_baseline", "no_gpu", "interrupted"

struct Report {
  std::string rcuda_version;
  std::string started_at;  // ISO 8601 UTC
  int level = 1;
  double planned_seconds = 0, seconds = 0;
  double threshold = 0.9;
  bool interrupted = false;
  std::string no_gpu_reason;  // "" when there are GPUs
  std::vector<GpuReport> gpus;
};

// The throughput figures a GPU's run measured (those that ran), in report order.
std::vector<Figure> figures_of(const GpuReport& gpu);
// Wrong results or device errors first, then no GPU, interruption, a figure below the
// threshold, else pass.
Verdict verdict(const Report& report);
inline int exit_code(Verdict v) { return static_cast<int>(v); }

std::string to_json(const Report& report);  // docs/stress-schema.json, pretty-printed
void print_text(const Report& report, std::FILE* out);

}  // namespace rcuda::stress
