// CUDA backend vs CPU backend for matrix products (cuBLASLt vs OpenBLAS): matmul, mm, bmm,
// addmm and the gemm primitive in every floating dtype, TF32 on and off, and scaled_mm on fp8.
// Each test draws fresh inputs on the host, makes the same view of them on both devices (a view
// made on the host would arrive on the GPU contiguous), runs the op on both and compares; the
// CPU side is itself checked against double loops in tests/ops/test_linalg.cpp and
// tests/ops/test_scaled_mm.cpp.
//
// Tolerances, relative to max(1, |expected|) elementwise unless said otherwise:
//  - float32 (TF32 off), float64: backend_tolerance(dtype) * sqrt(K). Both backends accumulate
//    in the dtype, in different orders; rounding errors of K additions add up like a random
//    walk, so their difference grows as sqrt(K).
//  - float16, bfloat16: the same formula. Both accumulate in float32 and round once to the
//    dtype, so they differ by at most one unit in the last place of the dtype (within
//    backend_tolerance) plus the float32 accumulation difference.
//  - TF32 (float32 inputs rounded to 10 mantissa bits inside the tensor cores): elementwise
//    errors are relative to each product term, not to the result, so the result of a sum with
//    cancellation can be off by far more than its own magnitude times 2^-11. The norm-wise
//    error ||out - ref|| / ||ref|| is what TF32 bounds: each term carries a relative error of
//    about 2^-11 (RMS 4e-4 when inputs are rounded to nearest, up to 1e-3 when truncated), and
//    the errors of random terms add like the terms themselves. 4e-3 allows for either rounding
//    mode while still failing for a wrong product (error ~1).
//  - scaled_mm: fp8 products are exact in float32; both backends accumulate in float32 and round
//    once to the output dtype: backend_tolerance(out dtype) * sqrt(K) as above.
// Beyond the elementwise check, every comparison (TF32 aside) also bounds the norm-wise error
// by backend_tolerance(dtype): a few units in the last place over the whole result, which a
// slightly wrong scale or a mixed-up operand would exceed even where elementwise bounds are
// loose (bfloat16 with large K; cuBLASLt may split K and add partial sums in the output dtype).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "support/devices.h"

namespace rcuda {
namespace {

using test::error_message;
using test::kCpu;
using test::kCuda;
using test::on_cuda;
using test::random_tensor;
using test::values;

// The same random values on both devices, with the same view applied on each.
struct Operand {
  Tensor cpu, cuda;
};

using View = std::function<Tensor(const Tensor&)>;

Operand operand(
    const Shape& shape, DType dtype, const View& view = [](const Tensor& t) { return t; }) {
  const Tensor x = random_tensor(shape, dtype);
  return {view(x), view(on_cuda(x))};
}

// Every 2nd row and 3rd column of a [2 rows, 3 cols] matrix: neither row- nor column-major.
Operand stepped(int64_t rows, int64_t cols, DType dtype) {
  return operand({2 * rows, 3 * cols}, dtype, [=](const Tensor& t) {
    return t.slice(0, 0, 2 * rows, 2).slice(1, 0, 3 * cols, 3);
  });
}

// [rows, cols] stored column-major.
Operand column_major(int64_t rows, int64_t cols, DType dtype) {
  return operand({cols, rows}, dtype, [](const Tensor& t) { return t.t(); });
}

double gemm_tolerance(DType dtype, int64_t k) {
  return test::backend_tolerance(dtype) * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
}

double sum_of_squares(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v * v;
  return sum;
}

// ||got - expected||.
double difference_norm(const std::vector<double>& got, const std::vector<double>& expected) {
  double diff = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    diff += (got[i] - expected[i]) * (got[i] - expected[i]);
  return std::sqrt(diff);
}

// ||got - expected|| / ||expected|| (0 when both are empty or zero).
double normwise_error(const std::vector<double>& got, const std::vector<double>& expected) {
  const double diff = difference_norm(got, expected), norm = std::sqrt(sum_of_squares(expected));
  return norm == 0 ? diff : diff / norm;
}

// Sets the TF32 flag for a scope, restoring the old value after.
class AllowTf32 {
 public:
  explicit AllowTf32(bool allow) : previous_(cuda::allow_tf32()) { cuda::set_allow_tf32(allow); }
  ~AllowTf32() { cuda::set_allow_tf32(previous_); }
  AllowTf32(const AllowTf32&) = delete;
  AllowTf32& operator=(const AllowTf32&) = delete;

