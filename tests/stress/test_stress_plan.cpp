// `rcuda stress`'s levels and the sizing of operand sets from free memory (apps/cli/stress_plan.h),
// against the arithmetic written out by hand.
#include <gtest/gtest.h>

#include "rcuda/core/error.h"
#include "stress_plan.h"

namespace rcuda::stress {
namespace {

constexpr uint64_t kMiB = 1ULL << 20, kGiB = 1ULL << 30;

TEST(StressPlan, LevelsGrowAndLevelOneStaysUnderAMinute) {
  const Plan one = plan_for_level(1), two = plan_for_level(2), three = plan_for_level(3);
  EXPECT_LT(planned_seconds(one, 4, true), 50);
  EXPECT_GT(planned_seconds(two, 4, true), 4 * planned_seconds(one, 4, true));
  EXPECT_GT(planned_seconds(three, 4, true), 4 * planned_seconds(two, 4, true));
  EXPECT_GT(three.matrix_size, two.matrix_size);
  EXPECT_GE(two.reference_sets * two.reference_rows, one.reference_sets * one.reference_rows);
  EXPECT_THROW(plan_for_level(0), ValueError);
  EXPECT_THROW(plan_for_level(7), ValueError);
}

TEST(StressPlan, SecondsScaleEveryPhaseAlike) {
  const Plan p = plan_for_level(1);
  // 4 x 8 + 3 + 4 = 39 s; 3 s kinds (no fp8) without host copies: 3 x 8 + 3 = 27 s
  EXPECT_DOUBLE_EQ(planned_seconds(p, 4, true), 39);
  EXPECT_DOUBLE_EQ(planned_seconds(p, 3, false), 27);
  const Plan s = scaled_to(p, 3.9, 4, true);
  EXPECT_NEAR(planned_seconds(s, 4, true), 3.9, 1e-12);
  EXPECT_NEAR(s.gemm_seconds, 0.8, 1e-12);
  EXPECT_NEAR(s.device_copy_seconds, 0.3, 1e-12);
  EXPECT_NEAR(s.host_copy_seconds, 0.4, 1e-12);
  EXPECT_EQ(s.matrix_size, p.matrix_size);
  EXPECT_THROW(scaled_to(p, 0, 4, true), ValueError);
  EXPECT_THROW(scaled_to(p, -1, 4, true), ValueError);
}

TEST(StressPlan, OperandSetsFillTheFreeMemory) {
  // float32, n = 8192: a set is 4 matrices of 256 MiB; the reserve a product in flight (256 MiB)
  // + its mask (64 MiB) and 256 MiB; or the float32 staging of a cast (256 MiB), the larger.
  const uint64_t matrix = 8192ULL * 8192 * 4;
  const OperandSizing s = size_operand_sets(80 * kGiB, 0.9, 8192, DType::Float32, DType::Float32);
  const uint64_t fixed = 8192ULL * 8192 * 5 + 256 * kMiB;
  EXPECT_EQ(s.n, 8192);
  EXPECT_EQ(s.bytes_per_set, 4 * matrix);
  EXPECT_EQ(s.sets, static_cast<int64_t>((0.9 * 80 * kGiB - fixed) / (4 * matrix)));
  EXPECT_EQ(s.bytes_total, fixed + s.bytes_per_set * s.sets);
  EXPECT_LE(static_cast<double>(s.bytes_total), 0.9 * 80 * kGiB);
  EXPECT_GT(static_cast<double>(s.bytes_total + s.bytes_per_set), 0.9 * 80 * kGiB);

  // fp8 operands (1 byte) into bfloat16 (2 bytes): 6 bytes per element and set.
  const OperandSizing f =
      size_operand_sets(80 * kGiB, 0.9, 8192, DType::Float8E4M3FN, DType::BFloat16);
  EXPECT_EQ(f.bytes_per_set, 8192ULL * 8192 * 6);
  EXPECT_GT(f.sets, 2 * s.sets);
}

TEST(StressPlan, SmallMemoryHalvesTheMatrixThenGivesUp) {
  // 1 GiB at 0.9 cannot hold one float32 set of 8192 (1 GiB + reserve): 4096 fits.
  const OperandSizing s = size_operand_sets(kGiB, 0.9, 8192, DType::Float32, DType::Float32);
  EXPECT_EQ(s.n, 4096);
  EXPECT_GE(s.sets, 1);
  EXPECT_LE(s.bytes_total, static_cast<uint64_t>(0.9 * kGiB));
  // Below the reserve nothing fits.
  EXPECT_EQ(size_operand_sets(100 * kMiB, 0.9, 8192, DType::Float32, DType::Float32).n, 0);
  EXPECT_EQ(size_operand_sets(0, 0.9, 8192, DType::Float32, DType::Float32).sets, 0);
  // A side below 256 is tried as it is (the CPU tests' small products).
  const OperandSizing tiny = size_operand_sets(kGiB, 0.5, 64, DType::Float32, DType::Float32);
  EXPECT_EQ(tiny.n, 64);
  EXPECT_EQ(tiny.sets, 512);  // max_sets
  EXPECT_EQ(size_operand_sets(kGiB, 0.5, 64, DType::Float32, DType::Float32, 3).sets, 3);
}

TEST(StressPlan, KindsNameTheirDtypesAndHardware) {
  EXPECT_STREQ(gemm_name(GemmKind::Float8), "float8_e4m3fn");
  EXPECT_EQ(input_dtype(GemmKind::TF32), DType::Float32);
  EXPECT_EQ(output_dtype(GemmKind::Float8), DType::BFloat16);
  EXPECT_TRUE(gemm_supported(GemmKind::Float32, 7, 0));
  EXPECT_FALSE(gemm_supported(GemmKind::BFloat16, 7, 5));
  EXPECT_TRUE(gemm_supported(GemmKind::TF32, 8, 0));
  EXPECT_FALSE(gemm_supported(GemmKind::Float8, 8, 6));
  EXPECT_TRUE(gemm_supported(GemmKind::Float8, 8, 9));
  EXPECT_TRUE(gemm_supported(GemmKind::Float8, 9, 0));
  EXPECT_EQ(gemm_unsupported_reason(GemmKind::Float8, 8, 0),
            "float8_e4m3fn needs compute capability 8.9 or newer; this GPU has 8.0");
}

}  // namespace
}  // namespace rcuda::stress
