// The phases of `rcuda stress` (apps/cli/stress_run.h) on the CPU backend, where every machine
// can run them: products of each kind with their checks, a planted wrong element counted once,
// early stops, device copies; and the NVML sampler over the fake library.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "rcuda/autograd/api.h"
#include "stress_run.h"
#include "support/reference.h"

namespace rcuda::stress {
namespace {

const Device kCpu(DeviceType::CPU);

Plan small_plan() {
  Plan p = plan_for_level(1);
  p.gemm_seconds = 0.25;
  p.device_copy_seconds = 0.2;
  p.matrix_size = 64;
  p.reference_sets = 2;
  p.reference_rows = 3;
  p.memory_fraction = 1;
  return p;
}

// Free memory that holds exactly `sets` float32 operand sets of 64 x 64 (stress_plan.h's sums).
uint64_t free_for_sets(int64_t sets) {
  return kFixedReserveBytes + 64 * 64 * 5 + static_cast<uint64_t>(sets) * 64 * 64 * 16;
}

TEST(StressPhasesOnCpu, ProductsOfEveryKindAreCheckedAndRight) {
  test::reset_rng();
  for (GemmKind kind : {GemmKind::Float32, GemmKind::BFloat16, GemmKind::Float8}) {
    SCOPED_TRACE(gemm_name(kind));
    const GemmResult r = run_gemm_phase(kCpu, kind, small_plan(), free_for_sets(4), {});
    EXPECT_EQ(r.skipped, "");
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.n, 64);
    // float32's 4 sets; bf16 (8 bytes an element and set) and fp8 (6) take less each
    EXPECT_EQ(r.sets, kind == GemmKind::Float32 ? 4 : kind == GemmKind::BFloat16 ? 8 : 10);
    EXPECT_GE(r.products, r.sets);
    EXPECT_EQ(r.compared_elements, r.products * 64 * 64);
    EXPECT_EQ(r.wrong_elements, 0);
    EXPECT_EQ(r.reference_sets, 2);
    EXPECT_EQ(r.reference_rows, 3);
    EXPECT_EQ(r.reference.elements, 2 * 3 * 64);
    EXPECT_EQ(r.reference.wrong, 0);
    EXPECT_GT(r.reference.worst_ratio, 0);
    EXPECT_LT(r.reference.worst_ratio, 1);
    EXPECT_GT(r.seconds, 0);
    EXPECT_NEAR(r.tflops, 2.0 * 64 * 64 * 64 * r.products / r.seconds / 1e12, 1e-9 * r.tflops);
  }
}

TEST(StressPhasesOnCpu, APlantedWrongElementIsCountedOnce) {
  test::reset_rng();
  PhaseContext context;
  int64_t planted = 0;
  context.after_product = [&](const Tensor& product, int64_t round, int64_t set) {
    if (round == 1 && set == 2) {
      fill_(product.narrow(0, 40, 1).narrow(1, 9, 1), 1e4);
      ++planted;
    }
  };
  for (GemmKind kind : {GemmKind::Float32, GemmKind::BFloat16}) {
    SCOPED_TRACE(gemm_name(kind));
    planted = 0;
    const GemmResult r = run_gemm_phase(kCpu, kind, small_plan(), free_for_sets(3), context);
    EXPECT_EQ(planted, 1);
    EXPECT_EQ(r.wrong_elements, 1);
    EXPECT_EQ(r.reference.wrong, 0);  // the first products were right
  }
}

TEST(StressPhasesOnCpu, AtLeastOneRoundAndStopsWhenAsked) {
  Plan p = small_plan();
  p.gemm_seconds = 0;  // the deadline has passed before the first round: it runs anyway
  const GemmResult once = run_gemm_phase(kCpu, GemmKind::Float32, p, free_for_sets(3), {});
  EXPECT_EQ(once.products, 3);

  p.gemm_seconds = 600;  // a stop request ends it long before
  std::atomic<int> polls{0};
  PhaseContext context;
  context.should_stop = [&] { return ++polls > 50; };
  const auto start = std::chrono::steady_clock::now();
  const GemmResult stopped = run_gemm_phase(kCpu, GemmKind::Float32, p, free_for_sets(3), context);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_LT(stopped.products, 60);
  EXPECT_EQ(stopped.wrong_elements, 0);

  context.should_stop = [] { return true; };  // stopped before anything: skipped, not wrong
  EXPECT_EQ(run_gemm_phase(kCpu, GemmKind::Float32, p, free_for_sets(3), context).skipped,
            "stopped");
}

TEST(StressPhasesOnCpu, TooLittleMemoryIsASkipNotAFailure) {
  const GemmResult r = run_gemm_phase(kCpu, GemmKind::Float32, small_plan(), 1 << 20, {});
  EXPECT_NE(r.skipped.find("not enough free device memory"), std::string::npos) << r.skipped;
  EXPECT_EQ(r.products, 0);
  EXPECT_NE(run_device_copy(kCpu, small_plan(), 1 << 20, {}).skipped, "");
}

TEST(StressPhasesOnCpu, DeviceCopiesAreTimedAndCompared) {
  const CopyResult r = run_device_copy(kCpu, small_plan(), 64ULL << 20, {});
  EXPECT_EQ(r.skipped, "");
  EXPECT_EQ(r.bytes, (static_cast<uint64_t>(0.4 * (64 << 20)) / 4) * 4);
  EXPECT_GT(r.copies, 0);
  EXPECT_GT(r.gbps, 0);
  EXPECT_NEAR(r.gbps, 2.0 * r.bytes * r.copies / r.seconds / 1e9, 1e-9 * r.gbps);
  EXPECT_GT(r.compared_elements, 0);
  EXPECT_EQ(r.wrong_elements, 0);
}

TEST(StressPhasesOnCpu, SamplerSummarisesTheFakeNvml) {
  struct FakeNvml {  // the variables are unset however the test ends
    FakeNvml() {
      setenv("RCUDA_NVML_LIBRARY", RCUDA_FAKE_NVML_PATH, 1);
      setenv("FAKE_NVML_CLOCK_EVENTS", "4", 1);  // sw_power_cap
    }
    ~FakeNvml() {
      unsetenv("FAKE_NVML_CLOCK_EVENTS");
      unsetenv("RCUDA_NVML_LIBRARY");
    }
  } fake;
  std::string why;
  std::shared_ptr<const telemetry::Nvml> nvml = telemetry::Nvml::open(&why);
  ASSERT_TRUE(nvml) << why;
  StressSampler sampler(nvml, {1, -1}, std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  sampler.stop();
  const std::vector<TelemetrySummary> s = sampler.summaries();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].available);
  EXPECT_GE(s[0].samples, 3);
  EXPECT_LE(s[0].samples, 10);
  EXPECT_EQ(s[0].temperature_celsius.min, 41);  // the fake's GPU 1 reads 40 + 1
  EXPECT_EQ(s[0].temperature_celsius.max, 41);
  EXPECT_DOUBLE_EQ(s[0].power_watts.mean(), 101);
  EXPECT_DOUBLE_EQ(s[0].memory_clock_hertz.max, 2620e6);
  EXPECT_EQ(s[0].clock_event_samples, s[0].samples);
  EXPECT_EQ(s[0].clock_events.at("sw_power_cap"), s[0].samples);
  EXPECT_FALSE(s[1].available);
  EXPECT_EQ(s[1].samples, 0);
}

}  // namespace
}  // namespace rcuda::stress