 private:
  bool previous_;
};

// `scale`, when given, is the norm the error is measured against instead of ||expected||.
::testing::AssertionResult matches(const Tensor& got, const Tensor& expected, double tol,
                                   double normwise_tol = -1, double scale = -1) {
  if (normwise_tol < 0) normwise_tol = test::backend_tolerance(expected.dtype());
  if (got.device() != kCuda) return ::testing::AssertionFailure() << "result not on cuda:0";
  if (got.dtype() != expected.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(got.dtype()) << " != " << dtype_name(expected.dtype());
  if (got.shape() != expected.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_str(got.shape()) << " != " << shape_str(expected.shape());
  const std::vector<double> got_values = values(got), expected_values = test::to_doubles(expected);
  const ::testing::AssertionResult close = test::all_close(got_values, expected_values, tol);
  if (!close) return close;
  // Elementwise tolerances grow with sqrt(K) to allow for the odd unlucky element; the error
  // over the whole result must stay within a few units in the last place of the dtype.
  for (double v : expected_values)
    if (!std::isfinite(v)) return close;
  const double error = scale > 0 ? difference_norm(got_values, expected_values) / scale
                                 : normwise_error(got_values, expected_values);
  if (error > normwise_tol)
    return ::testing::AssertionFailure()
           << "norm-wise relative error " << error << " > " << normwise_tol;
  return close;
}

// || |A| |B| ||: a product's rounding errors are bounded by the products of magnitudes (Higham,
// Accuracy and Stability of Numerical Algorithms, 3.5), not by the result, whose terms may
// cancel: relative to ||A B||, a dot product of 13 float32 terms that nearly cancel failed on
// rounding alone.
double product_scale(const Tensor& a, const Tensor& b) {
  return std::sqrt(sum_of_squares(
      test::to_doubles(matmul(abs(to(a, DType::Float64)), abs(to(b, DType::Float64))))));
}

void expect_matmul(const Operand& a, const Operand& b) {
  const DType dtype = a.cpu.dtype();
  EXPECT_TRUE(matches(matmul(a.cuda, b.cuda), matmul(a.cpu, b.cpu),
                      gemm_tolerance(dtype, a.cpu.size(-1)), -1, product_scale(a.cpu, b.cpu)))
      << shape_str(a.cpu.shape()) << " @ " << shape_str(b.cpu.shape()) << " in "
      << dtype_name(dtype);
}

TEST(CudaMatmulTest, MatrixShapesEveryFloatingDtype) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(false);
  const std::vector<Shape> mkn = {{1, 1, 1},     {7, 13, 5},    {64, 100, 33}, {3, 257, 2},
                                  {1, 300, 200}, {200, 300, 1}, {128, 256, 96}};
  for (DType dtype : test::floating_dtypes())
    for (const Shape& s : mkn)
      expect_matmul(operand({s[0], s[1]}, dtype), operand({s[1], s[2]}, dtype));
}

TEST(CudaMatmulTest, EveryRankCombinationAndBroadcastBatch) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(false);
  for (DType dtype : test::floating_dtypes()) {
    expect_matmul(operand({13}, dtype), operand({13}, dtype));
    expect_matmul(operand({7}, dtype), operand({7, 5}, dtype));
    expect_matmul(operand({4, 7}, dtype), operand({7}, dtype));
    expect_matmul(operand({3, 4, 7}, dtype), operand({3, 7, 5}, dtype));
    expect_matmul(operand({2, 1, 4, 7}, dtype), operand({3, 7, 5}, dtype));  // a stride 0 batch
    expect_matmul(operand({3, 4, 7}, dtype), operand({7}, dtype));
    expect_matmul(operand({7}, dtype), operand({3, 7, 5}, dtype));
    expect_matmul(operand({2, 3, 4, 7}, dtype), operand({7, 5}, dtype));  // folded to one gemm
    expect_matmul(operand({4, 7}, dtype), operand({2, 3, 7, 5}, dtype));  // b batched, a shared
    expect_matmul(operand({1, 3, 4, 7}, dtype), operand({2, 1, 7, 5}, dtype));
    // Batch dims out of memory order: the front end loops over gemm calls.
    expect_matmul(operand({3, 2, 4, 7}, dtype, [](const Tensor& t) { return t.transpose(0, 1); }),
                  operand({2, 3, 7, 5}, dtype));
  }
}

TEST(CudaMatmulTest, TransposedOperandsAndColumnMajorViews) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(false);
  for (DType dtype : test::floating_dtypes()) {
    const Operand a = column_major(7, 13, dtype), b = column_major(13, 5, dtype);
    expect_matmul(a, b);
    expect_matmul(a, operand({13, 5}, dtype));
    expect_matmul(operand({7, 13}, dtype), b);
    auto swap12 = [](const Tensor& t) { return t.transpose(1, 2); };
    expect_matmul(operand({3, 13, 7}, dtype, swap12), operand({3, 5, 13}, dtype, swap12));
    expect_matmul(operand({3, 13, 7}, dtype, swap12), operand({3, 13, 5}, dtype));
    // Row-major with a leading dimension wider than the row, and misaligned first elements
    // (cuBLASLt must be told the alignment, or it may pick a kernel that faults).
    auto inner = [](const Tensor& t) { return t.slice(1, 1, t.size(1) - 2); };
    expect_matmul(operand({9, 40}, dtype, inner), operand({37, 19}, dtype, inner));
    expect_matmul(operand({33, 131}, dtype, inner), operand({128, 67}, dtype, inner));
  }
}

TEST(CudaMatmulTest, SteppedSlicesAndExpandedMatrixDims) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(false);
  for (DType dtype : test::floating_dtypes()) {
    expect_matmul(stepped(7, 13, dtype), stepped(13, 5, dtype));
    expect_matmul(stepped(7, 13, dtype), operand({13, 5}, dtype));
    expect_matmul(stepped(1, 13, dtype), stepped(13, 1, dtype));
    expect_matmul(operand({1, 13}, dtype,
                          [](const Tensor& t) {
                            return t.expand({7, 13});
                          }),
                  stepped(13, 5, dtype));
    // A batched operand whose matrices are stepped, and one matrix broadcast over the batch.
    expect_matmul(operand({4, 14, 39}, dtype,
                          [](const Tensor& t) { return t.slice(1, 0, 14, 2).slice(2, 0, 39, 3); }),
                  operand({13, 6}, dtype, [](const Tensor& t) {
                    return t.expand({4, 13, 6});
                  }));
  }
}

