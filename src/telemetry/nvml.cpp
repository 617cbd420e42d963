// NVML through dlopen (rcuda/telemetry/nvml.h). The few NVML types used are declared here
// with NVML's layout, so no nvml.h is needed to build and no driver to run.
#include "rcuda/telemetry/nvml.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>
#include <type_traits>

namespace rcuda::telemetry {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr unsigned kTemperatureGpu = 0;   // NVML_TEMPERATURE_GPU
constexpr unsigned kClockSm = 1;          // NVML_CLOCK_SM
constexpr unsigned kClockMemory = 2;      // NVML_CLOCK_MEM
constexpr unsigned kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct NvmlUtilization {  // nvmlUtilization_t
  unsigned int gpu, memory;
};

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  nvmlReturn_t (*count)(unsigned*);
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*temperature)(nvmlDevice_t, unsigned, unsigned*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*memory)(nvmlDevice_t, NvmlMemory*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, NvmlUtilization*);
  nvmlReturn_t (*clock)(nvmlDevice_t, unsigned, unsigned*);
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*);  // optional
  nvmlReturn_t (*driver_version)(char*, unsigned);               // optional
  // nvmlDeviceGetCurrentClocksEventReasons, else the older name of the same call,
  // nvmlDeviceGetCurrentClocksThrottleReasons (optional).
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*);
  const char* (*error_string)(nvmlReturn_t);
};

namespace {

// The calls sample() makes, in CallCost order.
enum Call { kTemperature, kPower, kMemory, kUtilization, kClock, kCallCount };
constexpr const char* kCallNames[kCallCount] = {
    "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetClockInfo"};

double clock_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

}  // namespace

int64_t unix_time_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Nvml::library_path() {
  const char* env = std::getenv("RCUDA_NVML_LIBRARY");
  return env && *env ? env : "libnvidia-ml.so.1";
}

