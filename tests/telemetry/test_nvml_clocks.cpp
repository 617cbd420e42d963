// The memory clock and the clocks-event (throttle) reasons `rcuda stress` reads beside each
// sample, through the fake NVML of tests/telemetry/fake_nvml.c: the values set by FAKE_NVML_*
// variables come back in base units, reasons as NVML's bits and their names.
#include <gtest/gtest.h>

#include <cstdlib>

#include "rcuda/telemetry/nvml.h"

namespace rcuda::telemetry {
namespace {

class FakeNvmlClocks : public ::testing::Test {
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
  static constexpr const char* kVars[] = {"FAKE_NVML_GPUS", "FAKE_NVML_MEM_CLOCK_MHZ",
                                          "FAKE_NVML_CLOCK_EVENTS", "FAKE_NVML_NO_CLOCK_EVENTS"};
};

TEST_F(FakeNvmlClocks, MemoryClockInHertz) {
  setenv("FAKE_NVML_MEM_CLOCK_MHZ", "1593", 1);
  const auto nvml = open();
  EXPECT_DOUBLE_EQ(*nvml->memory_clock_hertz(0), 1593e6);
  EXPECT_DOUBLE_EQ(*nvml->memory_clock_hertz(1), 1594e6);  // GPU i reports base + i
}

TEST_F(FakeNvmlClocks, ClockEventReasonsAsBitsAndNames) {
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

TEST_F(FakeNvmlClocks, UnsupportedReasonsAreEmpty) {
  setenv("FAKE_NVML_NO_CLOCK_EVENTS", "1", 1);
  EXPECT_FALSE(open()->clock_event_reasons(0).has_value());
}

TEST_F(FakeNvmlClocks, FindsAGpuByUuid) {
  setenv("FAKE_NVML_GPUS", "3", 1);
  const auto nvml = open();
  EXPECT_EQ(nvml->index_of_uuid("GPU-fa4e0000-0000-0000-0000-000000000002"), 2);
  EXPECT_EQ(nvml->index_of_uuid("GPU-00000000-0000-0000-0000-000000000000"), -1);
  EXPECT_EQ(nvml->index_of_uuid(""), -1);
}

}  // namespace
}  // namespace rcuda::telemetry
