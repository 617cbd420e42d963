// rcuda: command-line entry point. Parses arguments (CLI11) and hands over to a subcommand;
// docs/cli.md describes each.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
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

// `serve` runs a model on a worker thread while up to hundreds of HTTP threads parse requests.
// OpenMP's threads spin after each parallel region by default (OMP_WAIT_POLICY active), taking
// the cores those threads need: on 2 cores, 64 clients of a batched MLP got 1,500 rows/s with
// spinning and 33,000 with passive waiting. libgomp reads the variable when it loads, so serve
// starts itself again with it set, unless the user has set it.
void restart_with_passive_openmp(int argc, char** argv) {
  if (argc < 2 || std::getenv("OMP_WAIT_POLICY") || std::string(argv[1]) != "serve") return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then carry on as we are
}

// `rcuda launch [OPTIONS] [--] PROGRAM ARGS...`: where PROGRAM starts, so that its arguments
// (which may look like rcuda's options) reach it untouched. argc when there is none.
int launch_program_index(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "launch") return argc;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return i;  // launch() drops it
    if (arg == "--nproc-per-node" || arg == "--mpirun") {
      ++i;  // its value
    } else if (arg.empty() || arg[0] != '-') {
      return i;
    }
  }
  return argc;
}

// A check of a number that says, in words, what the option needs ("--level: must be 1, 2 or 3,
// got 7"); CLI11's own ranges print both ends of a double's range.
CLI::Validator number_check(const std::string& what, std::function<bool(double)> valid) {
  return CLI::Validator(
      [what, valid](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        const bool number = end != value.c_str() && *end == '\0';
        return number && valid(v) ? "" : "must be " + what + ", got " + value;
      },
      what);
}

}  // namespace

int main(int argc, char** argv) {
  restart_without_blas_threads(argc, argv);
  restart_with_passive_openmp(argc, argv);
  CLI::App app{"rcuda: GPU and CPU runtime diagnostics, benchmarks, telemetry and serving"};
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

  rcuda::cli::StressArgs stress;
  CLI::App* stress_cmd = app.add_subcommand(
      "stress",
      "Load every GPU with checked products and copies, watch it through NVML, compare with its "
      "baseline; exit 0 pass, 1 wrong results or device errors, 3 below the baseline, 4 no GPU, "
      "5 stopped (docs/stress.md)");
  stress_cmd
      ->add_option("--seconds", stress.seconds,
                   "Total seconds, the level's phases scaled to it (default: the level's, about "
                   "45 s, 5 min, 22 min)")
      ->check(
          number_check("a positive number of seconds", [](double v) { return v > 0 && v <= 1e7; }));
  stress_cmd
      ->add_option("--level", stress.level,
                   "1: short (under a minute), 2: 60 s per product dtype, 3: 300 s per dtype on "
                   "16384 x 16384 matrices")
      ->check(number_check("1, 2 or 3", [](double v) { return v == 1 || v == 2 || v == 3; }));
  stress_cmd->add_flag(
      "--json", stress.json,
      "Print the report as JSON (docs/stress-schema.json); progress goes to stderr");
  stress_cmd->add_flag("--save-baseline", stress.save_baseline,
                       "Write this run's figures as the GPU's baseline (not when results are "
                       "wrong or the run was stopped)");
  stress_cmd->add_option("--baseline", stress.baseline,
                         "Baseline file to compare with and save to (default: "
                         "$XDG_CACHE_HOME/rcuda/stress-baseline-<uuid>.json per GPU)");
  stress_cmd
      ->add_option("--threshold", stress.threshold,
                   "Fail (exit 3) when a figure is below this fraction of its baseline "
                   "(default 0.9)")
      ->check(number_check("a fraction from 0 to 1", [](double v) { return v >= 0 && v <= 1; }));
  stress_cmd->add_option("--device", stress.device, "Stress only this CUDA device (default: all)")
      ->check(number_check("a CUDA device index (0, 1, ...)",
                           [](double v) { return v >= 0 && v == static_cast<int>(v); }));

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

  rcuda::cli::ServeArgs serve;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve", "Serve a model repository over HTTP: KServe v2 (Triton's REST API) and vetiver");
  serve_cmd
      ->add_option("--model-repository", serve.model_repository,
                   "Folder of models laid out as Triton's: <model>/[config.json], "
                   "<model>/<version>/model.onnx")
      ->required()
      ->check(CLI::ExistingDirectory);
  serve_cmd->add_option("--http-port", serve.http_port, "HTTP port (0: any free port)")
      ->check(CLI::Range(0, 65535));
  serve_cmd
      ->add_option("--metrics-port", serve.metrics_port,
                   "Prometheus metrics port, /metrics (0: any free port, -1: off)")
      ->check(CLI::Range(-1, 65535));
  serve_cmd->add_option("--host", serve.host, "Address to listen on (default: loopback)");
  serve_cmd
      ->add_option("--max-request-bytes", serve.max_request_bytes,
                   "Largest request body accepted; larger ones are answered 413 (default 64 MiB)")
      ->check(CLI::Range(1LL, 1LL << 40));
  serve_cmd
      ->add_option("--http-threads", serve.http_threads,
                   "Connections served at once (one thread each; default 256)")
      ->check(CLI::Range(1, 65536));
  serve_cmd
      ->add_option("--model-control-mode", serve.model_control_mode,
                   "none: load every model at start, no loads or unloads over HTTP; explicit: load "
                   "none at start, only through /v2/repository/models/<m>/load")
      ->check(CLI::IsMember({"none", "explicit"}));
  serve_cmd->add_option("--vetiver-model", serve.vetiver_model,
                        "Model behind vetiver's /predict and /metadata (default: the only loaded "
                        "model)");
  serve_cmd
      ->add_option("--device", serve.device,
                   "Device of models whose config names none: cpu or cuda (default: CUDA when "
                   "usable, else the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  rcuda::cli::LaunchArgs launch;
  CLI::App* launch_cmd = app.add_subcommand(
      "launch",
      "Start N ranks of a program on this machine through Open MPI's mpirun, as torchrun does: "
      "rcuda launch --nproc-per-node N [--] PROGRAM ARGS...");
  launch_cmd
      ->add_option("--nproc-per-node", launch.nproc_per_node,
                   "Ranks to start (one per GPU for the nccl backend)")
      ->required()
      ->check(CLI::Range(1, 4096));
  launch_cmd->add_option("--mpirun", launch.mpirun, "Open MPI's mpirun (default: mpirun on PATH)");

  // PROGRAM and its arguments are not parsed: CLI11 sees only what comes before them.
  const int program = launch_program_index(argc, argv);
  launch.command.assign(argv + program, argv + argc);
  CLI11_PARSE(app, program, argv);
  try {
    if (doctor_cmd->parsed()) return rcuda::cli::doctor(doctor);
    if (bench_cmd->parsed()) return rcuda::cli::bench(bench);
    if (stress_cmd->parsed()) return rcuda::cli::stress(stress);
    if (monitor_cmd->parsed()) return rcuda::cli::monitor(monitor);
    if (exporter_cmd->parsed()) return rcuda::cli::exporter(exporter);
    if (serve_cmd->parsed()) return rcuda::cli::serve(serve);
    if (launch_cmd->parsed()) return rcuda::cli::launch(launch);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rcuda: %s\n", e.what());
    return 2;
  }
  return 2;
}
