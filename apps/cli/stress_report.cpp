// The stress report's verdict, JSON and text (stress_report.h).
#include "stress_report.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace rcuda::stress {
namespace {

using json = nlohmann::ordered_json;

json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
json number_or_null(std::optional<double> v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

json stat_json(const Stat& s) {
  if (s.count == 0) return nullptr;
  return {{"min", s.min}, {"mean", s.mean()}, {"max", s.max}};
}

json reference_json(const GemmResult& g) {
  const ReferenceCheck& c = g.reference;
  json first = nullptr;
  if (c.wrong > 0)
    first = {{"row", c.first_wrong_row},
             {"column", c.first_wrong_column},
             {"got", number_or_null(c.first_wrong_got)},
             {"expected", c.first_wrong_expected}};
  return {{"sets", g.reference_sets},           {"rows", g.reference_rows},
          {"compared_elements", c.elements},    {"wrong_elements", c.wrong},
          {"worst_error_ratio", c.worst_ratio}, {"first_wrong", first}};
}

json gemm_json(const GemmResult& g) {
  return {{"dtype", gemm_name(g.kind)},
          {"skipped", text_or_null(g.skipped)},
          {"error", text_or_null(g.error)},
          {"n", g.n},
          {"operand_sets", g.sets},
          {"memory_bytes", g.bytes},
          {"products", g.products},
          {"seconds", g.seconds},
          {"tflops", g.products > 0 ? json(g.tflops) : json(nullptr)},
          {"compared_elements", g.compared_elements},
          {"wrong_elements", g.wrong_elements},
          {"reference", reference_json(g)}};
}

json copy_json(const CopyResult& c) {
  return {{"skipped", text_or_null(c.skipped)},
          {"error", text_or_null(c.error)},
          {"bytes", c.bytes},
          {"copies", c.copies},
          {"seconds", c.seconds},
          {"gbps", c.copies > 0 ? json(c.gbps) : json(nullptr)},
          {"compared_elements", c.compared_elements},
          {"wrong_elements", c.wrong_elements}};
}

json nvml_json(const TelemetrySummary& t) {
  json events = json::object();
  bool slowdown = false;
  for (const auto& [name, count] : t.clock_events) {
    events[name] = count;
    slowdown = slowdown || is_slowdown(name);
  }
  return {{"available", t.available},
          {"unavailable_reason", t.available ? json(nullptr) : text_or_null(t.unavailable_reason)},
          {"samples", t.samples},
          {"temperature_celsius", stat_json(t.temperature_celsius)},
          {"power_watts", stat_json(t.power_watts)},
          {"sm_clock_hertz", stat_json(t.sm_clock_hertz)},
          {"memory_clock_hertz", stat_json(t.memory_clock_hertz)},
          {"clock_event_samples", t.clock_event_samples},
          {"clock_events", events},
          {"slowdown_seen", slowdown}};
}

json gpu_json(const GpuReport& g) {
  json gemm = json::array();
  for (const GemmResult& r : g.gemm) gemm.push_back(gemm_json(r));
  json figures = json::array();
  for (const Figure& f : g.figures)
    figures.push_back({{"name", f.name},
                       {"unit", f.unit},
                       {"value", f.value},
                       {"baseline", number_or_null(f.baseline)},
                       {"ratio", number_or_null(f.ratio)},
                       {"below_threshold", f.below_threshold}});
  return {{"index", g.index},
          {"name", g.name},
          {"uuid", g.uuid},
          {"compute_capability", std::to_string(g.major) + "." + std::to_string(g.minor)},
          {"total_memory_bytes", g.total_memory_bytes},
          {"free_memory_bytes", g.free_memory_bytes ? json(*g.free_memory_bytes) : json(nullptr)},
          {"wrong_elements", g.wrong_elements()},
          {"errors", g.errors()},
          {"gemm", gemm},
          {"device_copy", copy_json(g.device_copy)},
          {"host_to_device", copy_json(g.host_to_device)},
          {"device_to_host", copy_json(g.device_to_host)},
          {"nvml", nvml_json(g.telemetry)},
          {"baseline",
           {{"file", text_or_null(g.baseline_file)},
            {"found", g.baseline_found},
            {"saved", g.baseline_saved},
            {"note", text_or_null(g.baseline_note)}}},
          {"figures", figures}};
}

}  // namespace

int64_t GpuReport::wrong_elements() const {
  int64_t n =
      device_copy.wrong_elements + host_to_device.wrong_elements + device_to_host.wrong_elements;
  for (const GemmResult& g : gemm) n += g.wrong_elements + g.reference.wrong;
  return n;
}

std::vector<std::string> GpuReport::errors() const {
  std::vector<std::string> out;
  for (const GemmResult& g : gemm)
    if (!g.error.empty()) out.push_back(std::string("gemm ") + gemm_name(g.kind) + ": " + g.error);
  const std::pair<const char*, const CopyResult*> copies[] = {{"device copy", &device_copy},
                                                              {"host to device", &host_to_device},
                                                              {"device to host", &device_to_host}};
  for (const auto& [what, c] : copies)
    if (!c->error.empty()) out.push_back(std::string(what) + ": " + c->error);
  return out;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Pass:
      return "pass";
    case Verdict::Failed:
      return "failed";
    case Verdict::BelowBaseline:
      return "below_baseline";
    case Verdict::NoGpu:
      return "no_gpu";
    case Verdict::Interrupted:
      return "interrupted";
  }
  return "?";
}

std::vector<Figure> figures_of(const GpuReport& gpu) {
  std::vector<Figure> out;
  for (const GemmResult& g : gpu.gemm)
    if (g.products > 0 && g.seconds > 0)
      out.push_back({std::string("gemm_") + gemm_name(g.kind) + "_tflops", "TFLOP/s", g.tflops});
  const std::pair<const char*, const CopyResult*> copies[] = {
      {"device_copy_gbps", &gpu.device_copy},
      {"host_to_device_gbps", &gpu.host_to_device},
      {"device_to_host_gbps", &gpu.device_to_host}};
  for (const auto& [name, c] : copies)
    if (c->copies > 0 && c->seconds > 0) out.push_back({name, "GB/s", c->gbps});
  return out;
}

Verdict verdict(const Report& r) {
  if (r.gpus.empty()) return Verdict::NoGpu;
  bool below = false;
  for (const GpuReport& g : r.gpus) {
    if (g.wrong_elements() > 0 || !g.errors().empty()) return Verdict::Failed;
    for (const Figure& f : g.figures) below = below || f.below_threshold;
  }
  if (r.interrupted) return Verdict::Interrupted;
  return below ? Verdict::BelowBaseline : Verdict::Pass;
}

std::string to_json(const Report& r) {
  const Verdict v = verdict(r);
  json gpus = json::array();
  for (const GpuReport& g : r.gpus) gpus.push_back(gpu_json(g));
  json j = {{"schema_version", 1},
            {"rcuda_version", r.rcuda_version},
            {"ok", v == Verdict::Pass},
            {"verdict", verdict_name(v)},
            {"exit_code", exit_code(v)},
            {"no_gpu_reason", text_or_null(r.no_gpu_reason)},
            {"started_at", r.started_at},
            {"level", r.level},
            {"planned_seconds", r.planned_seconds},
            {"seconds", r.seconds},
            {"threshold", r.threshold},
            {"interrupted", r.interrupted},
            {"gpus", gpus}};
  return j.dump(2) + "\n";
}

}  // namespace rcuda::stress
