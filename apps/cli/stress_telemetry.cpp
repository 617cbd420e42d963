// NVML during the stress (stress_telemetry.h).
#include "stress_telemetry.h"

#include <algorithm>

namespace rcuda::stress {

void Stat::add(double v) {
  min = count == 0 ? v : std::min(min, v);
  max = count == 0 ? v : std::max(max, v);
  sum += v;
  ++count;
}

void TelemetrySummary::add(const telemetry::GpuSample& s, std::optional<double> memory_clock,
                           std::optional<uint64_t> reasons) {
  ++samples;
  if (s.temperature_celsius) temperature_celsius.add(*s.temperature_celsius);
  if (s.power_watts) power_watts.add(*s.power_watts);
  if (s.sm_clock_hertz) sm_clock_hertz.add(*s.sm_clock_hertz);
  if (memory_clock) memory_clock_hertz.add(*memory_clock);
  if (reasons) {
    ++clock_event_samples;
    for (const std::string& name : telemetry::clock_event_names(*reasons)) ++clock_events[name];
  }
}

bool is_slowdown(const std::string& reason) {
  return reason == "sw_power_cap" || reason == "hw_slowdown" || reason == "sw_thermal_slowdown" ||
         reason == "hw_thermal_slowdown" || reason == "hw_power_brake_slowdown";
}

StressSampler::StressSampler(std::shared_ptr<const telemetry::Nvml> nvml,
                             std::vector<int> nvml_indices, std::chrono::milliseconds interval)
    : nvml_(std::move(nvml)), indices_(std::move(nvml_indices)), interval_(interval) {
  summaries_.resize(indices_.size());
  for (size_t i = 0; i < indices_.size(); ++i) {
    summaries_[i].nvml_index = indices_[i];
    summaries_[i].available = indices_[i] >= 0;
  }
  thread_ = std::thread([this] {
    auto next = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      sample_once();  // NVML without the lock: stop() is never kept waiting by a slow driver
      lock.lock();
      next += interval_;
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now + interval_;  // fell behind: skip, do not burst
      wake_.wait_until(lock, next, [this] { return stopping_; });
    }
  });
}

StressSampler::~StressSampler() { stop(); }

void StressSampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StressSampler::sample_once() {
  for (size_t i = 0; i < indices_.size(); ++i) {
    const int index = indices_[i];
    if (index < 0) continue;
    const telemetry::GpuSample s = nvml_->sample(index);
    const std::optional<double> memory_clock = nvml_->memory_clock_hertz(index);
    const std::optional<uint64_t> reasons = nvml_->clock_event_reasons(index);
    std::lock_guard<std::mutex> lock(mutex_);
    summaries_[i].add(s, memory_clock, reasons);
  }
}

std::vector<TelemetrySummary> StressSampler::summaries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return summaries_;
}

}  // namespace rcuda::stress
