// CUDA pools and norms against the CPU backend (itself checked against double loops and central
// differences in tests/ops/test_pool.cpp, test_norm.cpp and tests/autograd/
// test_grad_pool_norm.cpp): every layer, forward and input/parameter gradients, for float32,
// float16, bfloat16 and float64, contiguous, channels-last and strided inputs. float16 and
// bfloat16 run against the CPU in float32 on the same rounded inputs, the GPU's result then
// compared after the CPU's is rounded to the half type. Batch norm runs both through cuDNN's
// graph API (where cuDNN takes the call) and through rcuda's own kernels.
//
// Inputs are multiples of 1/16 below 8 in magnitude, distinct within each (n, c) plane, so that
// every dtype holds them exactly and every max pool has one maximum per window (its index is
// then defined and compared exactly).
// Tolerances (relative to max(1, |x|)): float32 1e-5 for one-window results and 1e-4 for sums
// over a batch (the GPU accumulates in float32 where the CPU uses double); float64 1e-11; the
// half types two units of their last place (the two roundings of the same float32 result).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "ops/layer_test_util.h"
#include "rcuda/autograd.h"
#include "rcuda/ops/norm.h"
#include "rcuda/ops/pool.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::all_layouts;
using test::in_layout_on;
using test::kCpu;
using test::kCuda;
using test::Layout;
using test::layout_name;
using test::values;

using test::reference_dtype;

double tol(DType d, bool sum = false) {
  switch (d) {
    case DType::Float32:
      return sum ? 1e-4 : 1e-5;
    case DType::Float64:
      return 1e-11;
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1.6e-2;
    default:
      return 0;
  }
}

// Values k / 16, |k| <= 128, a permutation within each plane of the last two dims.
std::vector<double> plane_distinct(const Shape& shape) {
  const int64_t plane = shape.size() >= 2 ? shape[shape.size() - 1] * shape[shape.size() - 2] : 1;
  const int64_t spatial = shape.size() >= 3 ? plane : shape.back();
  const int64_t n = numel(shape), per = std::max<int64_t>(1, std::min<int64_t>(spatial, 256));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t start = 0; start < n; start += per) {
    std::vector<int64_t> k(static_cast<size_t>(std::min(per, n - start)));
    std::iota(k.begin(), k.end(), -static_cast<int64_t>(k.size()) / 2);
    std::shuffle(k.begin(), k.end(), test::rng());
    for (size_t i = 0; i < k.size(); ++i) v[start + i] = static_cast<double>(k[i]) / 16.0;
  }
  return v;
}

// The same values as `dtype` on the GPU in `layout`, and as the reference dtype on the CPU.
struct Pair {
  Tensor gpu, cpu;
};

Pair make_pair_of(const std::vector<double>& v, const Shape& shape, DType dtype, Layout layout) {
  const Tensor rounded = test::tensor_of(v, shape, dtype);
  const Tensor cpu = test::tensor_of(test::to_doubles(rounded), shape, reference_dtype(dtype));
  return {in_layout_on(rounded, layout, kCuda), in_layout_on(cpu, layout, kCpu)};
}

Pair random_pair(const Shape& shape, DType dtype, Layout layout, double low = -2, double high = 2) {
  const Tensor r = test::random_tensor(shape, DType::Float64, low, high);
  return make_pair_of(test::to_doubles(r), shape, dtype, layout);
}

