// NVML through dlopen, driven by the fake library of tests/telemetry/fake_nvml.c whose
// readings the tests choose with FAKE_NVML_* variables: every value read back must be the one
// set, in base units (watts, bytes, ratio, hertz).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rcuda/telemetry/metrics.h"
#include "rcuda/telemetry/nvml.h"
#include "rcuda/telemetry/sampler.h"

namespace rcuda::telemetry {
namespace {

// Points RCUDA_NVML_LIBRARY at the fake and clears every FAKE_NVML_* variable a test may set.
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("RCUDA_NVML_LIBRARY", RCUDA_FAKE_NVML_PATH, 1);
    for (const char* v : kVars) unsetenv(v);
  }
  void TearDown() override {
    unsetenv("RCUDA_NVML_LIBRARY");
    for (const char* v : kVars) unsetenv(v);
  }
  static std::unique_ptr<Nvml> open() {
    std::string why;
    std::unique_ptr<Nvml> nvml = Nvml::open(&why);
    EXPECT_TRUE(nvml) << why;
    return nvml;
  }
  static constexpr const char* kVars[] = {
      "FAKE_NVML_GPUS",          "FAKE_NVML_TEMPERATURE",  "FAKE_NVML_POWER_MW",
      "FAKE_NVML_MEMORY_TOTAL",  "FAKE_NVML_MEMORY_USED",  "FAKE_NVML_UTIL_GPU",
      "FAKE_NVML_UTIL_MEMORY",   "FAKE_NVML_SM_CLOCK_MHZ", "FAKE_NVML_MIG",
      "FAKE_NVML_NO_POWER",      "FAKE_NVML_INIT_ERROR",   "FAKE_NVML_DELAY_MS",
      "FAKE_NVML_MEM_CLOCK_MHZ", "FAKE_NVML_CLOCK_EVENTS", "FAKE_NVML_NO_CLOCK_EVENTS"};
};

TEST_F(FakeNvml, ReadsEveryFieldInBaseUnits) {
  setenv("FAKE_NVML_GPUS", "3", 1);
  setenv("FAKE_NVML_TEMPERATURE", "61", 1);
  setenv("FAKE_NVML_POWER_MW", "250500", 1);
  setenv("FAKE_NVML_MEMORY_TOTAL", "150000000000", 1);
  setenv("FAKE_NVML_MEMORY_USED", "5000000000", 1);
  setenv("FAKE_NVML_UTIL_GPU", "90", 1);
  setenv("FAKE_NVML_UTIL_MEMORY", "30", 1);
  setenv("FAKE_NVML_SM_CLOCK_MHZ", "1755", 1);
  const auto nvml = open();
  ASSERT_EQ(nvml->device_count(), 3);
  const std::vector<GpuSample> s = nvml->sample_all();
  ASSERT_EQ(s.size(), 3u);
  const GpuSample& g = s[2];  // GPU i reports base + i
  EXPECT_EQ(g.index, 2);
  EXPECT_EQ(g.uuid, "GPU-fa4e0000-0000-0000-0000-000000000002");
  EXPECT_EQ(*g.temperature_celsius, 63);
  EXPECT_DOUBLE_EQ(*g.power_watts, 252.5);
  EXPECT_EQ(*g.memory_total_bytes, 150000000000ULL);
  EXPECT_EQ(*g.memory_used_bytes, 5000000000ULL + 2 * 1048576);
  EXPECT_DOUBLE_EQ(*g.gpu_utilization_ratio, 0.92);
  EXPECT_DOUBLE_EQ(*g.memory_utilization_ratio, 0.32);
  EXPECT_DOUBLE_EQ(*g.sm_clock_hertz, 1757e6);
  EXPECT_NEAR(double(g.timestamp_ms), double(unix_time_ms()), 5000);
  EXPECT_EQ(nvml->driver_version(), "999.99.99");
  EXPECT_EQ(nvml->mig_enabled(0), std::optional<bool>(false));
  setenv("FAKE_NVML_MIG", "1", 1);
  EXPECT_EQ(nvml->mig_enabled(1), std::optional<bool>(true));
}

