// rcuda: command-line entry point. Parses arguments (CLI11) and hands over to a subcommand;
// docs/cli.md describes each.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "commands.h"

namespace {

// `monitor` and `exporter` run for hours and never call BLAS, yet loading librcuda starts
// OpenBLAS's thread pool (one thread per core), whose threads spin for about 0.1 s each before
// sleeping: 3 CPU-seconds on a 32-core machine, ten times the monitor's own cost for its first
// minute. OpenBLAS reads OPENBLAS_NUM_THREADS when it loads, before main(), so these two
// commands start themselves again with it set to 1, unless the user has set it.
void restart_without_blas_threads(int argc, char** argv) {
  if (argc < 2 || std::getenv("OPENBLAS_NUM_THREADS")) return;
  const std::string command = argv[1];
  if (command != "monitor" && command != "exporter") return;
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then carry on as we are
}

}  // namespace

int main(int argc, char** argv) {
  restart_without_blas_threads(argc, argv);
  CLI::App app{"rcuda: GPU and CPU runtime diagnostics, benchmarks and telemetry"};
  app.require_subcommand(1);

  rcuda::cli::DoctorArgs doctor;
  CLI::App* doctor_cmd = app.add_subcommand(
      "doctor", "Check the machine and rcuda's build; exit 1 when a check FAILs");
  doctor_cmd->add_flag("--json", doctor.json, "Print the report as JSON (docs/doctor-schema.json)");
  doctor_cmd->add_flag("--no-gpu-checks", doctor.no_gpu_checks,
                       "Report devices without launching work on them");

  rcuda::cli::BenchArgs bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "randn and matmul timings, CPU vs CUDA");
  bench_cmd
      ->add_option("--size", bench.size, "Matrix side N (default 10000 with a GPU, 2000 without)")
      ->check(CLI::Range(1LL, 100000LL));
  bench_cmd->add_option("--repeat", bench.repeat, "Timed runs per figure (median reported)")
      ->check(CLI::Range(1, 1000));
  bench_cmd->add_flag("--no-cpu", bench.no_cpu, "Skip the CPU rows");

  rcuda::cli::MonitorArgs monitor;
  CLI::App* monitor_cmd = app.add_subcommand("monitor", "Sample every GPU through NVML");
  monitor_cmd->add_option("--interval", monitor.interval_ms, "Milliseconds between samples")
      ->check(CLI::Range(10, 3600000));
  monitor_cmd->add_option("--format", monitor.format, "csv or jsonl")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  monitor_cmd->add_option("--output", monitor.output, "File to write (default: stdout)");
  monitor_cmd
      ->add_option("--duration", monitor.duration_s, "Seconds to run (default: until Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
  monitor_cmd->add_flag("--profile", monitor.profile,
                        "At exit, report the wall and CPU time of each NVML function");

  rcuda::cli::ExporterArgs exporter;
  CLI::App* exporter_cmd =
      app.add_subcommand("exporter", "Serve GPU and allocator metrics for Prometheus at /metrics");
  exporter_cmd->add_option("--port", exporter.port, "TCP port (0: any free port)")
      ->check(CLI::Range(0, 65535));
  exporter_cmd->add_option("--bind", exporter.bind, "Address to listen on");
  exporter_cmd->add_option("--interval", exporter.interval_ms, "Milliseconds between NVML samples")
      ->check(CLI::Range(10, 3600000));
  exporter_cmd->add_flag(
      "--allocator-stats", exporter.allocator_stats,
      "Also export this process's CUDA pool statistics (creates a CUDA context per GPU)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (doctor_cmd->parsed()) return rcuda::cli::doctor(doctor);
    if (bench_cmd->parsed()) return rcuda::cli::bench(bench);
    if (monitor_cmd->parsed()) return rcuda::cli::monitor(monitor);
    if (exporter_cmd->parsed()) return rcuda::cli::exporter(exporter);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rcuda: %s\n", e.what());
    return 2;
  }
  return 2;
}
