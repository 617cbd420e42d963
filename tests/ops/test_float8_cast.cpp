// Tests for float8_cast and float8_update_scales (rcuda/ops/float8.h) on the CPU backend, the
// reference its CUDA kernels are compared with (tests/cuda/test_cuda_fp8_linear.cpp). The
// expected bits come from a table of every float8 value decoded here by formula and a search for
// the nearest (ties to the even code), so neither rcuda's conversions nor its kernels are trusted.
#include <cmath>
#include <limits>
#include <vector>

#include "rcuda/ops/float8.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

const DType kE4M3 = DType::Float8E4M3FN;
const DType kE5M2 = DType::Float8E5M2;

// The value of code `bits` (sign bit 7), NaN for the NaN codes; by the OCP FP8 definitions.
double decode(uint8_t bits, DType format) {
  const int mantissa_bits = format == kE4M3 ? 3 : 2, bias = format == kE4M3 ? 7 : 15;
  const int e = (bits & 0x7F) >> mantissa_bits, m = bits & ((1 << mantissa_bits) - 1);
  const double sign = (bits & 0x80) ? -1 : 1;
  if (format == kE4M3 && e == 15 && m == 7) return std::nan("");
  if (format == kE5M2 && e == 31) return m == 0 ? sign * INFINITY : std::nan("");
  const double frac = static_cast<double>(m) / (1 << mantissa_bits);
  return sign * (e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1 + frac, e - bias));
}

double format_max(DType format) { return format == kE4M3 ? 448 : 57344; }

// The finite value a saturating round-to-nearest-even cast of v gives.
double expected_cast(float v, DType format) {
  if (std::isnan(v)) return std::nan("");
  const double clamped =
      std::fmin(std::fmax(static_cast<double>(v), -format_max(format)), format_max(format));
  double best = 0;
  int best_code = -1;
  for (int code = 0; code < 256; ++code) {
    const double value = decode(static_cast<uint8_t>(code), format);
    if (!std::isfinite(value)) continue;
    const double d = std::fabs(value - clamped), best_d = std::fabs(best - clamped);
    // Ties go to the even code (mantissa's last bit 0); -0 and +0 are the same value.
    if (best_code < 0 || d < best_d || (d == best_d && (code & 1) == 0 && (best_code & 1) == 1)) {
      best = value;
      best_code = code;
    }
  }
  return best;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = contiguous(t);
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  return {p, p + c.numel()};
}

Tensor one_float(double v) { return tensor_of({v}, {1}, DType::Float32); }

// Inputs spread over a wide range (so that some saturate at scale 3) with a NaN when asked.
Tensor wide_input(int64_t m, int64_t k, DType dtype, bool with_nan) {
  std::vector<double> v = to_doubles(random_tensor({m, k}, DType::Float64, -1, 1));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::ldexp(v[i], static_cast<int>(i % 23) - 12);
  if (with_nan && !v.empty()) v[v.size() / 2] = std::nan("");
  return tensor_of(v, {m, k}, dtype);
}

TEST(Float8Cast, MatchesTheNearestEvenSaturatedValueAndTransposes) {
  for (DType format : {kE4M3, kE5M2})
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
      for (bool transposed_input : {false, true}) {
        Tensor x = wide_input(37, 19, dtype, false);
        if (transposed_input) x = transposed_copy(x);
        const float scale = 3.0f;
        const Tensor amax = one_float(0.0);
        const ops::Float8Cast c = ops::float8_cast(x, one_float(scale), amax, format, true, true);
        ASSERT_EQ(c.data.shape(), x.shape());
        ASSERT_EQ(c.data_t.shape(), (Shape{x.size(1), x.size(0)}));
        EXPECT_EQ(c.data.dtype(), format);
        const std::vector<double> xs = to_doubles(x), got = to_doubles(c.data);
        double seen = 0;
        for (size_t i = 0; i < xs.size(); ++i) {
          const float product = static_cast<float>(xs[i]) * scale;  // the cast's float32 product
          ASSERT_EQ(got[i], expected_cast(product, format))
              << dtype_name(dtype) << " -> " << dtype_name(format) << " element " << i << " "
              << xs[i];
          seen = std::fmax(seen, std::fabs(xs[i]));
        }
        EXPECT_EQ(to_doubles(amax)[0], seen);
        EXPECT_EQ(bytes_of(c.data_t), bytes_of(c.data.t()));
      }
}

TEST(Float8Cast, AmaxOnlyRisesAndNaNWins) {
  const Tensor x = wide_input(8, 16, DType::Float32, false);
  double largest = 0;
  for (double v : to_doubles(x)) largest = std::fmax(largest, std::fabs(v));
  const Tensor high = one_float(largest * 2);
  ops::float8_cast(x, one_float(1), high, kE4M3);
  EXPECT_EQ(to_doubles(high)[0], static_cast<double>(static_cast<float>(largest * 2)));
  const Tensor amax = one_float(0);
  const ops::Float8Cast c = ops::float8_cast(wide_input(8, 16, DType::Float32, true), one_float(1),
                                             amax, kE5M2, true, false);
  EXPECT_TRUE(std::isnan(to_doubles(amax)[0]));
  EXPECT_FALSE(c.data_t.defined());
  int nans = 0;
  for (double v : to_doubles(c.data)) nans += std::isnan(v);
  EXPECT_EQ(nans, 1);
}