TEST_F(FakeNvml, ProfilingCountsAndTimesEachCall) {
  setenv("FAKE_NVML_GPUS", "2", 1);
  setenv("FAKE_NVML_DELAY_MS", "2", 1);  // the temperature reading sleeps: wall, not CPU time
  const auto nvml = open();
  nvml->sample_all();  // not profiled
  for (const Nvml::CallCost& c : nvml->call_costs()) EXPECT_EQ(c.calls, 0) << c.function;
  nvml->set_profiling(true);
  nvml->sample_all();
  nvml->sample_all();
  nvml->sample_all();
  const std::vector<Nvml::CallCost> costs = nvml->call_costs();
  ASSERT_EQ(costs.size(), 5u);
  EXPECT_EQ(costs[1].function, "nvmlDeviceGetPowerUsage");
  for (const Nvml::CallCost& c : costs) {
    EXPECT_EQ(c.calls, 6) << c.function;  // 3 rounds x 2 GPUs
    EXPECT_GE(c.wall_seconds, 0) << c.function;
  }
  EXPECT_EQ(costs[0].function, "nvmlDeviceGetTemperature");
  EXPECT_GE(costs[0].wall_seconds, 6 * 0.002);
  EXPECT_LT(costs[0].cpu_seconds, 0.5 * costs[0].wall_seconds);  // sleeping costs no CPU
  // The UUID is read once at open, yet every sample carries it.
  EXPECT_EQ(nvml->sample(1).uuid, "GPU-fa4e0000-0000-0000-0000-000000000001");
}

TEST_F(FakeNvml, UnsupportedFieldsAreEmptyNotZero) {
  setenv("FAKE_NVML_NO_POWER", "1", 1);
  const GpuSample s = open()->sample(0);
  EXPECT_FALSE(s.power_watts.has_value());
  EXPECT_TRUE(s.temperature_celsius.has_value());
  EXPECT_EQ(csv_row(s).find(",40,,"),
            csv_row(s).find(",40,"));  // empty CSV field after temperature
  EXPECT_NE(json_line(s).find("\"power_watts\":null"), std::string::npos);
}