TEST(CudaMatmulTest, EmptyDims) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::floating_dtypes()) {
    // K == 0: an empty sum is zero.
    const Tensor c = matmul(operand({3, 0}, dtype).cuda, operand({0, 4}, dtype).cuda);
    EXPECT_EQ(c.shape(), (Shape{3, 4}));
    EXPECT_TRUE(test::all_close(values(c), std::vector<double>(12, 0.0), 0));
    EXPECT_TRUE(test::all_close(values(matmul(operand({0}, dtype).cuda, operand({0}, dtype).cuda)),
                                {0.0}, 0));
    EXPECT_EQ(matmul(operand({0, 5}, dtype).cuda, operand({5, 4}, dtype).cuda).shape(),
              (Shape{0, 4}));
    EXPECT_EQ(matmul(operand({3, 5}, dtype).cuda, operand({5, 0}, dtype).cuda).shape(),
              (Shape{3, 0}));
    EXPECT_EQ(bmm(operand({0, 3, 5}, dtype).cuda, operand({0, 5, 2}, dtype).cuda).shape(),
              (Shape{0, 3, 2}));
    const Tensor z = bmm(operand({2, 3, 0}, dtype).cuda, operand({2, 0, 4}, dtype).cuda);
    EXPECT_TRUE(test::all_close(values(z), std::vector<double>(24, 0.0), 0));
  }
}

