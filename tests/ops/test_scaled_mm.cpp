// Tests for scaled_mm (rcuda/ops/linalg.h) and the CPU backend's scaled_gemm: every product is
// checked against plain double loops over the float8 values, decoded by hand with to_doubles
// (support/reference.h), so neither rcuda's float8 conversions nor its gemm is trusted.
#include <cmath>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {
namespace {

const DType kE4M3 = DType::Float8E4M3FN;
const DType kE5M2 = DType::Float8E5M2;

Tensor scale_of(double value) { return tensor_of({value}, {}, DType::Float32); }

// An [M,K] row-major float8 matrix from random float32 values converted by rcuda (the values
// are then read back exactly as stored, so the conversion's rounding does not matter here).
Tensor fp8_row_major(int64_t rows, int64_t cols, DType dtype) {
  return to(random_tensor({rows, cols}, DType::Float32, -3, 3), dtype);
}

// A [K,N] column-major float8 matrix: the transpose of a row-major [N,K] one.
Tensor fp8_column_major(int64_t k, int64_t n, DType dtype) {
  return fp8_row_major(n, k, dtype).t();
}

// scale_a * scale_b * sum_p a[i,p] b[p,j] in double.
std::vector<double> reference_scaled_mm(const Tensor& a, const Tensor& b, double scale_a,
                                        double scale_b) {
  const std::vector<double> av = to_doubles(a), bv = to_doubles(b);
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  std::vector<double> out;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += av[static_cast<size_t>(i * k + p)] * bv[static_cast<size_t>(p * n + j)];
      out.push_back(scale_a * scale_b * s);
    }
  return out;
}

// The products of float8 values are exact in float32, so the error is float32 accumulation
// (random walk over K terms: 2e-6 * sqrt(K)) plus one rounding to the output dtype.
double scaled_mm_tolerance(DType out_dtype, int64_t k) {
  const double accumulation = tolerance(DType::Float32) * std::sqrt(static_cast<double>(k));
  return out_dtype == DType::Float32 ? accumulation : tolerance(out_dtype) + accumulation;
}

void expect_scaled_mm(const Tensor& a, const Tensor& b, double scale_a, double scale_b,
                      DType out_dtype) {
  const Tensor out = scaled_mm(a, b, scale_of(scale_a), scale_of(scale_b), out_dtype);
  EXPECT_EQ(out.shape(), (Shape{a.size(0), b.size(1)}));
  EXPECT_EQ(out.dtype(), out_dtype);
  EXPECT_TRUE(all_close(to_doubles(out), reference_scaled_mm(a, b, scale_a, scale_b),
                        scaled_mm_tolerance(out_dtype, a.size(1))))
      << shape_str(a.shape()) << " " << dtype_name(a.dtype()) << " @ " << shape_str(b.shape())
      << " " << dtype_name(b.dtype()) << " -> " << dtype_name(out_dtype);
}

TEST(ScaledMmTest, MatchesDoubleLoopsForEveryOutDtypeAndFloat8Pair) {
  const std::vector<Shape> mkn = {{1, 16, 16}, {7, 32, 48}, {33, 64, 16}, {16, 128, 32}};
  const std::vector<std::pair<DType, DType>> pairs = {
      {kE4M3, kE4M3}, {kE4M3, kE5M2}, {kE5M2, kE4M3}};
  for (DType out_dtype : {DType::BFloat16, DType::Float16, DType::Float32})
    for (const auto& [da, db] : pairs)
      for (const Shape& s : mkn)
        expect_scaled_mm(fp8_row_major(s[0], s[1], da), fp8_column_major(s[1], s[2], db), 0.37, 1.9,
                         out_dtype);
}

TEST(ScaledMmTest, DefaultsToBFloat16AndTakesOneElementScalesOfAnyShape) {
  const Tensor a = fp8_row_major(5, 32, kE4M3), b = fp8_column_major(32, 16, kE4M3);
  const Tensor out = scaled_mm(a, b, tensor_of({0.5}, {1}, DType::Float32),
                               tensor_of({4.0}, {1, 1}, DType::Float32));
  EXPECT_EQ(out.dtype(), DType::BFloat16);
  EXPECT_TRUE(all_close(to_doubles(out), reference_scaled_mm(a, b, 0.5, 4.0),
                        scaled_mm_tolerance(DType::BFloat16, 32)));
  // A scale that is a view into a larger tensor (offset != 0).
  const Tensor scales = tensor_of({3.0, 0.25}, {2}, DType::Float32);
  const Tensor out2 = scaled_mm(a, b, scales.slice(0, 1, 2), scales.slice(0, 0, 1), DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(out2), reference_scaled_mm(a, b, 0.25, 3.0),
                        scaled_mm_tolerance(DType::Float32, 32)));
}