TEST_F(FakeNvml, MissingLibraryAndFailedInitSayWhy) {
  setenv("RCUDA_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  std::string why;
  EXPECT_EQ(Nvml::open(&why), nullptr);
  EXPECT_NE(why.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << why;
  setenv("RCUDA_NVML_LIBRARY", RCUDA_FAKE_NVML_PATH, 1);
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  EXPECT_EQ(Nvml::open(&why), nullptr);
  EXPECT_NE(why.find("Driver Not Loaded"), std::string::npos) << why;
}

TEST_F(FakeNvml, CsvAndJsonRowsCarryTheSample) {
  const GpuSample s = open()->sample(1);
  const std::string row = csv_row(s);
  EXPECT_EQ(csv_header(),
            "timestamp,gpu,uuid,temperature_celsius,power_watts,memory_used_bytes,"
            "memory_total_bytes,gpu_utilization_ratio,memory_utilization_ratio,sm_clock_hertz");
  EXPECT_EQ(row.substr(row.find(',') + 1),
            "1,GPU-fa4e0000-0000-0000-0000-000000000001,41,101,1074790400,85899345920,0.51,0.21,"
            "1981000000");
  EXPECT_NE(json_line(s).find("\"gpu\":1,\"uuid\":\"GPU-fa4e0000-0000-0000-0000-000000000001\","
                              "\"temperature_celsius\":41,\"power_watts\":101,"),
            std::string::npos)
      << json_line(s);
  EXPECT_EQ(iso8601_utc(1764500000123), "2025-11-30T10:53:20.123Z");
}

TEST_F(FakeNvml, ExportedGaugesUseBaseUnitsAndLabels) {
  Registry r;
  export_gpu_samples(r, open()->sample_all());
  const std::string text = prometheus_text(r);
  EXPECT_NE(text.find("rcuda_gpu_power_watts{gpu=\"1\",uuid=\"GPU-fa4e0000-0000-0000-0000-"
                      "000000000001\"} 101\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rcuda_gpu_sm_clock_hertz{gpu=\"0\",uuid=\"GPU-fa4e0000-0000-0000-0000-"
                      "000000000000\"} 1980000000\n"),
            std::string::npos);
  EXPECT_NE(text.find("rcuda_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-fa4e0000-0000-0000-0000-"
                      "000000000000\"} 0.5\n"),
            std::string::npos);
  // A GPU that disappears between samples disappears from the exposition.
  export_gpu_samples(r, {});
  EXPECT_EQ(prometheus_text(r), "");
}

// A scrape must not wait on a slow NVML: latest() returns the previous sample at once.
TEST_F(FakeNvml, SamplerServesTheLatestSampleWithoutWaitingOnNvml) {
  std::shared_ptr<const Nvml> nvml = open();
  setenv("FAKE_NVML_DELAY_MS", "300", 1);  // each GPU reading now takes 300 ms
  {
    NvmlSampler sampler(nvml, std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a slow round is under way
    const auto start = std::chrono::steady_clock::now();
    const std::vector<GpuSample> latest = sampler.latest();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(ms, 50);
    ASSERT_EQ(latest.size(), 2u);
    EXPECT_EQ(*latest[0].temperature_celsius, 40);
  }
  unsetenv("FAKE_NVML_DELAY_MS");
  NvmlSampler fast(nvml, std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(fast.samples_taken(), 3);
}

// The memory clock and the clock-event (throttle) reasons `rcuda stress` reads beside each
// sample: values in base units, reasons as NVML's bits and their names.
TEST_F(FakeNvml, MemoryClockInHertz) {
  setenv("FAKE_NVML_MEM_CLOCK_MHZ", "1593", 1);
  const auto nvml = open();
  EXPECT_DOUBLE_EQ(*nvml->memory_clock_hertz(0), 1593e6);
  EXPECT_DOUBLE_EQ(*nvml->memory_clock_hertz(1), 1594e6);  // GPU i reports base + i
}

TEST_F(FakeNvml, ClockEventReasonsAsBitsAndNames) {
  // sw_power_cap | hw_thermal_slowdown | a bit NVML does not define today
  setenv("FAKE_NVML_CLOCK_EVENTS", std::to_string(0x4 | 0x40 | 0x2000).c_str(), 1);
  const auto nvml = open();
  const std::optional<uint64_t> reasons = nvml->clock_event_reasons(1);
  ASSERT_TRUE(reasons.has_value());
  EXPECT_EQ(*reasons, kClockEventSwPowerCap | kClockEventHwThermalSlowdown | 0x2000u);
  EXPECT_EQ(clock_event_names(*reasons),
            (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown", "unknown_0x2000"}));
  EXPECT_EQ(clock_event_names(0), std::vector<std::string>{});
  EXPECT_EQ(clock_event_names(kClockEventGpuIdle | kClockEventHwSlowdown |
                              kClockEventSwThermalSlowdown | kClockEventHwPowerBrakeSlowdown),
            (std::vector<std::string>{"gpu_idle", "hw_slowdown", "sw_thermal_slowdown",
                                      "hw_power_brake_slowdown"}));
}

TEST_F(FakeNvml, UnsupportedReasonsAreEmpty) {
  setenv("FAKE_NVML_NO_CLOCK_EVENTS", "1", 1);
  EXPECT_FALSE(open()->clock_event_reasons(0).has_value());
}

TEST_F(FakeNvml, FindsAGpuByUuid) {
  setenv("FAKE_NVML_GPUS", "3", 1);
  const auto nvml = open();
  EXPECT_EQ(nvml->index_of_uuid("GPU-fa4e0000-0000-0000-0000-000000000002"), 2);
  EXPECT_EQ(nvml->index_of_uuid("GPU-00000000-0000-0000-0000-000000000000"), -1);
  EXPECT_EQ(nvml->index_of_uuid(""), -1);
}

}  // namespace
}  // namespace rcuda::telemetry