TEST(CudaMatmulTest, MmBmmAndAddmm) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(false);
  const int64_t m = 7, k = 13, n = 5;
  for (DType dtype : test::floating_dtypes()) {
    const double tol = gemm_tolerance(dtype, k);
    const Operand a = operand({m, k}, dtype), b = operand({k, n}, dtype);
    EXPECT_TRUE(matches(mm(a.cuda, b.cuda), mm(a.cpu, b.cpu), tol)) << dtype_name(dtype);
    const Operand x = operand({4, 6, k}, dtype), y = operand({4, k, 3}, dtype);
    EXPECT_TRUE(matches(bmm(x.cuda, y.cuda), bmm(x.cpu, y.cpu), tol)) << dtype_name(dtype);
    for (const Shape& input_shape : std::vector<Shape>{{m, n}, {n}, {m, 1}, {}}) {
      const Operand input = operand(input_shape, dtype);
      EXPECT_TRUE(matches(addmm(input.cuda, a.cuda, b.cuda, 0.5, 2.0),
                          addmm(input.cpu, a.cpu, b.cpu, 0.5, 2.0), tol))
          << dtype_name(dtype) << " input " << shape_str(input_shape);
    }
    // Transposed and stepped operands, default beta = alpha = 1.
    const Operand at = column_major(m, k, dtype), bs = stepped(k, n, dtype);
    const Operand input = operand({m, n}, dtype);
    EXPECT_TRUE(
        matches(addmm(input.cuda, at.cuda, bs.cuda), addmm(input.cpu, at.cpu, bs.cpu), tol));
    // beta == 0 ignores NaN in the input.
    const Tensor nan_input =
        full({m, n}, std::numeric_limits<double>::quiet_NaN(), TensorOptions(dtype, kCuda));
    EXPECT_TRUE(matches(addmm(nan_input, a.cuda, b.cuda, 0.0, 1.0), mm(a.cpu, b.cpu), tol));
    // K == 0 scales the input by beta.
    const Operand e = operand({m, 0}, dtype), f = operand({0, n}, dtype);
    EXPECT_TRUE(matches(addmm(input.cuda, e.cuda, f.cuda, 0.25, 3.0),
                        addmm(input.cpu, e.cpu, f.cpu, 0.25, 3.0), test::backend_tolerance(dtype)));
  }
}

// linear's parameter gradients (cuBLASLt's bias-gradient epilogue where it has one) against the
// CPU's product and sum, for contiguous, transposed and stepped grad_out and x.
TEST(CudaMatmulTest, LinearWeightGradsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(false);
  struct Case {
    int64_t m, n, k;
  };
  for (DType dtype : test::floating_dtypes()) {
    for (const Case& c :
         std::vector<Case>{{256, 512, 784}, {1, 10, 128}, {7, 5, 13}, {300, 3, 9}}) {
      const std::string what = std::string(dtype_name(dtype)) + " m " + std::to_string(c.m) +
                               " n " + std::to_string(c.n) + " k " + std::to_string(c.k);
      const double tol = gemm_tolerance(dtype, c.m);
      for (const Operand& g :
           {operand({c.m, c.n}, dtype), column_major(c.m, c.n, dtype), stepped(c.m, c.n, dtype)}) {
        for (const Operand& x : {operand({c.m, c.k}, dtype), column_major(c.m, c.k, dtype)}) {
          const ops::LinearWeightGrads gpu = ops::linear_weight_grads(g.cuda, x.cuda);
          const ops::LinearWeightGrads cpu = ops::linear_weight_grads(g.cpu, x.cpu);
          EXPECT_TRUE(matches(gpu.weight, cpu.weight, tol)) << what << " weight";
          EXPECT_TRUE(matches(gpu.bias, cpu.bias, tol)) << what << " bias";
        }
      }
    }
    // No rows: zero gradients.
    const Operand g = operand({0, 4}, dtype), x = operand({0, 3}, dtype);
    const ops::LinearWeightGrads none = ops::linear_weight_grads(g.cuda, x.cuda);
    EXPECT_TRUE(matches(none.weight, ops::zeros({4, 3}, dtype), 0));
    EXPECT_TRUE(matches(none.bias, ops::zeros({4}, dtype), 0));
  }
  // The fused kernel runs for float32 on the GPUs rcuda builds for (cuBLASLt has had BGRADB
  // since CUDA 11.4); the values above are checked whichever path ran.
  const Operand g = operand({64, 32}, DType::Float32), x = operand({64, 48}, DType::Float32);
  const Tensor gw = Tensor::empty({32, 48}, DType::Float32, kCuda);
  const Tensor gb = Tensor::empty({32}, DType::Float32, kCuda);
  EXPECT_TRUE(backend_for(kCuda).linear_weight_grad(gw, gb, g.cuda, x.cuda));
  EXPECT_THROW(ops::linear_weight_grads(g.cuda, operand({63, 48}, DType::Float32).cuda),
               ShapeError);
}