TEST(Float8Cast, EmptyInputsAndErrors) {
  const Tensor amax = one_float(0.5);
  const ops::Float8Cast c = ops::float8_cast(Tensor::empty({0, 16}, DType::Float32), one_float(1),
                                             amax, kE4M3, true, true);
  EXPECT_EQ(c.data.shape(), (Shape{0, 16}));
  EXPECT_EQ(c.data_t.shape(), (Shape{16, 0}));
  EXPECT_EQ(to_doubles(amax)[0], 0.5);
  const Tensor x = random_tensor({4, 16}, DType::Float32);
  EXPECT_NE(error_message([&] {
              ops::float8_cast(x, one_float(1), amax, DType::Float16);
            }).find("dtype must be float8_e4m3fn or float8_e5m2, got float16"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              ops::float8_cast(random_tensor({4}, DType::Float32), one_float(1), amax, kE4M3);
            }).find("float8_cast: input must be 2-D"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              ops::float8_cast(x, tensor_of({1, 2}, {2}, DType::Float32), amax, kE4M3);
            }).find("float8_cast: scale must be a float32 tensor with one element"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              ops::float8_cast(random_tensor({4, 16}, DType::Int32), one_float(1), amax, kE4M3);
            }).find("float8_cast"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              ops::float8_cast(x, one_float(1), amax, kE4M3, false, false);
            }).find("neither"),
            std::string::npos);
}

TEST(Float8UpdateScales, ScalesFromEachRowsMaxThenRolls) {
  const int64_t length = 5;
  // Row 0: finite values; row 1: all zero (keeps its scale); row 2: an infinity (keeps);
  // row 3: a NaN (keeps).
  std::vector<double> h = to_doubles(random_tensor({4, length}, DType::Float64, 0.01, 300));
  for (int64_t i = 0; i < length; ++i) h[static_cast<size_t>(length + i)] = 0;
  h[static_cast<size_t>(2 * length + 3)] = INFINITY;
  h[static_cast<size_t>(3 * length + 1)] = std::nan("");
  const Tensor history = tensor_of(h, {4, length}, DType::Float32);
  const std::vector<double> stored = to_doubles(history);
  const std::vector<double> old_scale = {0.5, 2, 4, 8};
  const std::vector<DType> formats = {kE4M3, kE5M2, kE4M3, kE5M2};
  for (int margin : {0, 2}) {
    const Tensor hist = clone(history);
    const ops::Float8Scales s =
        ops::float8_update_scales(hist, tensor_of(old_scale, {4}, DType::Float32), formats, margin);
    const std::vector<double> scale = to_doubles(s.scale), inv = to_doubles(s.scale_inv);
    const std::vector<double> rolled = to_doubles(hist);
    for (int64_t r = 0; r < 4; ++r) {
      double amax = 0;
      for (int64_t i = 0; i < length; ++i) amax = std::fmax(amax, stored[r * length + i]);
      const double expected =
          r == 0 ? static_cast<float>(format_max(formats[r]) / static_cast<float>(amax)) /
                       std::ldexp(1.0, margin)
                 : old_scale[r];
      EXPECT_NEAR(scale[r], expected, 1e-7 * expected) << "row " << r << " margin " << margin;
      EXPECT_EQ(inv[r], static_cast<double>(1.0f / static_cast<float>(scale[r])));
      EXPECT_EQ(rolled[r * length], 0.0);
      for (int64_t i = 1; i < length; ++i) {
        const double want = stored[r * length + i - 1], got = rolled[r * length + i];
        EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want))) << r << "," << i;
      }
    }
  }
}

TEST(Float8UpdateScales, Errors) {
  const Tensor h = Tensor::empty({2, 4}, DType::Float32);
  EXPECT_NE(error_message([&] {
              ops::float8_update_scales(h, Tensor::empty({3}, DType::Float32), {kE4M3, kE4M3});
            }).find("scale must be a float32 tensor [2]"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              ops::float8_update_scales(h, Tensor::empty({2}, DType::Float32), {kE4M3});
            }).find("2 history rows but 1 formats"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              ops::float8_update_scales(Tensor::empty({9, 4}, DType::Float32),
                                        Tensor::empty({9}, DType::Float32),
                                        std::vector<DType>(9, kE4M3));
            }).find("1 to 8 rows"),
            std::string::npos);
  EXPECT_NE(
      error_message([&] {
        ops::float8_update_scales(h, Tensor::empty({2}, DType::Float32), {kE4M3, DType::Float32});
      }).find("float8_max: expected a float8 dtype"),
      std::string::npos);
}

}  // namespace
}  // namespace rcuda::test
