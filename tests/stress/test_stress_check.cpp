// How `rcuda stress` finds wrong products (apps/cli/stress_check.h): the element-by-element
// comparison with the first product counts exactly the planted wrong elements; the host's
// double-precision reference accepts correct products of every kind (computed by the CPU
// backend: OpenBLAS, the bf16 and fp8 paths, an emulated TF32) and rejects planted errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "rcuda/autograd/api.h"
#include "stress_check.h"
#include "support/reference.h"

namespace rcuda::stress {
namespace {

using test::to_doubles;

std::vector<float> floats(const Tensor& t) {
  const Tensor c = contiguous(to(t, DType::Float32));
  return {c.data<float>(), c.data<float>() + c.numel()};
}

void set_element(const Tensor& t, int64_t row, int64_t column, double value) {
  fill_(t.narrow(0, row, 1).narrow(1, column, 1), value);
}

int64_t mismatches(const Tensor& product, const Tensor& first) {
  return item(count_mismatches(product, first)).to_int();
}

TEST(StressCheck, EveryPlantedWrongElementIsCounted) {
  test::reset_rng();
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor first = to(randn({64, 48}), dtype);
    const Tensor product = clone(first);
    EXPECT_EQ(mismatches(product, first), 0);
    set_element(product, 5, 7, 1e6);
    EXPECT_EQ(mismatches(product, first), 1);
    set_element(product, 63, 47, -1e6);
    set_element(product, 0, 0, std::numeric_limits<double>::infinity());
    EXPECT_EQ(mismatches(product, first), 3);
    // A NaN is wrong even where the first product has one too.
    set_element(product, 1, 1, std::nan(""));
    set_element(first, 1, 1, std::nan(""));
    EXPECT_EQ(mismatches(product, first), 4);
  }
  // The smallest change of a float32: one bit of the mantissa.
  const Tensor first = randn({16, 16});
  const Tensor product = clone(first);
  float* p = product.data<float>() + 37;
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  bits ^= 1u;
  std::memcpy(p, &bits, 4);
  EXPECT_EQ(mismatches(product, first), 1);
  EXPECT_THROW(count_mismatches(product, first.narrow(0, 0, 8)), ValueError);
  EXPECT_THROW(count_mismatches(product, to(first, DType::BFloat16)), ValueError);
}

// Truncates a float32 tensor's mantissa to TF32's 10 bits (the worse of the two roundings a
// GPU may use).
Tensor tf32_truncated(const Tensor& t) {
  const Tensor c = clone(t);
  float* p = c.data<float>();
  for (int64_t i = 0; i < c.numel(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, 4);
    bits &= ~((1u << 13) - 1);
    std::memcpy(p + i, &bits, 4);
  }
  return c;
}

struct Case {
  GemmKind kind;
  Tensor a, b_t, product;
};

// A correct product of each kind from the CPU backend, m x n with inner size k.
std::vector<Case> correct_products(int64_t m, int64_t n, int64_t k) {
  std::vector<Case> cases;
  const Tensor a = randn({m, k}), b_t = randn({n, k});
  cases.push_back({GemmKind::Float32, a, b_t, matmul(a, b_t.t())});
  // TF32: operands rounded inside the product, accumulated exactly, rounded to float32.
  cases.push_back({GemmKind::TF32, a, b_t,
                   to(matmul(to(tf32_truncated(a), DType::Float64),
                             to(tf32_truncated(b_t), DType::Float64).t()),
                      DType::Float32)});
  const Tensor ah = to(a, DType::BFloat16), bh = to(b_t, DType::BFloat16);
  cases.push_back({GemmKind::BFloat16, ah, bh, matmul(ah, bh.t())});
  const Tensor a8 = to(a, DType::Float8E4M3FN), b8 = to(b_t, DType::Float8E4M3FN);
  const Tensor one = ones({1});
  cases.push_back({GemmKind::Float8, a8, b8, scaled_mm(a8, b8.t(), one, one, DType::BFloat16)});
  return cases;
}

TEST(StressCheck, ReferenceAcceptsCorrectProductsOfEveryKind) {
  test::reset_rng();
  const int64_t m = 8, n = 96, k = 512;
  for (const Case& c : correct_products(m, n, k)) {
    SCOPED_TRACE(gemm_name(c.kind));
    const std::vector<float> a = floats(c.a), b_t = floats(c.b_t), got = floats(c.product);
    const ReferenceCheck r =
        check_rows(a.data(), b_t.data(), got.data(), m, k, n, reference_tolerance(c.kind));
    EXPECT_EQ(r.elements, m * n);
    EXPECT_EQ(r.wrong, 0) << "row " << r.first_wrong_row << " column " << r.first_wrong_column
                          << ": got " << r.first_wrong_got << ", expected "
                          << r.first_wrong_expected;
    // Correct products sit inside the tolerance, not at its edge.
    EXPECT_LT(r.worst_ratio, 0.75);
    EXPECT_GT(r.worst_ratio, 0.0);
  }
}

TEST(StressCheck, FloatToleranceRejectsTf32Products) {
  // The float32 phase must be float32: a product with TF32's rounding fails its tolerance.
  test::reset_rng();
  const int64_t m = 4, n = 64, k = 1024;
  const Case tf32 = correct_products(m, n, k)[1];
  const std::vector<float> a = floats(tf32.a), b_t = floats(tf32.b_t), got = floats(tf32.product);
  EXPECT_GT(
      check_rows(a.data(), b_t.data(), got.data(), m, k, n, reference_tolerance(GemmKind::Float32))
          .wrong,
      m * n / 2);
}

TEST(StressCheck, ReferenceFindsPlantedErrors) {
  test::reset_rng();
  const int64_t m = 6, n = 80, k = 4096;
  for (const Case& c : correct_products(m, n, k)) {
    SCOPED_TRACE(gemm_name(c.kind));
    const std::vector<float> a = floats(c.a), b_t = floats(c.b_t);
    std::vector<float> got = floats(c.product);
    // One term of the sum left out (as a unit that skipped a step would), a NaN, an exponent bit.
    double missing = 0;
    for (int64_t i = 0; i < k; ++i)
      if (std::fabs(a[2 * k + i] * b_t[17 * k + i]) > std::fabs(missing))
        missing = a[2 * k + i] * b_t[17 * k + i];
    got[2 * n + 17] -= static_cast<float>(missing);
    got[4 * n + 3] = std::nanf("");
    got[5 * n + 79] += 256;
    const Tolerance t = reference_tolerance(c.kind);
    const ReferenceCheck r = check_rows(a.data(), b_t.data(), got.data(), m, k, n, t);
    EXPECT_EQ(r.wrong, 3);
    EXPECT_EQ(r.first_wrong_row, 2);
    EXPECT_EQ(r.first_wrong_column, 17);
    // The threads split the columns; the counts and the worst ratio are the same.
    const ReferenceCheck p = check_rows_parallel(a.data(), b_t.data(), got.data(), m, k, n, t, 3);
    EXPECT_EQ(p.wrong, 3);
    EXPECT_EQ(p.elements, m * n);
    EXPECT_DOUBLE_EQ(p.worst_ratio, r.worst_ratio);
  }
}

}  // namespace
}  // namespace rcuda::stress
