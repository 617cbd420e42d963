// `rcuda stress`: runs the stress (stress_run.h) on the chosen GPUs, compares the figures with the
// GPU's baseline file, saves a new one on request, and prints the report as text or JSON with
// the verdict as exit status (docs/stress.md). SIGINT/SIGTERM stop it after the products in
// flight, with the partial report.
#include <cstdio>

#include "commands.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"
#include "rcuda/telemetry/nvml.h"
#include "rcuda/telemetry/sampler.h"
#include "stop_signal.h"
#include "stress_baseline.h"
#include "stress_report.h"
#include "stress_run.h"

#ifndef RCUDA_VERSION_STRING
#define RCUDA_VERSION_STRING "unknown"
#endif

namespace rcuda::cli {

using namespace rcuda::stress;

namespace {

// The GPU's baseline file: --baseline, else the default in the user's cache folder; "" (and
// *why) when there is no such folder (neither XDG_CACHE_HOME nor HOME set).
std::string baseline_path(const StressArgs& args, const std::string& uuid, std::string* why) {
  if (!args.baseline.empty()) return args.baseline;
  try {
    return default_baseline_path(uuid);
  } catch (const ValueError& e) {
    *why = e.what();
    return "";
  }
}

// Refuses, before the run, a baseline that cannot be used: an explicit --baseline without
// entries (unless it is being written), a file that is not a baseline file, nowhere to save.
void check_baselines(const StressArgs& args, const std::vector<int>& devices) {
  if (!args.baseline.empty() && !args.save_baseline && read_baseline_file(args.baseline).empty())
    throw ValueError("stress: --baseline " + args.baseline +
                     " has no entries (or does not exist); write one with --save-baseline");
  for (int d : devices) {
    std::string why;
    const std::string path = baseline_path(args, cuda::properties(d).uuid, &why);
    if (path.empty() && args.save_baseline) throw ValueError(why);
    if (!path.empty()) read_baseline_file(path);
  }
}

// Compares a GPU's figures with its entry of the baseline file and saves a new one when asked.
void compare_and_save(const StressArgs& args, const Report& report, GpuReport& g) {
  const std::vector<BaselineEntry> entries = read_baseline_file(g.baseline_file);
  if (const std::optional<BaselineEntry> entry = find_baseline(entries, g.uuid, report.level)) {
    g.baseline_found = true;
    compare_with_baseline(g.figures, *entry, report.threshold);
  } else if (!args.save_baseline) {
    g.baseline_note = "no baseline for this GPU at level " + std::to_string(report.level) +
                      " (write one with --save-baseline)";
  }
  if (!args.save_baseline) return;
  if (g.wrong_elements() > 0 || !g.errors().empty()) {
    g.baseline_note = "not saved: this GPU gave wrong results or device errors";
    return;
  }
  BaselineEntry e;
  e.uuid = g.uuid;
  e.name = g.name;
  e.level = report.level;
  e.saved_at = report.started_at;
  e.rcuda_version = report.rcuda_version;
  for (const Figure& f : g.figures) e.figures[f.name] = f.value;
  save_baseline(g.baseline_file, e);
  g.baseline_saved = true;
}

// Compares each GPU's figures with its baseline and saves new baselines when asked.
void apply_baselines(const StressArgs& args, Report& report) {
  for (GpuReport& g : report.gpus) {
    g.figures = figures_of(g);
    g.baseline_file = baseline_path(args, g.uuid, &g.baseline_note);
    if (g.baseline_file.empty()) continue;  // the note says why
    if (report.interrupted) {
      g.baseline_note = "not compared or saved: the run was stopped early";
      continue;
    }
    // The files were read before the run; one that turned bad since, or a save that fails,
    // loses no report: it is noted and the run's verdict stands.
    try {
      compare_and_save(args, report, g);
    } catch (const ValueError& e) {
      g.baseline_note = e.what();
      std::fprintf(stderr, "rcuda stress: %s\n", e.what());
    }
  }
}

int finish(const StressArgs& args, const Report& report) {
  if (args.json)
    std::fputs(to_json(report).c_str(), stdout);
  else
    print_text(report, stdout);
  std::fflush(stdout);
  return exit_code(verdict(report));
}

}  // namespace

int stress(const StressArgs& args) {
  Plan plan = plan_for_level(args.level);
  Report report;
  report.rcuda_version = RCUDA_VERSION_STRING;
  report.started_at = telemetry::iso8601_utc(telemetry::unix_time_ms());
  report.level = args.level;
  report.threshold = args.threshold;
  const int count = cuda::device_count();
  if (count == 0) {
    report.no_gpu_reason = "no CUDA device to stress: " + cuda::unavailable_reason();
    report.planned_seconds = args.seconds > 0 ? args.seconds : planned_seconds(plan, 4, true);
    std::fprintf(stderr, "rcuda stress: %s\n", report.no_gpu_reason.c_str());
    return finish(args, report);
  }
  std::vector<int> devices;
  if (args.device >= 0) {
    RCUDA_CHECK(args.device < count, ValueError, "stress: --device ", args.device,
                " does not exist: ", count, count == 1 ? " GPU is" : " GPUs are",
                " visible (indices 0 to ", count - 1, ")");
    devices.push_back(args.device);
  } else {
    for (int d = 0; d < count; ++d) devices.push_back(d);
  }
  check_baselines(args, devices);

  RunOptions options;
  int kinds = 0;  // the product kinds that will run on some GPU, for the planned time
  for (GemmKind kind : kGemmKinds) {
    bool anyone = false;
    for (int d : devices) {
      const cuda::DeviceProperties p = cuda::properties(d);
      anyone = anyone || gemm_supported(kind, p.major, p.minor);
    }
    kinds += anyone ? 1 : 0;
  }
  if (args.seconds > 0) plan = scaled_to(plan, args.seconds, kinds, true);
  options.plan = plan;
  options.devices = devices;
  options.context.should_stop = stop_requested;
  options.context.log = [](const std::string& line) {
    std::fprintf(stderr, "rcuda stress: %s\n", line.c_str());
  };
  catch_stop_signals();  // from here on, Ctrl-C ends the run with its partial report
  std::fprintf(stderr, "rcuda stress: level %d, %.0f s planned on %zu GPU%s\n", args.level,
               planned_seconds(plan, kinds, true), devices.size(), devices.size() == 1 ? "" : "s");

  Report ran = run_stress(options);
  ran.rcuda_version = report.rcuda_version;
  ran.started_at = report.started_at;
  ran.threshold = report.threshold;
  ran.planned_seconds = planned_seconds(plan, kinds, true);
  apply_baselines(args, ran);
  return finish(args, ran);
}

}  // namespace rcuda::cli