::testing::AssertionResult close(const Tensor& gpu, const Tensor& cpu, DType dtype,
                                 bool sum = false, double scale = 1) {
  if (!gpu.defined() || !cpu.defined()) return ::testing::AssertionFailure() << "undefined result";
  if (!gpu.device().is_cuda()) return ::testing::AssertionFailure() << "result not on the GPU";
  if (gpu.shape() != cpu.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_str(gpu.shape()) << " vs " << shape_str(cpu.shape());
  std::vector<double> expected = values(cpu);
  if (is_reduced_float(dtype) && gpu.dtype() == dtype) expected = test::rounded_to(expected, dtype);
  return test::all_close(values(gpu), expected, tol(dtype, sum) * scale);
}

// A normalisation's grad_input is invstd times a difference of means, so its rounding error
// grows with invstd: a channel of three samples (shape [3, 64, 1, 1]) can have a variance of
// 1e-3 and an invstd of 30. The bound scales with the largest (at least 1).
double invstd_scale(const Tensor& invstd) {
  double m = 1;
  for (double r : values(invstd)) m = std::max(m, r);
  return m;
}

// The GPU output keeps the layout the CPU's has (both follow the input's memory format).
::testing::AssertionResult same_format(const Tensor& gpu, const Tensor& cpu) {
  for (int64_t d = 0; d < gpu.dim(); ++d)
    if (gpu.shape()[d] > 1 && gpu.strides()[d] != cpu.strides()[d])
      return ::testing::AssertionFailure()
             << "strides " << shape_str(gpu.strides()) << " vs " << shape_str(cpu.strides());
  return ::testing::AssertionSuccess();
}

struct PoolCase {
  std::string name;
  ops::PoolOptions options;
  Shape shape;
};

std::vector<PoolCase> pool_cases() {
  std::vector<PoolCase> v;
  auto add = [&](const std::string& name, const ops::PoolOptions& o, const Shape& s) {
    v.push_back({name, o, s});
  };
  add("max 3/2/1", ops::max_pool_options(2, {3}, {2}, {1}, {1}, false), {2, 3, 9, 8});
  add("max ceil dilated", ops::max_pool_options(2, {3, 2}, {2, 1}, {1, 1}, {2, 1}, true),
      {2, 5, 11, 13});
  add("max overlapping", ops::max_pool_options(2, {3}, {1}, {1}, {1}, false), {1, 4, 7, 7});
  add("max no batch", ops::max_pool_options(2, {2}, {}, {0}, {1}, true), {3, 7, 5});
  add("max 1d", ops::max_pool_options(1, {3}, {2}, {1}, {2}, true), {3, 4, 33});
  add("max many channels", ops::max_pool_options(2, {2}, {2}, {0}, {1}, false), {2, 70, 6, 6});
  // Windows that do not overlap take the scatter backward (Note [Max pooling backward by
  // scatter]): with padding and dilation, and with inputs that no window reaches.
  add("max disjoint padded dilated", ops::max_pool_options(2, {2}, {3}, {1}, {2}, false),
      {2, 3, 10, 11});
  add("max disjoint gaps", ops::max_pool_options(2, {2, 1}, {4, 3}, {0, 0}, {1, 1}, true),
      {2, 3, 9, 10});
  add("avg include pad", ops::avg_pool_options(2, {3}, {2}, {1}, false, true, std::nullopt),
      {2, 3, 9, 8});
  add("avg ceil overhang", ops::avg_pool_options(2, {3}, {2}, {1}, true, true, std::nullopt),
      {2, 3, 6, 6});
  add("avg exclude pad",
      ops::avg_pool_options(2, {3, 2}, {2, 2}, {1, 1}, true, false, std::nullopt), {2, 4, 7, 5});
  add("avg divisor", ops::avg_pool_options(2, {2, 3}, {1, 2}, {0, 1}, false, true, 5),
      {1, 3, 6, 7});
  add("avg 1d", ops::avg_pool_options(1, {4}, {3}, {2}, true, true, std::nullopt), {2, 3, 20});
  add("adaptive avg", ops::adaptive_pool_options(PoolOp::Avg, {3, 4}), {2, 3, 7, 9});
  add("adaptive avg up", ops::adaptive_pool_options(PoolOp::Avg, {5, 7}), {2, 3, 3, 5});
  add("adaptive avg global", ops::adaptive_pool_options(PoolOp::Avg, {1}), {3, 40, 5, 5});
  add("adaptive max", ops::adaptive_pool_options(PoolOp::Max, {3, 4}), {2, 3, 7, 9});
  add("adaptive max up", ops::adaptive_pool_options(PoolOp::Max, {6, 5}), {2, 2, 3, 4});
  return v;
}

TEST(CudaPool, ForwardAndBackwardMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  for (const PoolCase& c : pool_cases()) {
    const bool batched = static_cast<int>(c.shape.size()) == c.options.spatial_dims + 2;
    for (DType dtype : test::floating_dtypes()) {
      for (Layout layout : all_layouts()) {
        if (layout == Layout::ChannelsLast && !batched) continue;
        SCOPED_TRACE(c.name + " " + shape_str(c.shape) + " " + dtype_name(dtype) + " " +
                     layout_name(layout));
        const Pair x = make_pair_of(plane_distinct(c.shape), c.shape, dtype, layout);
        for (bool with_indices : {false, true}) {
          const ops::PoolForward cpu = ops::pool_forward(x.cpu, c.options, with_indices);
          const ops::PoolForward gpu = ops::pool_forward(x.gpu, c.options, with_indices);
          EXPECT_TRUE(close(gpu.out, cpu.out, dtype)) << "out";
          EXPECT_TRUE(same_format(gpu.out, cpu.out));
          EXPECT_EQ(gpu.channels_last, cpu.channels_last);
          if (cpu.indices.defined()) {
            EXPECT_TRUE(test::all_close(values(gpu.indices), values(cpu.indices), 0)) << "indices";
            EXPECT_TRUE(same_format(gpu.indices, cpu.indices));
          }
        }
        const ops::PoolForward cpu = ops::pool_forward(x.cpu, c.options, true);
        const ops::PoolForward gpu = ops::pool_forward(x.gpu, c.options, true);
        const Pair g = random_pair(cpu.out.shape(), dtype, layout, -1, 1);
        const Tensor gc =
            ops::pool_backward(g.cpu, x.cpu.shape(), cpu.channels_last, cpu.indices, c.options);
        const Tensor gg =
            ops::pool_backward(g.gpu, x.gpu.shape(), gpu.channels_last, gpu.indices, c.options);
        EXPECT_TRUE(close(gg, gc, dtype)) << "grad_input";
        EXPECT_TRUE(same_format(gg, gc));
      }
    }
  }
}

// A larger input than the table's, over the grid-stride loops, for the fastest dtype paths.
TEST(CudaPool, LargeInputsMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    SCOPED_TRACE(layout_name(layout));
    const Shape shape = {8, 32, 15, 16};
    const Pair x = make_pair_of(plane_distinct(shape), shape, DType::Float32, layout);
    for (const ops::PoolOptions& o :
         {ops::max_pool_options(2, {3}, {2}, {1}, {1}, true),
          ops::max_pool_options(2, {2}, {2}, {0}, {1}, false),
          ops::avg_pool_options(2, {3}, {1}, {1}, false, false, std::nullopt),
          ops::adaptive_pool_options(PoolOp::Max, {4, 5})}) {
      const ops::PoolForward cpu = ops::pool_forward(x.cpu, o, true);
      const ops::PoolForward gpu = ops::pool_forward(x.gpu, o, true);
      EXPECT_TRUE(close(gpu.out, cpu.out, DType::Float32));
      const Pair g = random_pair(cpu.out.shape(), DType::Float32, layout);
      EXPECT_TRUE(close(ops::pool_backward(g.gpu, shape, gpu.channels_last, gpu.indices, o),
                        ops::pool_backward(g.cpu, shape, cpu.channels_last, cpu.indices, o),
                        DType::Float32));
    }
  }
}