// The bias is added in float32 before the one rounding to out_dtype: within that rounding of
// the double-precision reference; a float32 bias for a bfloat16 output is converted first.
TEST(ScaledMmTest, BiasIsAddedBeforeTheRounding) {
  const Tensor a = fp8_row_major(9, 32, kE4M3), b = fp8_column_major(32, 48, kE5M2);
  for (DType out_dtype : {DType::BFloat16, DType::Float16, DType::Float32})
    for (DType bias_dtype : {out_dtype, DType::Float32}) {
      const Tensor bias = random_tensor({48}, bias_dtype, -4, 4);
      const Tensor out = scaled_mm(a, b, scale_of(0.5), scale_of(2.0), out_dtype, bias);
      std::vector<double> expected = reference_scaled_mm(a, b, 0.5, 2.0);
      const std::vector<double> bv = to_doubles(to(bias, out_dtype));
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += bv[i % 48];
      EXPECT_TRUE(all_close(to_doubles(out), expected, scaled_mm_tolerance(out_dtype, 32)))
          << dtype_name(out_dtype) << " bias " << dtype_name(bias_dtype);
    }
  // K = 0: the bias alone.
  const Tensor bias = random_tensor({16}, DType::Float32);
  EXPECT_EQ(to_doubles(scaled_mm(fp8_row_major(3, 0, kE4M3), fp8_column_major(0, 16, kE4M3),
                                 scale_of(1.0), scale_of(1.0), DType::Float32, bias)
                           .select(0, 2)),
            to_doubles(bias));
  EXPECT_NE(error_message([&] {
              scaled_mm(a, b, scale_of(1.0), scale_of(1.0), DType::Float32,
                        random_tensor({32}, DType::Float32));
            }).find("scaled_mm: bias must have shape [N] = [48], got [32]"),
            std::string::npos);
}

TEST(ScaledMmTest, StridedOperandsInTheRequiredLayouts) {
  // Row-major a with a leading dimension wider than K; column-major b with one wider than K.
  const Tensor a = fp8_row_major(9, 80, kE4M3).slice(1, 16, 48);     // [9, 32], strides (80, 1)
  const Tensor b = fp8_column_major(70, 32, kE5M2).slice(0, 3, 35);  // [32, 32], strides (1, 70)
  ASSERT_EQ(a.stride(0), 80);
  ASSERT_EQ(b.stride(0), 1);
  expect_scaled_mm(a, b, 1.25, 0.75, DType::Float32);
  expect_scaled_mm(a, b, 1.25, 0.75, DType::Float16);
  // Every 2nd row of a: still row-major.
  expect_scaled_mm(fp8_row_major(14, 16, kE4M3).slice(0, 0, 14, 2), fp8_column_major(16, 32, kE4M3),
                   2.0, 0.125, DType::BFloat16);
}

TEST(ScaledMmTest, EmptyDims) {
  const Tensor zero_k = scaled_mm(fp8_row_major(3, 0, kE4M3), fp8_column_major(0, 16, kE4M3),
                                  scale_of(2.0), scale_of(3.0), DType::Float32);
  EXPECT_EQ(zero_k.shape(), (Shape{3, 16}));
  EXPECT_TRUE(all_close(to_doubles(zero_k), std::vector<double>(48, 0.0), 0));
  EXPECT_EQ(scaled_mm(fp8_row_major(0, 32, kE4M3), fp8_column_major(32, 16, kE4M3), scale_of(1.0),
                      scale_of(1.0))
                .shape(),
            (Shape{0, 16}));
}

