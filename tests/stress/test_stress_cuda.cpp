// `rcuda stress` on a GPU (skipped without one, as tests/cuda): a short run of every phase with
// no wrong element and positive figures, a planted wrong element counted on the device, TF32
// left as it was, a baseline written, read back and compared. The suite is not named Cuda* so
// that the sanitizer runs of scripts/gpu-check.sh, sized for small kernels, leave it out.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "rcuda/autograd/api.h"
#include "stress_run.h"
#include "support/devices.h"

namespace rcuda::stress {
namespace {

// Level 1's phases on 4096 x 4096 products over a quarter of the free memory, scaled to
// `seconds` in all.
RunOptions short_run(double seconds,
                     std::vector<GemmKind> kinds = {std::begin(kGemmKinds), std::end(kGemmKinds)}) {
  RunOptions o;
  Plan p = plan_for_level(1);
  p.matrix_size = 4096;
  p.memory_fraction = 0.25;
  p.device_copy_bytes = 256ULL << 20;
  p.host_copy_bytes = 128ULL << 20;
  o.plan = scaled_to(p, seconds, static_cast<int>(kinds.size()), true);
  o.devices = {0};
  o.kinds = std::move(kinds);
  return o;
}

TEST(StressOnCuda, ThreeSecondsWithoutWrongElements) {
  RCUDA_REQUIRE_CUDA();
  const bool tf32_before = cuda::allow_tf32();
  const Report r = run_stress(short_run(3));
  EXPECT_EQ(cuda::allow_tf32(), tf32_before);
  ASSERT_EQ(r.gpus.size(), 1u);
  const GpuReport& g = r.gpus[0];
  EXPECT_EQ(g.errors(), std::vector<std::string>{});
  EXPECT_EQ(g.wrong_elements(), 0);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(g.uuid, cuda::properties(0).uuid);
  int ran = 0;
  for (const GemmResult& m : g.gemm) {
    SCOPED_TRACE(gemm_name(m.kind));
    if (!gemm_supported(m.kind, g.major, g.minor)) {
      EXPECT_NE(m.skipped, "");
      continue;
    }
    ++ran;
    EXPECT_EQ(m.skipped, "");
    EXPECT_EQ(m.n, 4096);
    EXPECT_GE(m.sets, 1);
    EXPECT_GE(m.products, m.sets);
    EXPECT_GT(m.tflops, 1);
    EXPECT_EQ(m.compared_elements, m.products * 4096 * 4096);
    EXPECT_GE(m.reference_sets, 1);
    EXPECT_GT(m.reference.elements, 0);
    EXPECT_LT(m.reference.worst_ratio, 1);
  }
  EXPECT_GE(ran, 1);
  for (const CopyResult* c : {&g.device_copy, &g.host_to_device, &g.device_to_host}) {
    EXPECT_EQ(c->skipped, "");
    EXPECT_GT(c->gbps, 1);
  }
  EXPECT_GT(g.device_copy.compared_elements, 0);
  EXPECT_GT(g.device_to_host.compared_elements, 0);
  EXPECT_EQ(static_cast<int>(figures_of(g).size()), ran + 3);
  if (g.telemetry.available) {
    EXPECT_GE(g.telemetry.samples, 5);
    EXPECT_GT(g.telemetry.temperature_celsius.max, 0);
    EXPECT_GT(g.telemetry.sm_clock_hertz.max, 0);
  } else {
    std::fprintf(stderr, "NVML: %s\n", g.telemetry.unavailable_reason.c_str());
  }
  EXPECT_GT(r.seconds, 2);
}

TEST(StressOnCuda, APlantedWrongElementIsCountedOnTheDevice) {
  RCUDA_REQUIRE_CUDA();
  const cuda::DeviceProperties p = cuda::properties(0);
  Plan plan = plan_for_level(1);
  plan.gemm_seconds = 0.5;
  plan.matrix_size = 1024;
  PhaseContext context;
  context.after_product = [](const Tensor& product, int64_t round, int64_t set) {
    if (round == 1 && set == 1) fill_(product.narrow(0, 1000, 1).narrow(1, 3, 1), 1e4);
  };
  for (GemmKind kind : {GemmKind::Float32, GemmKind::BFloat16, GemmKind::Float8}) {
    if (!gemm_supported(kind, p.major, p.minor)) continue;
    SCOPED_TRACE(gemm_name(kind));
    const GemmResult r =
        run_gemm_phase(Device(DeviceType::CUDA, 0), kind, plan, 1ULL << 30, context);
    EXPECT_GE(r.sets, 2);
    EXPECT_GT(r.products, 2 * r.sets);
    EXPECT_EQ(r.wrong_elements, 1);
    EXPECT_EQ(r.reference.wrong, 0);
  }
}

TEST(StressOnCuda, BaselineRoundTrip) {
  RCUDA_REQUIRE_CUDA();
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("rcuda-stress-cuda-baseline-" + std::to_string(::getpid()) + ".json"))
                               .string();
  const std::vector<GemmKind> kinds = {GemmKind::Float32};
  const Report first = run_stress(short_run(1.5, kinds));
  ASSERT_EQ(first.gpus.size(), 1u);
  const GpuReport& g = first.gpus[0];
  BaselineEntry e;
  e.uuid = g.uuid;
  e.name = g.name;
  e.level = 1;
  for (const Figure& f : figures_of(g)) e.figures[f.name] = f.value;
  ASSERT_EQ(e.figures.size(), 4u);  // float32 products, three kinds of copies
  save_baseline(file, e);
  const std::optional<BaselineEntry> back = find_baseline(read_baseline_file(file), g.uuid, 1);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->figures, e.figures);
  std::vector<Figure> same = figures_of(g);
  EXPECT_FALSE(compare_with_baseline(same, *back, 0.9));
  // A second run of the same GPU is within a factor of three of the first.
  const Report second = run_stress(short_run(1.5, kinds));
  std::vector<Figure> again = figures_of(second.gpus[0]);
  EXPECT_FALSE(compare_with_baseline(again, *back, 0.3));
  for (const Figure& f : again) {
    ASSERT_TRUE(f.ratio.has_value()) << f.name;
    std::fprintf(stderr, "%s: %.2f %s, %.3f of the first run\n", f.name.c_str(), f.value,
                 f.unit.c_str(), *f.ratio);
  }
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace rcuda::stress
