// The metrics registry: families of labelled gauges and counters (rcuda/telemetry/metrics.h).
#include <algorithm>
#include <set>

#include "rcuda/core/error.h"
#include "rcuda/telemetry/metrics.h"

namespace rcuda::telemetry {
namespace {

bool valid_name(const std::string& s, bool colon_allowed) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_allowed && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const char* type_name(MetricType t) { return t == MetricType::Gauge ? "gauge" : "counter"; }

}  // namespace

void Gauge::add(double delta) {
  double old = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(old, old + delta, std::memory_order_relaxed)) {
  }
}

void Counter::inc(double delta) {
  RCUDA_CHECK(delta >= 0, ValueError, "Counter::inc: delta must be >= 0 (got ", delta, ")");
  double old = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(old, old + delta, std::memory_order_relaxed)) {
  }
}

Registry::Family& Registry::family(const std::string& name, const std::string& help,
                                   const std::string& unit, MetricType type, const Labels& labels) {
  auto found = by_name_.find(name);
  if (found != by_name_.end()) {
    const FamilySnapshot& m = found->second->meta;
    RCUDA_CHECK(m.type == type && m.help == help && m.unit == unit, ValueError, "metric ", name,
                ": already registered as a ", type_name(m.type), " with help \"", m.help,
                "\" and unit \"", m.unit, "\"");
    return *found->second;
  }
  RCUDA_CHECK(valid_name(name, true), ValueError, "metric ", name,
              ": names match [a-zA-Z_:][a-zA-Z0-9_:]*");
  const std::string base = type == MetricType::Counter
                               ? name.substr(0, name.size() - std::min<size_t>(6, name.size()))
                               : name;
  RCUDA_CHECK(type == MetricType::Gauge || ends_with(name, "_total"), ValueError, "metric ", name,
              ": a counter's name ends in _total");
  RCUDA_CHECK(unit.empty() || ends_with(base, "_" + unit), ValueError, "metric ", name, ": unit \"",
              unit, "\" must be the name's suffix (", base, " ends otherwise)");
  for (const char* reserved : {"_created", "_bucket", "_count", "_sum", "_gsum", "_gcount"})
    RCUDA_CHECK(!ends_with(base, reserved), ValueError, "metric ", name, ": the suffix ", reserved,
                " is reserved by OpenMetrics");
  auto f = std::make_unique<Family>();
  f->meta.name = name;
  f->meta.help = help;
  f->meta.unit = unit;
  f->meta.type = type;
  Family* raw = f.get();
  families_.push_back(std::move(f));
  by_name_[name] = raw;
  (void)labels;
  return *raw;
}

namespace {
void check_labels(const std::string& metric, const Labels& labels) {
  std::set<std::string> seen;
  for (const auto& [key, value] : labels) {
    RCUDA_CHECK(valid_name(key, false) && key.rfind("__", 0) != 0, ValueError, "metric ", metric,
                ": label name \"", key,
                "\" must match [a-zA-Z_][a-zA-Z0-9_]* without a leading __");
    RCUDA_CHECK(seen.insert(key).second, ValueError, "metric ", metric, ": label \"", key,
                "\" given twice");
  }
}
}  // namespace

Gauge& Registry::gauge(const std::string& name, const std::string& help, const Labels& labels,
                       const std::string& unit) {
  check_labels(name, labels);
  std::lock_guard<std::mutex> lock(mutex_);
  Family& f = family(name, help, unit, MetricType::Gauge, labels);
  auto& slot = f.gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  // A series hidden by clear() reappears when set again.
  if (std::find(f.order.begin(), f.order.end(), labels) == f.order.end()) f.order.push_back(labels);
  return *slot;
}

Counter& Registry::counter(const std::string& name, const std::string& help, const Labels& labels,
                           const std::string& unit) {
  check_labels(name, labels);
  std::lock_guard<std::mutex> lock(mutex_);
  Family& f = family(name, help, unit, MetricType::Counter, labels);
  auto& slot = f.counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  // A series hidden by clear() reappears when set again.
  if (std::find(f.order.begin(), f.order.end(), labels) == f.order.end()) f.order.push_back(labels);
  return *slot;
}

void Registry::clear(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = by_name_.find(name);
  if (found == by_name_.end()) return;
  // Handles given out earlier must stay valid, so series are kept and only hidden.
  found->second->order.clear();
}

void Registry::add_collector(std::function<void(Registry&)> collector) {
  std::lock_guard<std::mutex> lock(collectors_mutex_);
  collectors_.push_back(std::move(collector));
}

std::vector<FamilySnapshot> Registry::snapshot() {
  {
    std::lock_guard<std::mutex> lock(collectors_mutex_);  // one scrape collects at a time
    for (auto& c : collectors_) c(*this);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FamilySnapshot> out;
  out.reserve(families_.size());
  for (const auto& f : families_) {
    FamilySnapshot s = f->meta;
    for (const Labels& labels : f->order) {
      const double v = s.type == MetricType::Gauge ? f->gauges.at(labels)->value()
                                                   : f->counters.at(labels)->value();
      s.samples.emplace_back(labels, v);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace rcuda::telemetry
