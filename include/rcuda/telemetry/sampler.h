// A background thread that samples every GPU through NVML at a fixed interval and keeps the
// latest readings, so that readers (an HTTP scrape) never wait on NVML: they get the last
// sample, at most one interval old.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rcuda/telemetry/metrics.h"
#include "rcuda/telemetry/nvml.h"

namespace rcuda::telemetry {

class NvmlSampler {
 public:
  // Samples once before returning, so latest() is filled from the start.
  NvmlSampler(std::shared_ptr<const Nvml> nvml, std::chrono::milliseconds interval);
  ~NvmlSampler();  // stops and joins the thread
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  std::vector<GpuSample> latest() const;
  int64_t samples_taken() const;  // rounds completed (for tests and self-monitoring)

 private:
  void run();
  std::shared_ptr<const Nvml> nvml_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<GpuSample> latest_;
  int64_t rounds_ = 0;
  std::thread thread_;
};

// Writes samples into the rcuda_gpu_* gauges of `registry` (names in docs/cli.md), labelled
// gpu="<index>" and uuid="<uuid>"; fields a GPU does not report are left out.
void export_gpu_samples(Registry& registry, const std::vector<GpuSample>& samples);

// rcuda_build_info{version, cuda_runtime, cuda_built} 1.
void export_build_info(Registry& registry);

// The process's CUDA pool statistics per visible device (rcuda_cuda_memory_*_bytes gauges,
// rcuda_cuda_alloc_total, rcuda_cuda_free_total, rcuda_cuda_oom_total, rcuda_cuda_alloc_retry_total
// counters), labelled gpu="<CUDA index>". Nothing when there is no CUDA device.
void export_allocator_stats(Registry& registry);

// One sample as a CSV row / JSON object (no trailing newline); empty fields for missing values.
// Columns: see csv_header().
std::string csv_header();
std::string csv_row(const GpuSample& s);
std::string json_line(const GpuSample& s);
// ISO 8601 UTC with milliseconds: 2026-11-30T12:00:00.200Z.
std::string iso8601_utc(int64_t unix_ms);

}  // namespace rcuda::telemetry
