// Prometheus text format 0.0.4 and OpenMetrics 1.0 text format for a registry's snapshot.
// Both print families in registration order and series in creation order, so output is
// stable from one scrape to the next (diffable, and tests compare it verbatim).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "rcuda/telemetry/metrics.h"

namespace rcuda::telemetry {

const char* const kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";
const char* const kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

namespace {

// Integral values print without exponent or decimals (bytes, counts); others with enough
// significant digits to read back exactly.
std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else  // the shortest of 15..17 significant digits that reads back exactly: 0.51, not
        // 0.51000000000000001
    for (int digits = 15; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
  return buf;
}

std::string escape(const std::string& s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

void append_sample(std::string& out, const std::string& name, const Labels& labels, double v) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out += ',';
      out += labels[i].first;
      out += "=\"";
      out += escape(labels[i].second, true);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += format_value(v);
  out += '\n';
}

const char* type_name(MetricType t) { return t == MetricType::Gauge ? "gauge" : "counter"; }

}  // namespace

std::string prometheus_text(const std::vector<FamilySnapshot>& families) {
  std::string out;
  for (const FamilySnapshot& f : families) {
    if (f.samples.empty()) continue;  // promtool rejects metadata without samples
    out += "# HELP " + f.name + " " + escape(f.help, false) + "\n";
    out += "# TYPE " + f.name + " " + type_name(f.type) + "\n";
    for (const auto& [labels, v] : f.samples) append_sample(out, f.name, labels, v);
  }
  return out;
}

std::string openmetrics_text(const std::vector<FamilySnapshot>& families) {
  std::string out;
  for (const FamilySnapshot& f : families) {
    if (f.samples.empty()) continue;
    // A counter family is named without its _total suffix; its samples keep it.
    const std::string family =
        f.type == MetricType::Counter ? f.name.substr(0, f.name.size() - 6) : f.name;
    out += "# TYPE " + family + " " + type_name(f.type) + "\n";
    if (!f.unit.empty()) out += "# UNIT " + family + " " + f.unit + "\n";
    out += "# HELP " + family + " " + escape(f.help, true) + "\n";
    for (const auto& [labels, v] : f.samples) append_sample(out, f.name, labels, v);
  }
  out += "# EOF\n";
  return out;
}

std::string prometheus_text(Registry& registry) { return prometheus_text(registry.snapshot()); }
std::string openmetrics_text(Registry& registry) { return openmetrics_text(registry.snapshot()); }

bool wants_openmetrics(const std::string& accept_header) {
  return accept_header.find("application/openmetrics-text") != std::string::npos;
}

}  // namespace rcuda::telemetry
