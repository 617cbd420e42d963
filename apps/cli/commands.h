// The subcommands of `rcuda`. Each returns the process's exit status.
#pragma once

#include <string>
#include <vector>

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

struct StressArgs {
  double seconds = 0;  // 0: the level's own durations; else every phase scaled to this total
  int level = 1;       // 1, 2 or 3 (docs/stress.md)
  bool json = false;
  bool save_baseline = false;
  std::string baseline;    // "": $XDG_CACHE_HOME/rcuda/stress-baseline-<uuid>.json per GPU
  double threshold = 0.9;  // a figure below this fraction of its baseline fails (exit 3)
  int device = -1;         // -1: every visible GPU at once
};
int stress(const StressArgs& args);

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

struct ServeArgs {
  std::string model_repository;
  std::string host = "127.0.0.1";
  int http_port = 8000;     // 0: any free port (printed on stderr)
  int metrics_port = 8002;  // 0: any free port; -1: off
  long long max_request_bytes = 64LL << 20;
  int http_threads = 256;
  std::string model_control_mode = "none";  // none | explicit
  std::string vetiver_model;                // "": the only loaded model
  std::string device;                       // "": CUDA when usable, else the CPU; cpu | cuda
};
int serve(const ServeArgs& args);

struct LaunchArgs {
  int nproc_per_node = 1;
  std::string mpirun = "mpirun";
  std::vector<std::string> command;  // the program and its arguments
};
int launch(const LaunchArgs& args);

}  // namespace rcuda::cli