// Per-channel tensors in float32 for the half types (the statistics dtype), else the dtype.
Pair channel_pair(int64_t channels, DType dtype, double low, double high) {
  return random_pair({channels}, is_reduced_float(dtype) ? DType::Float32 : dtype,
                     Layout::Contiguous, low, high);
}

struct CudnnSwitch {
  explicit CudnnSwitch(bool on) : saved(cuda::cudnn_batch_norm()) {
    cuda::set_cudnn_batch_norm(on);
  }
  ~CudnnSwitch() { cuda::set_cudnn_batch_norm(saved); }
  bool saved;
};

const std::vector<Shape>& norm_shapes() {
  static const std::vector<Shape> s = {{6, 5},          {4, 3, 17},      {2, 8, 5, 7},
                                       {16, 3, 16, 16}, {8, 40, 10, 10}, {3, 64, 1, 1},
                                       {2, 4, 3, 3, 3}};
  return s;
}

TEST(CudaBatchNorm, TrainingAndEvaluationMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  for (bool use_cudnn : {true, false}) {
    const CudnnSwitch cudnn(use_cudnn);
    for (const Shape& shape : norm_shapes()) {
      for (DType dtype : test::floating_dtypes()) {
        for (Layout layout : all_layouts()) {
          for (bool affine : {true, false}) {
            SCOPED_TRACE(std::string(use_cudnn ? "cudnn " : "kernels ") + shape_str(shape) + " " +
                         dtype_name(dtype) + " " + layout_name(layout) + (affine ? " affine" : ""));
            const int64_t c = shape[1];
            const Pair x = random_pair(shape, dtype, layout, -2, 3);
            const Pair w = affine ? channel_pair(c, dtype, 0.5, 1.5) : Pair{};
            const Pair b = affine ? channel_pair(c, dtype, -1, 1) : Pair{};
            const Pair rm = channel_pair(c, dtype, -1, 1), rv = channel_pair(c, dtype, 0.5, 2);
            for (bool training : {true, false}) {
              SCOPED_TRACE(training ? "training" : "evaluation");
              const ops::NormForward cpu =
                  ops::batch_norm_forward(x.cpu, rm.cpu, rv.cpu, w.cpu, b.cpu, training, 0.3, 1e-4);
              const ops::NormForward gpu =
                  ops::batch_norm_forward(x.gpu, rm.gpu, rv.gpu, w.gpu, b.gpu, training, 0.3, 1e-4);
              EXPECT_TRUE(close(gpu.out, cpu.out, dtype, true)) << "out";
              EXPECT_TRUE(same_format(gpu.out, cpu.out));
              const DType stats = reference_dtype(dtype);
              EXPECT_TRUE(close(gpu.mean, cpu.mean, stats, true)) << "mean";
              EXPECT_TRUE(close(gpu.invstd, cpu.invstd, stats, true)) << "invstd";
              EXPECT_TRUE(close(rm.gpu, rm.cpu, stats, true)) << "running_mean";
              EXPECT_TRUE(close(rv.gpu, rv.cpu, stats, true)) << "running_var";
              const Pair g = random_pair(shape, dtype, layout, -1, 1);
              const ops::NormGrads gc =
                  ops::batch_norm_backward(g.cpu, x.cpu, w.cpu, cpu.mean, cpu.invstd, training);
              const ops::NormGrads gg =
                  ops::batch_norm_backward(g.gpu, x.gpu, w.gpu, gpu.mean, gpu.invstd, training);
              EXPECT_TRUE(close(gg.grad_input, gc.grad_input, dtype, true,
                                training ? invstd_scale(cpu.invstd) : 1))
                  << "grad_input";
              EXPECT_TRUE(same_format(gg.grad_input, gc.grad_input));
              // Parameter gradients sum over the batch, in the weight's dtype (the input's
              // without one).
              EXPECT_TRUE(close(gg.grad_weight, gc.grad_weight, gg.grad_weight.dtype(), true))
                  << "grad_weight";
              EXPECT_TRUE(close(gg.grad_bias, gc.grad_bias, gg.grad_bias.dtype(), true))
                  << "grad_bias";
            }
          }
        }
      }
    }
  }
}