// The gemm primitive writes into column-major, stepped and batched column-major outputs, and
// honours beta over their old values.
TEST(CudaMatmulTest, GemmIntoColumnMajorAndSteppedOutputs) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(false);
  Backend& gpu = backend_for(kCuda);
  Backend& cpu = backend_for(kCpu);
  const int64_t batch = 3, m = 7, k = 13, n = 5;
  for (DType dtype : test::floating_dtypes()) {
    const Operand a = operand({batch, m, k}, dtype), b = operand({batch, k, n}, dtype);
    const std::vector<Operand> outs = {
        operand({batch, n, m}, dtype, [](const Tensor& t) { return t.transpose(1, 2); }),
        operand({batch, 2 * m, 3 * n}, dtype,
                [=](const Tensor& t) { return t.slice(1, 0, 2 * m, 2).slice(2, 0, 3 * n, 3); }),
        operand({m, batch, n}, dtype, [](const Tensor& t) { return t.transpose(0, 1); }),
    };
    for (const Operand& out : outs) {
      gpu.gemm(out.cuda, a.cuda, b.cuda, 1.5, -0.5);
      cpu.gemm(out.cpu, a.cpu, b.cpu, 1.5, -0.5);
      EXPECT_TRUE(
          test::all_close(values(out.cuda), test::to_doubles(out.cpu), gemm_tolerance(dtype, k)))
          << dtype_name(dtype) << " out strides " << shape_str(out.cuda.strides());
    }
    // A single-matrix column-major output with beta == 0 over NaN.
    const Operand out = column_major(m, n, dtype);
    fill_(out.cuda, std::numeric_limits<double>::quiet_NaN());
    gpu.gemm(out.cuda.unsqueeze(0), a.cuda.select(0, 1).unsqueeze(0),
             b.cuda.select(0, 1).unsqueeze(0), 1.0, 0.0);
    EXPECT_TRUE(test::all_close(values(out.cuda),
                                test::to_doubles(mm(a.cpu.select(0, 1), b.cpu.select(0, 1))),
                                gemm_tolerance(dtype, k)));
  }
}

// More than 65535 matrices: cuBLASLt's batch runs in chunks; b is one matrix (batch stride 0).
TEST(CudaMatmulTest, LongBatchWithBroadcastOperand) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(false);
  const Operand a = operand({70000, 2, 3}, DType::Float32);
  const Operand b = operand({3, 2}, DType::Float32, [](const Tensor& t) {
    return t.expand({70000, 3, 2});
  });
  EXPECT_TRUE(matches(bmm(a.cuda, b.cuda), bmm(a.cpu, b.cpu), gemm_tolerance(DType::Float32, 3)));
}

