// GPU state from NVML, loaded at run time with dlopen so that rcuda runs (and says why there
// is nothing to show) on machines without the NVIDIA driver. The library is
// $RCUDA_NVML_LIBRARY when set (the tests point it at a fake), else libnvidia-ml.so.1.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rcuda::telemetry {

// One reading of one GPU. A field NVML does not support on this GPU (power on some boards,
// utilisation under MIG) is empty.
struct GpuSample {
  int64_t timestamp_ms = 0;  // Unix time, milliseconds
  int index = 0;             // NVML index (not affected by CUDA_VISIBLE_DEVICES)
  std::string uuid;
  std::optional<double> temperature_celsius;
  std::optional<double> power_watts;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> gpu_utilization_ratio;     // 0..1 (NVML's percent / 100)
  std::optional<double> memory_utilization_ratio;  // 0..1
  std::optional<double> sm_clock_hertz;
};

class Nvml {
 public:
  // The library path tried: $RCUDA_NVML_LIBRARY or libnvidia-ml.so.1.
  static std::string library_path();
  // Loads and initialises NVML; nullptr with *why_not set (one sentence) when it cannot.
  static std::unique_ptr<Nvml> open(std::string* why_not);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  int device_count() const { return static_cast<int>(devices_.size()); }
  // Reads every field of GPU `index` now (five NVML calls).
  GpuSample sample(int index) const;
  std::vector<GpuSample> sample_all() const;
  // MIG mode: true/false, empty when NVML does not know (GPUs without MIG, old drivers).
  std::optional<bool> mig_enabled(int index) const;
  // The driver version string NVML reports ("580.159.04"), "" when unavailable.
  std::string driver_version() const;

  // Readings `rcuda stress` takes beside sample() (two more calls, so `rcuda monitor` keeps its
  // five): the memory clock, and why the clocks are held below their maximum now, a mask of
  // kClockEvent* bits (NVML's clocks-event reasons, called throttle reasons before driver 535).
  // Empty when NVML does not support them on this GPU.
  std::optional<double> memory_clock_hertz(int index) const;
  std::optional<uint64_t> clock_event_reasons(int index) const;
  // NVML's index of the GPU with this UUID ("GPU-..."), -1 when none has it.
  int index_of_uuid(const std::string& uuid) const;

  // Per-function cost of the NVML calls sample() makes, for `rcuda monitor --profile`: what
  // each call costs in wall and CPU time is the driver's business, and differs by an order of
  // magnitude between drivers and boards, so it is measured rather than assumed.
  struct CallCost {
    std::string function;  // NVML's name, e.g. "nvmlDeviceGetPowerUsage"
    int64_t calls = 0;
    double wall_seconds = 0, cpu_seconds = 0;  // totals; CPU time of the calling thread
  };
  void set_profiling(bool on) { profiling_ = on; }
  std::vector<CallCost> call_costs() const;

  struct Api;  // function pointers resolved from the library

 private:
  Nvml() = default;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  std::vector<void*> devices_;      // nvmlDevice_t
  std::vector<std::string> uuids_;  // read once: a GPU's UUID never changes
  bool profiling_ = false;
  mutable std::vector<CallCost> costs_;
};

// NVML's clocks-event reason bits (nvmlClocksEventReasons), the same values as the older
// nvmlClocksThrottleReasons.
inline constexpr uint64_t kClockEventGpuIdle = 0x1;
inline constexpr uint64_t kClockEventApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kClockEventSwPowerCap = 0x4;
inline constexpr uint64_t kClockEventHwSlowdown = 0x8;
inline constexpr uint64_t kClockEventSyncBoost = 0x10;
inline constexpr uint64_t kClockEventSwThermalSlowdown = 0x20;
inline constexpr uint64_t kClockEventHwThermalSlowdown = 0x40;
inline constexpr uint64_t kClockEventHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kClockEventDisplayClockSetting = 0x100;

// The snake_case names of the bits set in `reasons` ("sw_power_cap", "hw_thermal_slowdown", ...),
// lowest bit first; a bit NVML may add later reads "unknown_0x200".
std::vector<std::string> clock_event_names(uint64_t reasons);

// Milliseconds since the Unix epoch, the timestamp of samples.
int64_t unix_time_ms();

}  // namespace rcuda::telemetry
