// CUDA activations, unary_grad, dropout and index_add against the CPU backend (itself checked
// against double formulas and central differences in tests/ops/test_nn_kernels_*.cpp): fresh
// random inputs on the host, the op on both devices, the results compared within
// backend_tolerance (float32 1e-5, the half types one rounding, float64 1e-12). The dropout mask
// must be identical on both devices for the same seed.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rcuda/ops/nn.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::backend_tolerance;
using test::floating_dtypes;
using test::kCpu;
using test::kCuda;
using test::on_cuda;
using test::random_tensor;
using test::values;

// x's values on the GPU in a transposed (non-contiguous) layout; x 2-D.
Tensor transposed_on_cuda(const Tensor& x) { return on_cuda(ops::contiguous(x.t())).t(); }

Tensor forward(UnaryOp op, const Tensor& x, const UnaryArgs& args) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).unary(op, out, x, args);
  return out;
}

struct OpCase {
  std::string name;
  UnaryOp op;
  UnaryArgs args;
  double low, high;
};

std::vector<OpCase> op_cases() {
  UnaryArgs pow_args, clamp_args, act_args, hardtanh_args;
  pow_args.exponent = 2.5;
  clamp_args.has_min = clamp_args.has_max = true;
  clamp_args.min = -0.5;
  clamp_args.max = 0.7;
  act_args.negative_slope = 0.2;
  act_args.alpha = 0.7;
  act_args.beta = 2;
  act_args.threshold = 3;
  hardtanh_args.min = -0.8;
  hardtanh_args.max = 1.2;
  const UnaryArgs none;
  return {{"neg", UnaryOp::Neg, none, -3, 3},
          {"abs", UnaryOp::Abs, none, -3, 3},
          {"sign", UnaryOp::Sign, none, -3, 3},
          {"exp", UnaryOp::Exp, none, -3, 3},
          {"expm1", UnaryOp::Expm1, none, -2, 2},
          {"log", UnaryOp::Log, none, 0.1, 4},
          {"log1p", UnaryOp::Log1p, none, -0.8, 3},
          {"sqrt", UnaryOp::Sqrt, none, 0.1, 4},
          {"rsqrt", UnaryOp::Rsqrt, none, 0.2, 4},
          {"sin", UnaryOp::Sin, none, -3, 3},
          {"cos", UnaryOp::Cos, none, -3, 3},
          {"tanh", UnaryOp::Tanh, none, -3, 3},
          {"sigmoid", UnaryOp::Sigmoid, none, -5, 5},
          {"relu", UnaryOp::Relu, none, -2, 2},
          {"gelu", UnaryOp::Gelu, none, -3, 3},
          {"gelu_tanh", UnaryOp::GeluTanh, none, -3, 3},
          {"silu", UnaryOp::Silu, none, -4, 4},
          {"floor", UnaryOp::Floor, none, -3, 3},
          {"ceil", UnaryOp::Ceil, none, -3, 3},
          {"round", UnaryOp::Round, none, -3, 3},
          {"pow", UnaryOp::PowScalar, pow_args, 0.1, 3},
          {"clamp", UnaryOp::Clamp, clamp_args, -2, 2},
          {"leaky_relu", UnaryOp::LeakyRelu, act_args, -2, 2},
          {"elu", UnaryOp::Elu, act_args, -3, 2},
          {"softplus", UnaryOp::Softplus, act_args, -3, 3},
          {"hardtanh", UnaryOp::Hardtanh, hardtanh_args, -2, 2}};
}

TEST(CudaNnActivation, MatchesCpuForEveryDtypeAndLayout) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = random_tensor({65, 33}, dtype, -4, 4);
    const Tensor xt = test::transposed_copy(random_tensor({40, 17}, dtype, -4, 4));
    for (const Tensor& in : {x, xt}) {
      const Tensor d = on_cuda(in);
      const double tol = backend_tolerance(dtype);
      EXPECT_TRUE(
          test::all_close(values(ops::leaky_relu(d, 0.3)), values(ops::leaky_relu(in, 0.3)), tol));
      EXPECT_TRUE(test::all_close(values(ops::elu(d, 0.5)), values(ops::elu(in, 0.5)), tol));
      EXPECT_TRUE(
          test::all_close(values(ops::softplus(d, 2, 3)), values(ops::softplus(in, 2, 3)), tol));
      EXPECT_TRUE(test::all_close(values(ops::hardtanh(d, -0.5, 2)),
                                  values(ops::hardtanh(in, -0.5, 2)), tol));
    }
  }
  const Tensor i = random_tensor({100}, DType::Int32, -10, 10);
  EXPECT_EQ(values(ops::hardtanh(on_cuda(i), -3.5, 4)), values(ops::hardtanh(i, -3.5, 4)));
}

