// What NVML said during `rcuda stress`: a background thread samples each stressed GPU every
// 200 ms (temperature, power, SM and memory clocks, clocks-event reasons) and keeps min, mean
// and max of each, and how many samples saw each reason.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rcuda/telemetry/nvml.h"

namespace rcuda::stress {

struct Stat {
  int64_t count = 0;
  double min = 0, max = 0, sum = 0;
  void add(double v);
  double mean() const { return count > 0 ? sum / static_cast<double>(count) : 0.0; }
};

struct TelemetrySummary {
  bool available = false;          // NVML answered for this GPU
  std::string unavailable_reason;  // when not: NVML missing, or no NVML GPU with this UUID
  int nvml_index = -1;
  int64_t samples = 0;
  Stat temperature_celsius, power_watts, sm_clock_hertz, memory_clock_hertz;
  int64_t clock_event_samples = 0;              // samples in which the reasons could be read
  std::map<std::string, int64_t> clock_events;  // reason name -> samples it was active in
  void add(const telemetry::GpuSample& sample, std::optional<double> memory_clock_hertz,
           std::optional<uint64_t> clock_event_reasons);
};

// The reasons that mean the GPU ran slower than its clocks allow under load: power capping,
// thermal slowdown, hardware slowdown (power brake included), as DCGM's diagnostics flag them.
// gpu_idle, sync_boost and the applications/display clock settings are not.
bool is_slowdown(const std::string& reason);

// Samples `nvml_indices` every `interval` on its own thread from construction to stop().
class StressSampler {
 public:
  StressSampler(std::shared_ptr<const telemetry::Nvml> nvml, std::vector<int> nvml_indices,
                std::chrono::milliseconds interval);
  ~StressSampler();  // stops
  StressSampler(const StressSampler&) = delete;
  StressSampler& operator=(const StressSampler&) = delete;

  void stop();
  // One summary per index given, in that order (call after stop() for the whole run).
  std::vector<TelemetrySummary> summaries() const;

 private:
  void sample_once();
  std::shared_ptr<const telemetry::Nvml> nvml_;
  std::vector<int> indices_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<TelemetrySummary> summaries_;
  std::thread thread_;
};

}  // namespace rcuda::stress
