// The subcommands of `rcuda`. Each returns the process's exit status.
#pragma once

#include <string>

namespace rcuda::cli {

struct DoctorArgs {
  bool json = false;
  bool no_gpu_checks = false;
};
int doctor(const DoctorArgs& args);

struct BenchArgs {
  long long size = 0;  // 0: 10000 with a GPU, 2000 without
  int repeat = 0;      // timed runs per figure; 0: 10 on the GPU, 3 on the CPU
  bool no_cpu = false;
};
int bench(const BenchArgs& args);

struct MonitorArgs {
  int interval_ms = 200;
  std::string format = "csv";  // csv | jsonl
  std::string output;          // "" or "-": stdout
  double duration_s = 0;       // 0: until SIGINT/SIGTERM
  bool profile = false;        // report each NVML function's cost at exit
};
int monitor(const MonitorArgs& args);

struct ExporterArgs {
  int port = 9400;  // 0: any free port (printed on stderr)
  std::string bind = "127.0.0.1";
  int interval_ms = 1000;
  // Off by default: reading the pool's statistics creates a CUDA context on every GPU
  // (hundreds of MiB each, and it takes an exclusive-process GPU away from real work).
  bool allocator_stats = false;
};
int exporter(const ExporterArgs& args);

}  // namespace rcuda::cli