TEST(CudaMatmulTest, Tf32OnlyWhenAllowed) {
  RCUDA_REQUIRE_CUDA();
  const int64_t m = 256, k = 512, n = 192;
  const Operand a = operand({m, k}, DType::Float32), b = operand({k, n}, DType::Float32);
  const std::vector<double> exact =
      test::to_doubles(matmul(to(a.cpu, DType::Float64), to(b.cpu, DType::Float64)));
  auto error_with = [&](bool allow) {
    AllowTf32 tf32(allow);
    return normwise_error(values(matmul(a.cuda, b.cuda)), exact);
  };
  const double off = error_with(false), on = error_with(true), off_again = error_with(false);
  // float32 accumulation over K = 512: ~1e-7 norm-wise. TF32: ~4e-4 to 1e-3 (see the top).
  EXPECT_LT(off, 1e-5);
  EXPECT_LT(on, 4e-3);
  EXPECT_GT(on, 5e-5) << "TF32 allowed but the product has float32 accuracy: "
                         "CUBLAS_COMPUTE_32F_FAST_TF32 was not used";
  EXPECT_LT(off_again, 1e-5) << "TF32 turned off again but still used (stale cached algorithm?)";
}

TEST(CudaMatmulTest, Tf32ShapesAndLayouts) {
  RCUDA_REQUIRE_CUDA();
  AllowTf32 tf32(true);
  auto expect_tf32 = [](const Operand& a, const Operand& b) {
    const Tensor got = matmul(a.cuda, b.cuda), expected = matmul(a.cpu, b.cpu);
    ASSERT_EQ(got.shape(), expected.shape());
    EXPECT_LT(normwise_error(values(got), test::to_doubles(expected)), 4e-3)
        << shape_str(a.cpu.shape()) << " @ " << shape_str(b.cpu.shape());
  };
  const DType f32 = DType::Float32;
  expect_tf32(operand({1, 1}, f32), operand({1, 1}, f32));
  expect_tf32(operand({7, 13}, f32), operand({13, 5}, f32));
  expect_tf32(column_major(64, 100, f32), operand({100, 33}, f32));
  expect_tf32(stepped(9, 31, f32), column_major(31, 17, f32));
  expect_tf32(operand({2, 1, 40, 70}, f32), operand({3, 70, 50}, f32));
}

// ---- scaled_mm (fp8) ----

const DType kE4M3 = DType::Float8E4M3FN;
const DType kE5M2 = DType::Float8E5M2;

bool fp8_supported() {
  const cuda::DeviceProperties p = cuda::properties(0);
  return p.major * 10 + p.minor >= 89;
}

// fp8 values made from random floats by rcuda's conversion on the host, then copied.
Operand fp8_row_major(
    int64_t rows, int64_t cols, DType dtype, const View& view = [](const Tensor& t) { return t; }) {
  const Tensor x = to(random_tensor({rows, cols}, DType::Float32, -3, 3), dtype);
  return {view(x), view(on_cuda(x))};
}

// [k, n] column-major: the transpose of a row-major [n, k] matrix, made on each device.
Operand fp8_column_major(int64_t k, int64_t n, DType dtype) {
  return fp8_row_major(n, k, dtype, [](const Tensor& t) { return t.t(); });
}

Operand scale(double value) {
  const Tensor s = test::tensor_of({value}, {}, DType::Float32);
  return {s, on_cuda(s)};
}