// The backend primitive writes any output layout on the CPU (ops always pass a contiguous one).
TEST(ScaledMmTest, CpuScaledGemmIntoColumnMajorOutput) {
  const Tensor a = fp8_row_major(7, 32, kE4M3), b = fp8_column_major(32, 16, kE4M3);
  const Tensor out = transposed_copy(random_tensor({7, 16}, DType::Float32));
  backend_for(Device()).scaled_gemm(out, a, b, scale_of(0.5), scale_of(3.0), Tensor());
  EXPECT_TRUE(all_close(to_doubles(out), reference_scaled_mm(a, b, 0.5, 3.0),
                        scaled_mm_tolerance(DType::Float32, 32)));
}

TEST(ScaledMmTest, ErrorsExplainTheRequirements) {
  const Tensor a = fp8_row_major(8, 32, kE4M3), b = fp8_column_major(32, 16, kE4M3);
  const Tensor one = scale_of(1.0);
  auto message_of = [&](const Tensor& x, const Tensor& y) {
    return error_message([&] { scaled_mm(x, y, one, one); });
  };

  // Layouts (Note [fp8 operand layouts]).
  const Tensor b_row_major = fp8_row_major(32, 16, kE4M3);
  EXPECT_THROW(scaled_mm(a, b_row_major, one, one), ValueError);
  const std::string b_message = message_of(a, b_row_major);
  EXPECT_NE(b_message.find("column-major"), std::string::npos) << b_message;
  EXPECT_NE(b_message.find("[32, 16]"), std::string::npos) << b_message;
  EXPECT_NE(b_message.find(".t()"), std::string::npos) << b_message;
  const Tensor a_column_major = fp8_column_major(8, 32, kE4M3);
  EXPECT_THROW(scaled_mm(a_column_major, b, one, one), ValueError);
  EXPECT_NE(message_of(a_column_major, b).find("row-major"), std::string::npos);
  EXPECT_THROW(scaled_mm(fp8_row_major(1, 32, kE4M3).expand({8, 32}), b, one, one), ValueError);

  // Sizes: K and N multiples of 16, 2-D, matching inner sizes.
  EXPECT_THROW(scaled_mm(fp8_row_major(8, 24, kE4M3), fp8_column_major(24, 16, kE4M3), one, one),
               ShapeError);
  const std::string k_message =
      message_of(fp8_row_major(8, 24, kE4M3), fp8_column_major(24, 16, kE4M3));
  EXPECT_NE(k_message.find("multiples of 16"), std::string::npos) << k_message;
  EXPECT_NE(k_message.find("K=24"), std::string::npos) << k_message;
  EXPECT_THROW(scaled_mm(a, fp8_column_major(32, 8, kE4M3), one, one), ShapeError);
  EXPECT_THROW(scaled_mm(a, fp8_column_major(48, 16, kE4M3), one, one), ShapeError);
  EXPECT_THROW(scaled_mm(a.unsqueeze(0), b, one, one), ShapeError);

  // dtypes.
  const Tensor a32 = random_tensor({8, 32}, DType::Float32);
  const Tensor b32 = random_tensor({16, 32}, DType::Float32).t();
  EXPECT_THROW(scaled_mm(a32, b32, one, one), DTypeError);
  EXPECT_NE(message_of(a32, b32).find("float8"), std::string::npos);
  EXPECT_THROW(scaled_mm(a, to(b32, DType::BFloat16), one, one), DTypeError);
  EXPECT_THROW(scaled_mm(fp8_row_major(8, 32, kE5M2), fp8_column_major(32, 16, kE5M2), one, one),
               DTypeError);
  EXPECT_THROW(scaled_mm(a, b, tensor_of({1.0}, {}, DType::Float64), one), DTypeError);
  EXPECT_THROW(scaled_mm(a, b, one, tensor_of({1.0, 2.0}, {2}, DType::Float32)), DTypeError);
  EXPECT_THROW(scaled_mm(a, b, one, one, DType::Float64), DTypeError);
  EXPECT_THROW(scaled_mm(a, b, one, one, kE4M3), DTypeError);
}

TEST(ScaledMmTest, MatmulPointsFloat8ToScaledMm) {
  const Tensor a = fp8_row_major(4, 16, kE4M3), b = fp8_row_major(16, 4, kE4M3);
  EXPECT_THROW(matmul(a, b), DTypeError);
  const std::string message = error_message([&] { matmul(a, b); });
  EXPECT_NE(message.find("scaled_mm"), std::string::npos) << message;
}

}  // namespace
}  // namespace rcuda::test
