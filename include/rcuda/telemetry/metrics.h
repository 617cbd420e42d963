// A metrics registry: gauges and counters with labels, exposed as Prometheus text (0.0.4) or
// OpenMetrics 1.0 text. `rcuda exporter` serves one; the inference server will serve another.
//
//   Registry r;
//   Gauge& t = r.gauge("rcuda_gpu_temperature_celsius", "GPU temperature.",
//                      {{"gpu", "0"}, {"uuid", "GPU-..."}}, "celsius");
//   t.set(45);
//   Counter& n = r.counter("rcuda_requests_total", "Requests served.");
//   n.inc();
//   std::string body = prometheus_text(r);
//
// Names follow Prometheus conventions (base units, counters end in `_total`); the registry
// checks them and throws ValueError naming the metric. Handles stay valid for the registry's
// life; setting a value is lock-free, so hot paths may keep a handle and update it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace rcuda::telemetry {

// Label name/value pairs in the order they are printed.
using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { Gauge, Counter };

class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Counter {
 public:
  void inc(double delta = 1.0);  // ValueError for a negative delta
  // For counters that mirror a monotonic count kept elsewhere (an allocator's statistics).
  void set_total(double total) { value_.store(total, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// One metric family as exposition needs it: name, help, type, unit, and labelled values.
struct FamilySnapshot {
  std::string name;  // as registered (a counter's name ends in _total)
  std::string help;
  std::string unit;  // "" or the name's unit suffix ("bytes", "celsius", ...)
  MetricType type = MetricType::Gauge;
  std::vector<std::pair<Labels, double>> samples;
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Returns the series of `name` with exactly these labels, creating family and series as
  // needed. ValueError when the name or a label name is invalid, when `name` is already
  // registered with another type, help or unit, or when a unit is not the name's suffix.
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {},
               const std::string& unit = "");
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {},
                   const std::string& unit = "");
  // Drops every series of a family (for example GPUs that disappeared); the family stays.
  void clear(const std::string& name);

  // Collectors run, in registration order, at the start of each snapshot(): they refresh
  // values read from elsewhere (samplers, allocators). They must not call snapshot().
  void add_collector(std::function<void(Registry&)> collector);

  // Runs the collectors, then copies every family in registration order.
  std::vector<FamilySnapshot> snapshot();

 private:
  struct Family {
    FamilySnapshot meta;  // samples unused here
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::vector<Labels> order;  // series in creation order
  };
  Family& family(const std::string& name, const std::string& help, const std::string& unit,
                 MetricType type, const Labels& labels);

  std::mutex mutex_;
  std::vector<std::unique_ptr<Family>> families_;
  std::map<std::string, Family*> by_name_;
  std::mutex collectors_mutex_;
  std::vector<std::function<void(Registry&)>> collectors_;
};

// Content types for the HTTP response of each format.
extern const char* const kPrometheusContentType;  // text/plain; version=0.0.4; charset=utf-8
extern const char* const
    kOpenMetricsContentType;  // application/openmetrics-text; version=1.0.0; ...

// Prometheus text exposition format 0.0.4.
std::string prometheus_text(const std::vector<FamilySnapshot>& families);
std::string prometheus_text(Registry& registry);
// OpenMetrics 1.0 text: counter families named without `_total`, `# UNIT` lines, `# EOF`.
std::string openmetrics_text(const std::vector<FamilySnapshot>& families);
std::string openmetrics_text(Registry& registry);
// True when an HTTP Accept header asks for OpenMetrics.
bool wants_openmetrics(const std::string& accept_header);

}  // namespace rcuda::telemetry