// Hopper's fp8 tensor cores accumulate with about 14 mantissa bits, not float32's 24, so the
// error of an element scales with the terms it sums, not with its own value: an element that
// cancels to -0.56 was off by 0.031 at K = 512 on the H200 (terms up to 9 * 0.7), 2^-14.7 of
// sum_k |a_ik b_kj| sa sb. Element-wise bound: 2^-12 of that sum (the componentwise GEMM bound
// with the accumulator's precision, 6x the worst error seen) plus the output dtype's rounding;
// norm-wise: 2^-10 * sqrt(K) / 10 at least the dtype's backend tolerance.
void expect_scaled_mm(const Operand& a, const Operand& b, DType out_dtype) {
  const double sa_value = 0.37, sb_value = 1.9;
  const Operand sa = scale(sa_value), sb = scale(sb_value);
  const Tensor got = scaled_mm(a.cuda, b.cuda, sa.cuda, sb.cuda, out_dtype);
  const Tensor expected = scaled_mm(a.cpu, b.cpu, sa.cpu, sb.cpu, out_dtype);
  const std::string what = shape_str(a.cpu.shape()) + " " + dtype_name(a.cpu.dtype()) + " @ " +
                           shape_str(b.cpu.shape()) + " " + dtype_name(b.cpu.dtype()) + " -> " +
                           dtype_name(out_dtype);
  ASSERT_EQ(got.dtype(), out_dtype) << what;
  ASSERT_EQ(got.shape(), expected.shape()) << what;
  const std::vector<double> g = values(got), e = test::to_doubles(expected);
  const std::vector<double> terms =
      test::to_doubles(matmul(abs(to(a.cpu, DType::Float64)), abs(to(b.cpu, DType::Float64))));
  const double rounding = test::backend_tolerance(out_dtype);
  for (size_t i = 0; i < e.size(); ++i) {
    const double bound =
        std::ldexp(terms[i] * sa_value * sb_value, -12) + rounding * std::fabs(e[i]);
    ASSERT_LE(std::fabs(g[i] - e[i]), bound)
        << what << ": element " << i << " " << g[i] << " vs " << e[i];
  }
  const double k = static_cast<double>(a.cpu.size(1));
  EXPECT_LE(normwise_error(g, e), std::max(std::sqrt(k) / 10240.0, rounding)) << what;
}

TEST(CudaScaledMmTest, MatchesTheCpuForEveryOutDtypeAndFloat8Pair) {
  RCUDA_REQUIRE_CUDA();
  if (!fp8_supported()) GTEST_SKIP() << "fp8 needs compute capability 8.9 or newer";
  const std::vector<Shape> mkn = {{16, 16, 16}, {1, 64, 32}, {7, 32, 48}, {256, 512, 384}};
  const std::vector<std::pair<DType, DType>> pairs = {
      {kE4M3, kE4M3}, {kE4M3, kE5M2}, {kE5M2, kE4M3}};
  for (DType out_dtype : {DType::BFloat16, DType::Float16, DType::Float32})
    for (const auto& [da, db] : pairs)
      for (const Shape& s : mkn)
        expect_scaled_mm(fp8_row_major(s[0], s[1], da), fp8_column_major(s[1], s[2], db),
                         out_dtype);
}

// A bias in cuBLASLt's epilogue (16-bit outputs) or added after (float32), and scales that are
// elements of a vector (not 16-byte aligned, which cuBLASLt refuses: they are copied first).
TEST(CudaScaledMmTest, BiasAndMisalignedScalesMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  if (!fp8_supported()) GTEST_SKIP() << "fp8 needs compute capability 8.9 or newer";
  const Operand a = fp8_row_major(40, 64, kE4M3), b = fp8_column_major(64, 96, kE4M3);
  const Tensor scales = test::tensor_of({0.37, 1.9, 0.5}, {3}, DType::Float32);
  const Tensor scales_gpu = on_cuda(scales);
  for (DType out_dtype : {DType::BFloat16, DType::Float16, DType::Float32}) {
    const Tensor bias = test::random_tensor({96}, out_dtype, -4, 4);
    const Tensor got = scaled_mm(a.cuda, b.cuda, scales_gpu.slice(0, 1, 2),
                                 scales_gpu.slice(0, 2, 3), out_dtype, on_cuda(bias));
    const Tensor expected =
        scaled_mm(a.cpu, b.cpu, scales.slice(0, 1, 2), scales.slice(0, 2, 3), out_dtype, bias);
    const std::vector<double> g = values(got), e = test::to_doubles(expected);
    const std::vector<double> terms =
        test::to_doubles(matmul(abs(to(a.cpu, DType::Float64)), abs(to(b.cpu, DType::Float64))));
    for (size_t i = 0; i < e.size(); ++i)
      ASSERT_LE(std::fabs(g[i] - e[i]), std::ldexp(terms[i] * 1.9 * 0.5, -12) +
                                            test::backend_tolerance(out_dtype) * std::fabs(e[i]))
          << dtype_name(out_dtype) << " element " << i << " " << g[i] << " vs " << e[i];
  }
}