TEST(CudaNnUnaryGrad, MatchesCpuForEveryOpAndDtype) {
  RCUDA_REQUIRE_CUDA();
  for (const OpCase& c : op_cases()) {
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(c.name + " " + dtype_name(dtype));
      // Contiguous (the 16-byte path, past one wave of blocks) and transposed (strided path).
      for (const Shape& shape : {Shape{300, 257}, Shape{1}, Shape{0, 3}}) {
        const Tensor x = random_tensor(shape, dtype, c.low, c.high);
        const Tensor g = random_tensor(shape, dtype, -2, 2);
        const Tensor cpu = ops::unary_grad(c.op, g, x, forward(c.op, x, c.args), c.args);
        const Tensor dx = on_cuda(x);
        const Tensor gpu = ops::unary_grad(c.op, on_cuda(g), dx, forward(c.op, dx, c.args), c.args);
        EXPECT_EQ(gpu.device(), kCuda);
        EXPECT_TRUE(test::all_close(values(gpu), values(cpu), backend_tolerance(dtype)));
      }
      // Non-contiguous device operands (the strided path).
      const Tensor xt = random_tensor({31, 9}, dtype, c.low, c.high);
      const Tensor gt = random_tensor({31, 9}, dtype, -2, 2);
      const Tensor dxt = transposed_on_cuda(xt), dgt = transposed_on_cuda(gt);
      ASSERT_FALSE(dxt.is_contiguous());
      const Tensor cpu = ops::unary_grad(c.op, gt, xt, forward(c.op, xt, c.args), c.args);
      const Tensor gpu = ops::unary_grad(c.op, dgt, dxt, forward(c.op, dxt, c.args), c.args);
      EXPECT_TRUE(test::all_close(values(gpu), values(cpu), backend_tolerance(dtype)));
    }
  }
}

TEST(CudaNnDropout, SameSeedSameMaskAndValuesOnBothDevices) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : floating_dtypes()) {
    for (int64_t n : {int64_t{1}, int64_t{4099}, int64_t{1} << 20}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " n " + std::to_string(n));
      const Tensor x = random_tensor({n + 1}, dtype);
      // A contiguous input and a misaligned one (offset by one element: the scalar path).
      for (const Tensor& in : {x.slice(0, 0, n), x.slice(0, 1, n + 1)}) {
        ops::manual_seed(2024);
        const auto [cpu_out, cpu_mask] = ops::dropout(in, 0.3);
        ops::manual_seed(2024);
        const Tensor d = on_cuda(x).slice(0, in.offset(), in.offset() + n);
        const auto [gpu_out, gpu_mask] = ops::dropout(d, 0.3);
        EXPECT_EQ(gpu_mask.device(), kCuda);
        EXPECT_EQ(values(gpu_mask), values(cpu_mask));
        EXPECT_EQ(values(gpu_out), values(cpu_out));  // one product each: bit-identical
        const Tensor g = random_tensor({n}, dtype);
        EXPECT_EQ(values(ops::dropout_backward(on_cuda(g), gpu_mask, 0.3)),
                  values(ops::dropout_backward(g, cpu_mask, 0.3)));
      }
    }
  }
  // 2-D, a transposed device input, p == 1, eval mode.
  const Tensor x = random_tensor({64, 48}, DType::Float32);
  ops::manual_seed(7);
  const auto [cpu_out, cpu_mask] = ops::dropout(x, 0.6);
  ops::manual_seed(7);
  const auto [gpu_out, gpu_mask] = ops::dropout(transposed_on_cuda(x), 0.6);
  EXPECT_EQ(values(gpu_mask), values(cpu_mask));
  EXPECT_EQ(values(gpu_out), values(cpu_out));
  EXPECT_EQ(values(ops::dropout(on_cuda(x), 1.0).first), std::vector<double>(64 * 48, 0.0));
  const Tensor d = on_cuda(x);
  EXPECT_TRUE(ops::dropout(d, 0.5, false).first.is_same(d));
}