std::unique_ptr<Nvml> Nvml::open(std::string* why_not) {
  const std::string path = library_path();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    *why_not = "NVML not available: " + path + " could not be loaded (" + (err ? err : "?") +
               "); is the NVIDIA driver installed?";
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  std::string missing;
  auto need = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
    if (!fn) missing += missing.empty() ? symbol : std::string(", ") + symbol;
  };
  need(api->init, "nvmlInit_v2");
  need(api->shutdown, "nvmlShutdown");
  need(api->count, "nvmlDeviceGetCount_v2");
  need(api->handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  need(api->uuid, "nvmlDeviceGetUUID");
  need(api->temperature, "nvmlDeviceGetTemperature");
  need(api->power, "nvmlDeviceGetPowerUsage");
  need(api->memory, "nvmlDeviceGetMemoryInfo");
  need(api->utilization, "nvmlDeviceGetUtilizationRates");
  need(api->clock, "nvmlDeviceGetClockInfo");
  need(api->error_string, "nvmlErrorString");
  if (!missing.empty()) {
    *why_not = "NVML not usable: " + path + " lacks " + missing;
    dlclose(handle);
    return nullptr;
  }
  api->mig_mode = reinterpret_cast<decltype(api->mig_mode)>(dlsym(handle, "nvmlDeviceGetMigMode"));
  api->driver_version =
      reinterpret_cast<decltype(api->driver_version)>(dlsym(handle, "nvmlSystemGetDriverVersion"));
  for (const char* symbol :
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"})
    if (!api->clock_event_reasons)
      api->clock_event_reasons =
          reinterpret_cast<decltype(api->clock_event_reasons)>(dlsym(handle, symbol));
  if (const nvmlReturn_t rc = api->init(); rc != kSuccess) {
    *why_not = std::string("NVML initialisation failed: ") + api->error_string(rc);
    dlclose(handle);
    return nullptr;
  }
  std::unique_ptr<Nvml> nvml(new Nvml());
  nvml->handle_ = handle;
  unsigned count = 0;
  if (const nvmlReturn_t rc = api->count(&count); rc != kSuccess) {
    *why_not = std::string("NVML could not count GPUs: ") + api->error_string(rc);
    api->shutdown();
    dlclose(handle);
    nvml->handle_ = nullptr;
    return nullptr;
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    // A GPU NVML cannot open (lost, or no permission) keeps its index with a null handle, so
    // indices stay NVML's; its samples are empty.
    if (api->handle_by_index(i, &d) != kSuccess) d = nullptr;
    nvml->devices_.push_back(d);
    char uuid[kUuidBufferSize] = {};
    nvml->uuids_.emplace_back(d && api->uuid(d, uuid, sizeof uuid) == kSuccess ? uuid : "");
  }
  for (const char* name : kCallNames) nvml->costs_.push_back({name});
  nvml->api_ = std::move(api);
  return nvml;
}

Nvml::~Nvml() {
  if (handle_) {
    api_->shutdown();
    dlclose(handle_);
  }
}

GpuSample Nvml::sample(int index) const {
  GpuSample s;
  s.timestamp_ms = unix_time_ms();
  s.index = index;
  nvmlDevice_t d = devices_.at(static_cast<size_t>(index));
  if (!d) return s;
  s.uuid = uuids_[static_cast<size_t>(index)];
  // Runs one NVML call, timing it when profiling; true when it succeeded.
  auto call = [&](Call which, auto&& fn) {
    if (!profiling_) return fn() == kSuccess;
    const double wall = clock_seconds(CLOCK_MONOTONIC),
                 cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    const bool ok = fn() == kSuccess;
    CallCost& c = costs_[which];
    ++c.calls;
    c.wall_seconds += clock_seconds(CLOCK_MONOTONIC) - wall;
    c.cpu_seconds += clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
    return ok;
  };
  unsigned v = 0;
  if (call(kTemperature, [&] { return api_->temperature(d, kTemperatureGpu, &v); }))
    s.temperature_celsius = v;
  if (call(kPower, [&] { return api_->power(d, &v); })) s.power_watts = v / 1000.0;  // mW
  NvmlMemory m{};
  if (call(kMemory, [&] { return api_->memory(d, &m); })) {
    s.memory_used_bytes = m.used;
    s.memory_total_bytes = m.total;
  }
  NvmlUtilization u{};
  if (call(kUtilization, [&] { return api_->utilization(d, &u); })) {
    s.gpu_utilization_ratio = u.gpu / 100.0;
    s.memory_utilization_ratio = u.memory / 100.0;
  }
  if (call(kClock, [&] { return api_->clock(d, kClockSm, &v); }))
    s.sm_clock_hertz = v * 1e6;  // MHz
  return s;
}

std::vector<Nvml::CallCost> Nvml::call_costs() const { return costs_; }

std::vector<GpuSample> Nvml::sample_all() const {
  std::vector<GpuSample> out;
  out.reserve(devices_.size());
  for (int i = 0; i < device_count(); ++i) out.push_back(sample(i));
  return out;
}

std::optional<bool> Nvml::mig_enabled(int index) const {
  nvmlDevice_t d = devices_.at(static_cast<size_t>(index));
  unsigned current = 0, pending = 0;
  if (!d || !api_->mig_mode || api_->mig_mode(d, &current, &pending) != kSuccess) return {};
  return current == 1;  // NVML_DEVICE_MIG_ENABLE
}

std::optional<double> Nvml::memory_clock_hertz(int index) const {
  nvmlDevice_t d = devices_.at(static_cast<size_t>(index));
  unsigned mhz = 0;
  if (!d || api_->clock(d, kClockMemory, &mhz) != kSuccess) return {};
  return mhz * 1e6;
}

std::optional<uint64_t> Nvml::clock_event_reasons(int index) const {
  nvmlDevice_t d = devices_.at(static_cast<size_t>(index));
  unsigned long long reasons = 0;
  if (!d || !api_->clock_event_reasons || api_->clock_event_reasons(d, &reasons) != kSuccess)
    return {};
  return reasons;
}

int Nvml::index_of_uuid(const std::string& uuid) const {
  for (size_t i = 0; i < uuids_.size(); ++i)
    if (!uuid.empty() && uuids_[i] == uuid) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> clock_event_names(uint64_t reasons) {
  static const char* const names[] = {"gpu_idle",
                                      "applications_clocks_setting",
                                      "sw_power_cap",
                                      "hw_slowdown",
                                      "sync_boost",
                                      "sw_thermal_slowdown",
                                      "hw_thermal_slowdown",
                                      "hw_power_brake_slowdown",
                                      "display_clock_setting"};
  std::vector<std::string> out;
  for (unsigned bit = 0; bit < 64; ++bit) {
    if (!(reasons >> bit & 1)) continue;
    if (bit < std::size(names)) {
      out.emplace_back(names[bit]);
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "unknown_0x%llx", 1ULL << bit);
      out.emplace_back(buf);
    }
  }
  return out;
}

std::string Nvml::driver_version() const {
  char buf[96] = {};
  if (!api_->driver_version || api_->driver_version(buf, sizeof buf) != kSuccess) return "";
  return buf;
}

}  // namespace rcuda::telemetry