TEST(CudaScaledMmTest, StridedAndMisalignedOperandsAreRepacked) {
  RCUDA_REQUIRE_CUDA();
  if (!fp8_supported()) GTEST_SKIP() << "fp8 needs compute capability 8.9 or newer";
  // a: leading dimension 80 (aligned) and 40 (not a multiple of 16), first element at byte 1.
  expect_scaled_mm(fp8_row_major(9, 80, kE4M3, [](const Tensor& t) { return t.slice(1, 16, 48); }),
                   fp8_column_major(32, 16, kE4M3), DType::Float32);
  expect_scaled_mm(fp8_row_major(9, 40, kE4M3, [](const Tensor& t) { return t.slice(1, 1, 33); }),
                   fp8_column_major(32, 16, kE4M3), DType::BFloat16);
  // b: column-major with leading dimension 40, first element at byte 3.
  expect_scaled_mm(
      fp8_row_major(5, 32, kE4M3),
      fp8_row_major(48, 40, kE5M2, [](const Tensor& t) { return t.slice(1, 3, 35).t(); }),
      DType::Float16);
}

TEST(CudaScaledMmTest, ErrorsOnTheGpu) {
  RCUDA_REQUIRE_CUDA();
  const Operand a = fp8_row_major(8, 32, kE4M3), b = fp8_column_major(32, 16, kE4M3);
  const Operand one = scale(1.0);
  if (!fp8_supported()) {
    const std::string message =
        error_message([&] { scaled_mm(a.cuda, b.cuda, one.cuda, one.cuda); });
    EXPECT_THROW(scaled_mm(a.cuda, b.cuda, one.cuda, one.cuda), DeviceError);
    EXPECT_NE(message.find("compute capability"), std::string::npos) << message;
  }
  // Wrong layouts, as on the CPU.
  const Operand b_row_major = fp8_row_major(32, 16, kE4M3);
  EXPECT_THROW(scaled_mm(a.cuda, b_row_major.cuda, one.cuda, one.cuda), ValueError);
  const std::string layout_message =
      error_message([&] { scaled_mm(a.cuda, b_row_major.cuda, one.cuda, one.cuda); });
  EXPECT_NE(layout_message.find("column-major"), std::string::npos) << layout_message;
  EXPECT_THROW(scaled_mm(fp8_column_major(8, 32, kE4M3).cuda, b.cuda, one.cuda, one.cuda),
               ValueError);
  // Sizes not multiples of 16.
  EXPECT_THROW(scaled_mm(fp8_row_major(8, 24, kE4M3).cuda, fp8_column_major(24, 16, kE4M3).cuda,
                         one.cuda, one.cuda),
               ShapeError);
  EXPECT_THROW(scaled_mm(a.cuda, fp8_column_major(32, 20, kE4M3).cuda, one.cuda, one.cuda),
               ShapeError);
  // dtypes and devices.
  const Tensor a16 = on_cuda(random_tensor({8, 32}, DType::Float16));
  const Tensor b16 = on_cuda(random_tensor({16, 32}, DType::Float16)).t();
  EXPECT_THROW(scaled_mm(a16, b16, one.cuda, one.cuda), DTypeError);
  EXPECT_THROW(scaled_mm(fp8_row_major(8, 32, kE5M2).cuda, fp8_column_major(32, 16, kE5M2).cuda,
                         one.cuda, one.cuda),
               DTypeError);
  EXPECT_THROW(scaled_mm(a.cuda, b.cuda, one.cpu, one.cuda), DeviceError);
  EXPECT_THROW(scaled_mm(a.cuda, b.cpu, one.cuda, one.cuda), DeviceError);
  EXPECT_THROW(matmul(a.cuda, fp8_row_major(32, 16, kE4M3).cuda), DTypeError);
}

}  // namespace
}  // namespace rcuda
