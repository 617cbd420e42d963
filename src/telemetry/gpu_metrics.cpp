// GPU samples, build information and allocator statistics as registry metrics, and the
// monitor's CSV / JSON Lines rows. Metric names are listed in docs/cli.md.
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "rcuda/backend/cuda.h"
#include "rcuda/telemetry/sampler.h"

#ifndef RCUDA_VERSION_STRING
#define RCUDA_VERSION_STRING "unknown"
#endif

namespace rcuda::telemetry {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string version_string(int v) {  // 13000 -> "13.0"
  return v == 0 ? "" : std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

void export_gpu_samples(Registry& r, const std::vector<GpuSample>& samples) {
  struct Field {
    const char* name;
    const char* help;
    const char* unit;
  };
  static const Field fields[] = {
      {"rcuda_gpu_temperature_celsius", "GPU core temperature.", "celsius"},
      {"rcuda_gpu_power_watts", "GPU board power draw.", "watts"},
      {"rcuda_gpu_memory_used_bytes", "GPU memory in use (all processes).", "bytes"},
      {"rcuda_gpu_memory_total_bytes", "GPU memory installed.", "bytes"},
      {"rcuda_gpu_utilization_ratio", "Fraction of the last sample period a kernel ran.", "ratio"},
      {"rcuda_gpu_memory_utilization_ratio",
       "Fraction of the last sample period device memory was read or written.", "ratio"},
      {"rcuda_gpu_sm_clock_hertz", "Streaming multiprocessor clock.", "hertz"},
  };
  for (const Field& f : fields) r.clear(f.name);
  for (const GpuSample& s : samples) {
    const Labels labels = {{"gpu", std::to_string(s.index)}, {"uuid", s.uuid}};
    const std::optional<double> values[] = {
        s.temperature_celsius,
        s.power_watts,
        s.memory_used_bytes ? std::optional<double>(double(*s.memory_used_bytes)) : std::nullopt,
        s.memory_total_bytes ? std::optional<double>(double(*s.memory_total_bytes)) : std::nullopt,
        s.gpu_utilization_ratio,
        s.memory_utilization_ratio,
        s.sm_clock_hertz,
    };
    for (size_t i = 0; i < std::size(fields); ++i)
      if (values[i])
        r.gauge(fields[i].name, fields[i].help, labels, fields[i].unit).set(*values[i]);
  }
}

void export_build_info(Registry& r) {
  r.gauge("rcuda_build_info", "rcuda build: version and the CUDA runtime it was built with.",
          {{"version", RCUDA_VERSION_STRING},
           {"cuda_built", cuda::is_built() ? "true" : "false"},
           {"cuda_runtime", version_string(cuda::runtime_version())}})
      .set(1);
}

void export_allocator_stats(Registry& r) {
  const int n = cuda::device_count();
  for (int d = 0; d < n; ++d) {
    const MemoryStats s = cuda::memory_stats(d);
    const Labels gpu = {{"gpu", std::to_string(d)}};
    r.gauge("rcuda_cuda_memory_allocated_bytes", "Bytes held by live tensors of this process.", gpu,
            "bytes")
        .set(double(s.allocated_bytes));
    r.gauge("rcuda_cuda_memory_peak_allocated_bytes",
            "Peak of rcuda_cuda_memory_allocated_bytes since start or the last reset.", gpu,
            "bytes")
        .set(double(s.peak_allocated_bytes));
    r.gauge("rcuda_cuda_memory_reserved_bytes",
            "Bytes this process's memory pool holds from the driver.", gpu, "bytes")
        .set(double(s.reserved_bytes));
    r.gauge("rcuda_cuda_memory_peak_reserved_bytes", "Peak of rcuda_cuda_memory_reserved_bytes.",
            gpu, "bytes")
        .set(double(s.peak_reserved_bytes));
    r.counter("rcuda_cuda_alloc_total", "Device allocations that succeeded.", gpu)
        .set_total(double(s.allocation_count));
    r.counter("rcuda_cuda_free_total", "Device allocations freed.", gpu)
        .set_total(double(s.free_count));
    r.counter("rcuda_cuda_oom_total", "Device allocations that failed for good.", gpu)
        .set_total(double(s.oom_count));
    r.counter("rcuda_cuda_alloc_retry_total",
              "Device allocations that succeeded only after OOM hooks and a pool trim.", gpu)
        .set_total(double(s.retry_count));
  }
}

std::string iso8601_utc(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000));
  return buf;
}

std::string csv_header() {
  return "timestamp,gpu,uuid,temperature_celsius,power_watts,memory_used_bytes,"
         "memory_total_bytes,gpu_utilization_ratio,memory_utilization_ratio,sm_clock_hertz";
}

namespace {
template <typename T>
std::string field(const std::optional<T>& v, const char* missing) {
  if (!v) return missing;
  if constexpr (std::is_integral_v<T>)
    return std::to_string(*v);
  else
    return number(*v);
}
std::string json_escape(const std::string& in) {
  std::string out;
  for (char c : in) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}
}  // namespace

std::string csv_row(const GpuSample& s) {
  // UUIDs are [A-Za-z0-9-] so no CSV quoting is needed.
  return iso8601_utc(s.timestamp_ms) + "," + std::to_string(s.index) + "," + s.uuid + "," +
         field(s.temperature_celsius, "") + "," + field(s.power_watts, "") + "," +
         field(s.memory_used_bytes, "") + "," + field(s.memory_total_bytes, "") + "," +
         field(s.gpu_utilization_ratio, "") + "," + field(s.memory_utilization_ratio, "") + "," +
         field(s.sm_clock_hertz, "");
}

std::string json_line(const GpuSample& s) {
  return "{\"timestamp\":\"" + iso8601_utc(s.timestamp_ms) +
         "\",\"gpu\":" + std::to_string(s.index) + ",\"uuid\":\"" + json_escape(s.uuid) +
         "\",\"temperature_celsius\":" + field(s.temperature_celsius, "null") +
         ",\"power_watts\":" + field(s.power_watts, "null") +
         ",\"memory_used_bytes\":" + field(s.memory_used_bytes, "null") +
         ",\"memory_total_bytes\":" + field(s.memory_total_bytes, "null") +
         ",\"gpu_utilization_ratio\":" + field(s.gpu_utilization_ratio, "null") +
         ",\"memory_utilization_ratio\":" + field(s.memory_utilization_ratio, "null") +
         ",\"sm_clock_hertz\":" + field(s.sm_clock_hertz, "null") + "}";
}

}  // namespace rcuda::telemetry