TEST(CudaNnIndexAdd, MatchesCpuForEveryDtypeAndDim) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    for (int64_t dim : {0, 1, 2}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
      const Shape shape = {6, 33, 5};
      const double low = dtype == DType::UInt8 ? 0 : -5;
      const Tensor self = random_tensor(shape, dtype, low, 5);
      Shape src_shape = shape;
      src_shape[dim] = 40;
      const Tensor source = random_tensor(src_shape, dtype, low, 5);
      // Every target repeated: the atomics contend.
      const Tensor index = ops::remainder(ops::arange(0, 40, 1, DType::Int64), shape[dim]);
      const Tensor cpu = ops::index_add(self, dim, index, source);
      const Tensor gpu = ops::index_add(on_cuda(self), dim, on_cuda(index), on_cuda(source));
      // Integers add exactly whatever the order; floating sums differ by rounding order only.
      // float16/bfloat16 atomics round after every add (as torch's): each of the up to 7 adds
      // into an element (40 sources over 6 targets) rounds a running sum of at most 40 by half
      // an ulp, so the bound is 7 * 40 * eps / 2 in absolute terms.
      const bool half = dtype == DType::Float16 || dtype == DType::BFloat16;
      const double eps = dtype == DType::Float16 ? 0x1p-10 : 0x1p-7;
      const double tol = half                 ? 7 * 40 * eps / 2
                         : is_floating(dtype) ? 4 * backend_tolerance(dtype)
                                              : 0;
      EXPECT_TRUE(test::all_close(values(gpu), values(cpu), tol));
    }
  }
}

TEST(CudaNnIndexAdd, NonContiguousSelfAlphaOutOfRangeAndEmbedding) {
  RCUDA_REQUIRE_CUDA();
  const Tensor self = random_tensor({20, 70}, DType::Float32);
  const Tensor source = random_tensor({50, 70}, DType::Float32);
  const Tensor index = ops::remainder(ops::arange(0, 150, 3, DType::Int64), 20);
  const Tensor cpu = ops::clone(self);
  ops::index_add_(cpu, 0, index, source, 0.5);
  const Tensor gpu = transposed_on_cuda(self);
  ops::index_add_(gpu, 0, on_cuda(index), on_cuda(source), 0.5);
  EXPECT_TRUE(test::all_close(values(gpu), values(cpu), 4e-5));
  // On the GPU an out-of-range index is skipped and raised at the next synchronisation (the CPU
  // throws at once): the rest is added.
  const Tensor bad = test::tensor_of({0, 25, 3, -1}, {4}, DType::Int64);
  const Tensor rows = random_tensor({4, 70}, DType::Float64);
  const Tensor skipped = ops::zeros({20, 70}, {DType::Float64, kCuda});
  ops::index_add_(skipped, 0, on_cuda(bad), on_cuda(rows));
  try {
    cuda::synchronize(0);
    ADD_FAILURE() << "expected IndexError";
  } catch (const IndexError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("index_add: index 25 is out of bounds for dim 0 with size 20") !=
                    std::string::npos ||
                what.find("index_add: index -1 is out of bounds for dim 0 with size 20") !=
                    std::string::npos)
        << what;
  }
  const Tensor expected = ops::zeros({20, 70}, DType::Float64);
  ops::index_add_(expected, 0, test::tensor_of({0, 3}, {2}, DType::Int64),
                  ops::index_select(rows, 0, test::tensor_of({0, 2}, {2}, DType::Int64)));
  EXPECT_TRUE(test::all_close(values(skipped), values(expected), 1e-12));
  // The embedding gradient, with a padding row.
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor indices = ops::remainder(ops::arange(0, 2800, 7, DType::Int64), 97).view({100, 4});
    const Tensor grad_out = random_tensor({indices.shape()[0], 4, 64}, dtype);
    const Tensor cpu_grad = ops::embedding_backward(grad_out, indices, 97, 5);
    const Tensor gpu_grad = ops::embedding_backward(on_cuda(grad_out), on_cuda(indices), 97, 5);
    EXPECT_TRUE(test::all_close(values(gpu_grad), values(cpu_grad), 8 * backend_tolerance(dtype)));
  }
}

}  // namespace
}  // namespace rcuda