// Only some gradients asked for: the others stay undefined, the asked ones unchanged.
TEST(CudaBatchNorm, PartialGradients) {
  RCUDA_REQUIRE_CUDA();
  for (bool use_cudnn : {true, false}) {
    const CudnnSwitch cudnn(use_cudnn);
    for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
      SCOPED_TRACE(std::string(use_cudnn ? "cudnn " : "kernels ") + layout_name(layout));
      const Shape shape = {4, 8, 6, 6};
      const Pair x = random_pair(shape, DType::Float16, layout);
      const Pair w = channel_pair(8, DType::Float16, 0.5, 1.5);
      const ops::NormForward cpu = ops::batch_norm_forward(x.cpu, {}, {}, w.cpu, {}, true);
      const ops::NormForward gpu = ops::batch_norm_forward(x.gpu, {}, {}, w.gpu, {}, true);
      const Pair g = random_pair(shape, DType::Float16, layout);
      for (const std::array<bool, 3>& mask :
           {std::array<bool, 3>{true, false, false}, std::array<bool, 3>{false, true, true}}) {
        const ops::NormGrads gc =
            ops::batch_norm_backward(g.cpu, x.cpu, w.cpu, cpu.mean, cpu.invstd, true, mask);
        const ops::NormGrads gg =
            ops::batch_norm_backward(g.gpu, x.gpu, w.gpu, gpu.mean, gpu.invstd, true, mask);
        EXPECT_EQ(gg.grad_input.defined(), mask[0]);
        EXPECT_EQ(gg.grad_weight.defined(), mask[1]);
        if (mask[0]) {
          EXPECT_TRUE(close(gg.grad_input, gc.grad_input, DType::Float16, true));
        }
        if (mask[1]) {
          EXPECT_TRUE(close(gg.grad_weight, gc.grad_weight, DType::Float32, true));
        }
        if (mask[2]) {
          EXPECT_TRUE(close(gg.grad_bias, gc.grad_bias, DType::Float32, true));
        }
      }
    }
  }
}

