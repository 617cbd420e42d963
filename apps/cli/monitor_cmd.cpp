// `rcuda monitor`: samples every GPU through NVML each --interval and writes one CSV row or
// JSON line per GPU per sample. SIGINT/SIGTERM end it after the current sample, so the last
// line is always complete. At exit it reports its own CPU use on stderr (getrusage): the
// loop sleeps on absolute deadlines and makes five NVML calls per GPU; what those cost is the
// driver's, and --profile reports it per function.
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "commands.h"
#include "rcuda/telemetry/nvml.h"
#include "rcuda/telemetry/sampler.h"
#include "stop_signal.h"

namespace rcuda::cli {
namespace {

timespec add_ms(timespec t, int64_t ms) {
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000;
  if (t.tv_nsec >= 1000000000) {
    t.tv_sec += 1;
    t.tv_nsec -= 1000000000;
  }
  return t;
}

double seconds_between(const timespec& a, const timespec& b) {
  return double(b.tv_sec - a.tv_sec) + double(b.tv_nsec - a.tv_nsec) / 1e9;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int monitor(const MonitorArgs& args) {
  std::string why;
  const std::unique_ptr<telemetry::Nvml> nvml = telemetry::Nvml::open(&why);
  if (!nvml) {
    std::fprintf(stderr, "rcuda monitor: %s\n", why.c_str());
    return 1;
  }
  nvml->set_profiling(args.profile);
  FILE* out = stdout;
  if (!args.output.empty() && args.output != "-") {
    out = std::fopen(args.output.c_str(), "w");
    if (!out) {
      std::fprintf(stderr, "rcuda monitor: cannot open %s for writing: %s\n", args.output.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  catch_stop_signals();           // no SA_RESTART: the signal interrupts the sleep (stop_signal.h)
  std::signal(SIGPIPE, SIG_IGN);  // a closed pipe ends the loop through the failed write

  const bool csv = args.format == "csv";
  if (csv) std::fprintf(out, "%s\n", telemetry::csv_header().c_str());
  std::fflush(out);

  timespec start{}, next{}, now{}, steady{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  next = start;
  double cpu_at_start = cpu_seconds(), cpu_at_steady = cpu_at_start;
  int64_t rounds = 0;
  bool write_failed = false;
  while (!stop_requested()) {
    // NVML initialises lazily on the first reading of each GPU (a second or more of CPU on
    // real drivers), so steady-state use is measured from the end of the first round.
    std::string lines;
    for (const telemetry::GpuSample& s : nvml->sample_all())
      lines += (csv ? telemetry::csv_row(s) : telemetry::json_line(s)) + "\n";
    // One write per sample round, so an interrupted run never ends mid-line.
    if (std::fwrite(lines.data(), 1, lines.size(), out) != lines.size() || std::fflush(out) != 0) {
      write_failed = true;
      break;
    }
    if (++rounds == 1) {
      clock_gettime(CLOCK_MONOTONIC, &steady);
      cpu_at_steady = cpu_seconds();
    }
    next = add_ms(next, args.interval_ms);
    if (args.duration_s > 0 && seconds_between(start, next) >= args.duration_s) break;
    while (!stop_requested() &&
           clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR) {
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &now);
  const double cpu_now = cpu_seconds();
  const double wall = seconds_between(start, now),
               steady_wall = rounds > 1 ? seconds_between(steady, now) : 0;
  const double steady_cpu = cpu_now - cpu_at_steady;
  if (out != stdout) std::fclose(out);
  std::fprintf(stderr,
               "rcuda monitor: %lld samples of %d GPUs in %.2f s; own CPU time %.1f ms, of which "
               "the first sample (NVML start-up) %.1f ms; after it %.3f%% of one core\n",
               static_cast<long long>(rounds), nvml->device_count(), wall,
               (cpu_now - cpu_at_start) * 1e3, (cpu_at_steady - cpu_at_start) * 1e3,
               steady_wall > 0 ? 100.0 * steady_cpu / steady_wall : 0.0);
  if (args.profile) {
    std::fprintf(stderr, "rcuda monitor: NVML calls (first sample included)\n%-32s %8s %14s %14s\n",
                 "function", "calls", "wall us/call", "CPU us/call");
    for (const telemetry::Nvml::CallCost& c : nvml->call_costs()) {
      const double n = c.calls > 0 ? double(c.calls) : 1.0;
      std::fprintf(stderr, "%-32s %8lld %14.1f %14.1f\n", c.function.c_str(),
                   static_cast<long long>(c.calls), 1e6 * c.wall_seconds / n,
                   1e6 * c.cpu_seconds / n);
    }
  }
  return write_failed && !stop_requested() ? 1 : 0;
}

}  // namespace rcuda::cli
