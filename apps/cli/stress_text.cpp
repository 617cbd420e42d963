// The stress report as text for a terminal (print_text of stress_report.h).
#include <algorithm>
#include <cinttypes>
#include <string>

#include "stress_report.h"

namespace rcuda::stress {
namespace {

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string bytes_text(uint64_t b) {
  if (b >= (1ULL << 30)) return format("%.2f GiB", static_cast<double>(b) / (1ULL << 30));
  return format("%.0f MiB", static_cast<double>(b) / (1ULL << 20));
}

std::string count_text(int64_t n) {
  return n < 100000 ? std::to_string(n) : format("%.3g", static_cast<double>(n));
}

std::string wrong_text(int64_t wrong, int64_t compared) {
  return compared > 0 ? count_text(wrong) + " wrong of " + count_text(compared) : "";
}

std::string baseline_text(const std::vector<Figure>& figures, const std::string& name) {
  for (const Figure& f : figures)
    if (f.name == name && f.baseline)
      return format("%.2f of ", *f.ratio) + format("%.2f", *f.baseline) +
             (f.below_threshold ? ", BELOW" : "");
  return "";
}

void row(std::FILE* out, const std::string& what, const std::string& size, const std::string& rate,
         const std::string& wrong, const std::string& baseline) {
  // Columns at fixed places, a long cell pushing the rest right; no trailing blanks.
  std::string line = what;
  const auto cell = [&line](const std::string& text, size_t column) {
    if (text.empty()) return;
    line.resize(std::max(line.size() + 1, column), ' ');
    line += text;
  };
  cell(size, 21);
  cell(rate, 54);
  cell(wrong, 70);
  cell(baseline, 98);
  std::fprintf(out, "  %s\n", line.c_str());
}

void print_copy(std::FILE* out, const char* what, const char* figure, const CopyResult& c,
                const std::vector<Figure>& figures) {
  if (!c.skipped.empty()) {
    row(out, what, "skipped: " + c.skipped, "", "", "");
    return;
  }
  if (!c.error.empty()) {
    row(out, what, "ERROR: " + c.error, "", "", "");
    return;
  }
  row(out, what, bytes_text(c.bytes), c.copies > 0 ? format("%.1f GB/s", c.gbps) : "-",
      wrong_text(c.wrong_elements, c.compared_elements), baseline_text(figures, figure));
}

void print_stat(std::FILE* out, const char* what, const Stat& s, double scale, const char* unit) {
  if (s.count == 0) return;
  std::fprintf(out, "%s %.0f / %.1f / %.0f %s", what, s.min * scale, s.mean() * scale,
               s.max * scale, unit);
}

void print_gpu(std::FILE* out, const GpuReport& g) {
  std::fprintf(out, "\ncuda:%d  %s  sm_%d%d  %s\n", g.index, g.name.c_str(), g.major, g.minor,
               g.uuid.c_str());
  if (g.free_memory_bytes)
    std::fprintf(out, "  free memory %s of %s\n", bytes_text(*g.free_memory_bytes).c_str(),
                 bytes_text(static_cast<uint64_t>(g.total_memory_bytes)).c_str());
  row(out, "test", "work", "rate", "wrong elements", "against baseline");
  for (const GemmResult& r : g.gemm) {
    const std::string what = std::string("gemm ") + gemm_name(r.kind);
    if (!r.skipped.empty()) {
      row(out, what, "skipped: " + r.skipped, "", "", "");
      continue;
    }
    if (!r.error.empty()) row(out, what, "ERROR: " + r.error, "", "", "");
    row(out, what,
        std::to_string(r.products) + " x " + std::to_string(r.n) + "^3, " + std::to_string(r.sets) +
            " sets",
        r.products > 0 ? format("%.1f TFLOP/s", r.tflops) : "-",
        wrong_text(r.wrong_elements, r.compared_elements),
        baseline_text(g.figures, std::string("gemm_") + gemm_name(r.kind) + "_tflops"));
    if (r.reference_sets > 0) {
      std::string ref = "reference: " + std::to_string(r.reference_rows) + " rows of " +
                        std::to_string(r.reference_sets) + " sets, " +
                        wrong_text(r.reference.wrong, r.reference.elements) +
                        format(", worst error %.3f of the tolerance", r.reference.worst_ratio);
      if (r.reference.wrong > 0)
        ref += " (row " + std::to_string(r.reference.first_wrong_row) + ", column " +
               std::to_string(r.reference.first_wrong_column) +
               format(": got %.9g", r.reference.first_wrong_got) +
               format(", expected %.9g)", r.reference.first_wrong_expected);
      std::fprintf(out, "  %-21s%s\n", "", ref.c_str());
    }
  }
  print_copy(out, "device copy", "device_copy_gbps", g.device_copy, g.figures);
  print_copy(out, "host to device", "host_to_device_gbps", g.host_to_device, g.figures);
  print_copy(out, "device to host", "device_to_host_gbps", g.device_to_host, g.figures);

  const TelemetrySummary& t = g.telemetry;
  if (!t.available) {
    std::fprintf(out, "  NVML: %s\n", t.unavailable_reason.c_str());
  } else {
    std::fprintf(out, "  NVML, %" PRId64 " samples (min / mean / max):", t.samples);
    print_stat(out, " temperature", t.temperature_celsius, 1, "C,");
    print_stat(out, " power", t.power_watts, 1, "W,");
    print_stat(out, "\n    SM clock", t.sm_clock_hertz, 1e-6, "MHz,");
    print_stat(out, " memory clock", t.memory_clock_hertz, 1e-6, "MHz");
    std::fprintf(out, "\n    clock events:");
    if (t.clock_events.empty()) std::fprintf(out, " none");
    for (const auto& [name, count] : t.clock_events)
      std::fprintf(out, " %s%s (%.0f%% of samples)", name.c_str(), is_slowdown(name) ? "*" : "",
                   100.0 * static_cast<double>(count) /
                       static_cast<double>(std::max<int64_t>(t.clock_event_samples, 1)));
    std::fprintf(out, "%s\n",
                 t.clock_event_samples == 0 ? " (not reported by this GPU)"
                                            : "  (* slowdown: power, thermal or hardware)");
  }
  if (!g.baseline_file.empty())
    std::fprintf(out, "  baseline %s%s%s%s\n", g.baseline_file.c_str(),
                 g.baseline_saved ? " (saved)" : (g.baseline_found ? " (compared)" : ""),
                 g.baseline_note.empty() ? "" : ": ", g.baseline_note.c_str());
}

}  // namespace

void print_text(const Report& r, std::FILE* out) {
  std::fprintf(out, "rcuda stress: level %d, %.0f s planned, %.1f s run, %zu GPU%s (started %s)\n",
               r.level, r.planned_seconds, r.seconds, r.gpus.size(), r.gpus.size() == 1 ? "" : "s",
               r.started_at.c_str());
  for (const GpuReport& g : r.gpus) print_gpu(out, g);
  const Verdict v = verdict(r);
  std::fprintf(out, "\n");
  switch (v) {
    case Verdict::Pass:
      std::fprintf(out,
                   "PASS: no wrong elements, no device errors; no figure below %.2f of its "
                   "baseline\n",
                   r.threshold);
      break;
    case Verdict::NoGpu:
      std::fprintf(out, "NO GPU: %s\n", r.no_gpu_reason.c_str());
      break;
    case Verdict::Interrupted:
      std::fprintf(out,
                   "INTERRUPTED: stopped by a signal; the figures above are partial and "
                   "were not compared with a baseline\n");
      break;
    case Verdict::Failed:
      for (const GpuReport& g : r.gpus) {
        if (g.wrong_elements() > 0)
          std::fprintf(out, "FAIL: cuda:%d (%s) gave %" PRId64 " wrong elements\n", g.index,
                       g.uuid.c_str(), g.wrong_elements());
        for (const std::string& e : g.errors())
          std::fprintf(out, "FAIL: cuda:%d (%s): %s\n", g.index, g.uuid.c_str(), e.c_str());
      }
      break;
    case Verdict::BelowBaseline:
      for (const GpuReport& g : r.gpus)
        for (const Figure& f : g.figures)
          if (f.below_threshold)
            std::fprintf(out,
                         "BELOW BASELINE: cuda:%d %s %.2f %s is %.2f of the baseline's %.2f "
                         "(threshold %.2f)\n",
                         g.index, f.name.c_str(), f.value, f.unit.c_str(), *f.ratio, *f.baseline,
                         r.threshold);
      break;
  }
}

}  // namespace rcuda::stress