// A contiguous input that starts one element past an aligned address (cuDNN's engines may need
// 16-byte operands: such calls run rcuda's kernels), then the same shape aligned again.
TEST(CudaBatchNorm, MisalignedInputs) {
  RCUDA_REQUIRE_CUDA();
  const CudnnSwitch cudnn(true);
  for (DType dtype : {DType::Float32, DType::Float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Shape shape = {4, 8, 5, 6};
    const Pair x = random_pair(shape, dtype, Layout::Contiguous);
    Tensor padded = ops::zeros({x.gpu.numel() + 1}, {dtype, kCuda});
    ops::copy_(padded.slice(0, 1, x.gpu.numel() + 1), ops::reshape(x.gpu, {x.gpu.numel()}));
    const Tensor misaligned = padded.slice(0, 1, x.gpu.numel() + 1).view(shape);
    const Pair w = channel_pair(8, dtype, 0.5, 1.5), b = channel_pair(8, dtype, -1, 1);
    const ops::NormForward cpu = ops::batch_norm_forward(x.cpu, {}, {}, w.cpu, b.cpu, true);
    for (const Tensor& in : {misaligned, x.gpu}) {
      const ops::NormForward gpu = ops::batch_norm_forward(in, {}, {}, w.gpu, b.gpu, true);
      EXPECT_TRUE(close(gpu.out, cpu.out, dtype, true));
      const Pair g = random_pair(shape, dtype, Layout::Contiguous);
      const ops::NormGrads gc =
          ops::batch_norm_backward(g.cpu, x.cpu, w.cpu, cpu.mean, cpu.invstd, true);
      const ops::NormGrads gg =
          ops::batch_norm_backward(g.gpu, in, w.gpu, gpu.mean, gpu.invstd, true);
      EXPECT_TRUE(close(gg.grad_input, gc.grad_input, dtype, true));
      EXPECT_TRUE(close(gg.grad_weight, gc.grad_weight, gg.grad_weight.dtype(), true));
    }
  }
}

TEST(CudaGroupNorm, ForwardAndBackwardMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  struct GroupCase {
    Shape shape;
    int64_t groups;
  };
  for (const GroupCase& gc : std::vector<GroupCase>{{{2, 6, 5}, 3},
                                                    {{3, 8, 7, 9}, 4},
                                                    {{2, 32, 16, 16}, 8},
                                                    {{4, 6}, 2},
                                                    {{1, 12, 40, 40}, 1},
                                                    {{2, 10, 3, 2, 2}, 5}}) {
    for (DType dtype : test::floating_dtypes()) {
      for (Layout layout : all_layouts()) {
        for (bool affine : {true, false}) {
          SCOPED_TRACE(shape_str(gc.shape) + " groups " + std::to_string(gc.groups) + " " +
                       dtype_name(dtype) + " " + layout_name(layout) + (affine ? " affine" : ""));
          const int64_t c = gc.shape[1];
          const Pair x = random_pair(gc.shape, dtype, layout, -1, 3);
          const Pair w = affine ? channel_pair(c, dtype, 0.5, 1.5) : Pair{};
          const Pair b = affine ? channel_pair(c, dtype, -1, 1) : Pair{};
          const ops::NormForward cpu = ops::group_norm_forward(x.cpu, gc.groups, w.cpu, b.cpu);
          const ops::NormForward gpu = ops::group_norm_forward(x.gpu, gc.groups, w.gpu, b.gpu);
          const DType stats = reference_dtype(dtype);
          EXPECT_TRUE(close(gpu.out, cpu.out, dtype, true)) << "out";
          EXPECT_TRUE(same_format(gpu.out, cpu.out));
          EXPECT_TRUE(close(gpu.mean, cpu.mean, stats, true)) << "mean";
          EXPECT_TRUE(close(gpu.invstd, cpu.invstd, stats, true)) << "rstd";
          const Pair g = random_pair(gc.shape, dtype, layout, -1, 1);
          const ops::NormGrads gcpu =
              ops::group_norm_backward(g.cpu, x.cpu, gc.groups, w.cpu, cpu.mean, cpu.invstd);
          const ops::NormGrads ggpu =
              ops::group_norm_backward(g.gpu, x.gpu, gc.groups, w.gpu, gpu.mean, gpu.invstd);
          EXPECT_TRUE(
              close(ggpu.grad_input, gcpu.grad_input, dtype, true, invstd_scale(cpu.invstd)))
              << "grad_input";
          EXPECT_TRUE(same_format(ggpu.grad_input, gcpu.grad_input));
          EXPECT_TRUE(close(ggpu.grad_weight, gcpu.grad_weight, ggpu.grad_weight.dtype(), true))
              << "grad_weight";
          EXPECT_TRUE(close(ggpu.grad_bias, gcpu.grad_bias, ggpu.grad_bias.dtype(), true))
              << "grad_bias";
        }
      }
    }
  }
}

TEST(CudaInstanceNorm, MatchesCpuWithRunningStats) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::floating_dtypes()) {
    for (Layout layout : all_layouts()) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + layout_name(layout));
      const Shape shape = {3, 5, 6, 7};
      const Pair x = random_pair(shape, dtype, layout, -1, 2);
      const Pair w = channel_pair(5, dtype, 0.5, 1.5), b = channel_pair(5, dtype, -1, 1);
      const Pair rm = channel_pair(5, dtype, -1, 1), rv = channel_pair(5, dtype, 0.5, 2);
      const DType stats = reference_dtype(dtype);
      for (bool use_input_stats : {true, false}) {
        const ops::NormForward cpu =
            ops::instance_norm_forward(x.cpu, rm.cpu, rv.cpu, w.cpu, b.cpu, use_input_stats, 0.2);
        const ops::NormForward gpu =
            ops::instance_norm_forward(x.gpu, rm.gpu, rv.gpu, w.gpu, b.gpu, use_input_stats, 0.2);
        EXPECT_TRUE(close(gpu.out, cpu.out, dtype, true)) << "out";
        EXPECT_TRUE(close(rm.gpu, rm.cpu, stats, true)) << "running_mean";
        EXPECT_TRUE(close(rv.gpu, rv.cpu, stats, true)) << "running_var";
        const Pair g = random_pair(shape, dtype, layout, -1, 1);
        const ops::NormGrads gc =
            ops::instance_norm_backward(g.cpu, x.cpu, w.cpu, cpu.mean, cpu.invstd, use_input_stats);
        const ops::NormGrads gg =
            ops::instance_norm_backward(g.gpu, x.gpu, w.gpu, gpu.mean, gpu.invstd, use_input_stats);
        EXPECT_TRUE(close(gg.grad_input, gc.grad_input, dtype, true)) << "grad_input";
        EXPECT_TRUE(close(gg.grad_weight, gc.grad_weight, gg.grad_weight.dtype(), true));
      }
    }
  }
}

// The recording entry points on the GPU: one backward through pool and norm layers gives the
// CPU's gradients for the input and the norm's parameters.
TEST(CudaPoolNorm, AutogradMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    SCOPED_TRACE(layout_name(layout));
    const Shape shape = {4, 6, 10, 9};
    const Pair x = random_pair(shape, DType::Float32, layout);
    const Pair w = channel_pair(6, DType::Float32, 0.5, 1.5),
               b = channel_pair(6, DType::Float32, -1, 1);
    auto loss = [](const Tensor& in, const Tensor& weight, const Tensor& bias) {
      const Tensor h = batch_norm(in, Tensor(), Tensor(), weight, bias, true);
      const Tensor p = max_pool2d(relu(h), {3}, {2}, {1});
      const Tensor q = adaptive_avg_pool2d(group_norm(p, 3, weight, bias), {2});
      return sum(mul(q, q));
    };
    for (const Tensor* t : {&x.cpu, &x.gpu, &w.cpu, &w.gpu, &b.cpu, &b.gpu}) t->requires_grad_();
    autograd::backward(loss(x.cpu, w.cpu, b.cpu));
    autograd::backward(loss(x.gpu, w.gpu, b.gpu));
    EXPECT_TRUE(close(x.gpu.grad(), x.cpu.grad(), DType::Float32, true)) << "x";
    EXPECT_TRUE(close(w.gpu.grad(), w.cpu.grad(), DType::Float32, true)) << "weight";
    EXPECT_TRUE(close(b.gpu.grad(), b.cpu.grad(), DType::Float32, true)) << "bias";
  }
}

}  // namespace
}  // namespace rcuda
