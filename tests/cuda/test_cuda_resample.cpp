// CUDA pad and interpolate against the CPU backend (itself checked against double loops in
// tests/ops/test_pad.cpp and test_interpolate.cpp and against central differences in
// tests/autograd/test_grad_resample.cpp): every mode, forward and input gradient, float32,
// float16, bfloat16 and float64, contiguous, channels-last and strided inputs. The half types
// run against the CPU in float32 on the same rounded inputs, the CPU's result then rounded to
// the half type. Both backends pick their taps with the same formulas (src/backend/
// resample_index.h, no fused multiply-adds), so nearest modes and pads agree exactly.
// Tolerances (relative to max(1, |x|)): float32 1e-5 (the GPU sums gradients in float32, the
// CPU in float64), float64 1e-12, the half types one or two units of their last place.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/layer_test_util.h"
#include "rcuda/autograd.h"
#include "rcuda/ops/resample.h"
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

double tol(DType d) {
  switch (d) {
    case DType::Float32:
      return 1e-5;
    case DType::Float64:
      return 1e-12;
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1.6e-2;
    default:
      return 0;
  }
}

struct Pair {
  Tensor gpu, cpu;
};

Pair random_pair(const Shape& shape, DType dtype, Layout layout) {
  const Tensor rounded = test::random_tensor(shape, dtype);
  const Tensor cpu = test::tensor_of(test::to_doubles(rounded), shape, reference_dtype(dtype));
  return {in_layout_on(rounded, layout, kCuda), in_layout_on(cpu, layout, kCpu)};
}

::testing::AssertionResult close(const Tensor& gpu, const Tensor& cpu, DType dtype) {
  if (!gpu.defined() || !cpu.defined()) return ::testing::AssertionFailure() << "undefined result";
  if (!gpu.device().is_cuda()) return ::testing::AssertionFailure() << "result not on the GPU";
  if (gpu.shape() != cpu.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_str(gpu.shape()) << " vs " << shape_str(cpu.shape());
  for (int64_t d = 0; d < gpu.dim(); ++d)
    if (gpu.shape()[d] > 1 && gpu.strides()[d] != cpu.strides()[d])
      return ::testing::AssertionFailure()
             << "strides " << shape_str(gpu.strides()) << " vs " << shape_str(cpu.strides());
  std::vector<double> expected = values(cpu);
  if (is_reduced_float(dtype)) expected = test::rounded_to(expected, dtype);
  return test::all_close(values(gpu), expected, tol(dtype));
}

struct PadCase {
  const char* mode;
  Shape shape;
  std::vector<int64_t> padding;
};

TEST(CudaPad, ForwardAndBackwardMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  const std::vector<PadCase> cases = {
      {"reflect", {2, 3, 17}, {5, 3}},
      {"reflect", {2, 3, 9, 8}, {3, 2, 1, 4}},
      {"reflect", {3, 6, 5}, {2, -1, 4, 4}},
      {"reflect", {1, 2, 3, 4, 5}, {1, 2, 2, 1, 1, 2}},
      {"replicate", {2, 4, 3}, {6, 2}},
      {"replicate", {2, 5, 6, 7}, {4, 1, 2, 5}},
      {"replicate", {2, 1, 2, 3, 4}, {2, 1, 1, 3, 2, 2}},
      {"circular", {2, 3, 8}, {8, 3}},
      {"circular", {2, 40, 6, 5}, {5, 2, 3, -2}},
      {"constant", {2, 3, 9, 8}, {1, 2, -1, 3}},
      {"constant", {0, 3, 4, 4}, {1, 1}},
  };
  for (const PadCase& c : cases) {
    for (DType dtype : test::floating_dtypes()) {
      for (Layout layout : all_layouts()) {
        if (layout == Layout::ChannelsLast && c.shape.size() < 3) continue;
        SCOPED_TRACE(std::string(c.mode) + " " + shape_str(c.shape) + " " + shape_str(c.padding) +
                     " " + dtype_name(dtype) + " " + layout_name(layout));
        const Pair x = random_pair(c.shape, dtype, layout);
        const double value = 0.5;
        const std::optional<double> v =
            std::string(c.mode) == "constant" ? std::optional<double>(value) : std::nullopt;
        EXPECT_TRUE(close(ops::pad(x.gpu, c.padding, c.mode, v),
                          ops::pad(x.cpu, c.padding, c.mode, v), dtype))
            << "out";
        const ops::PadPlan pg = ops::pad_plan(x.gpu, c.padding, c.mode, v);
        const ops::PadPlan pc = ops::pad_plan(x.cpu, c.padding, c.mode, v);
        const Pair g = random_pair(pc.output_shape, dtype, layout);
        EXPECT_TRUE(close(ops::pad_backward(g.gpu, pg), ops::pad_backward(g.cpu, pc), dtype))
            << "grad_input";
      }
    }
  }
}

// Integer and bool inputs pad exactly (the forward is a copy).
TEST(CudaPad, IntegerInputs) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Bool, DType::UInt8, DType::Int32, DType::Int64}) {
    const Tensor x = test::random_tensor({2, 3, 5, 6}, dtype, 0, 9);
    for (const char* mode : {"reflect", "replicate", "circular", "constant"}) {
      SCOPED_TRACE(std::string(mode) + " " + dtype_name(dtype));
      EXPECT_TRUE(test::all_close(values(ops::pad(to(x, kCuda), {2, 3, 1, 4}, mode)),
                                  values(ops::pad(x, {2, 3, 1, 4}, mode)), 0));
    }
  }
}

struct InterpolateCase {
  const char* mode;
  Shape shape;
  std::vector<int64_t> size;
  std::vector<double> scale_factor;
  std::optional<bool> align_corners;
  std::optional<bool> recompute;
};

TEST(CudaInterpolate, ForwardAndBackwardMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  const std::vector<InterpolateCase> cases = {
      {"nearest", {2, 3, 5, 7}, {11, 16}, {}, {}, {}},
      {"nearest", {2, 3, 13, 9}, {4, 5}, {}, {}, {}},
      {"nearest", {2, 3, 6, 5}, {}, {2}, {}, {}},
      {"nearest", {2, 3, 6, 5}, {}, {1.7, 0.45}, {}, {}},
      {"nearest", {2, 3, 6, 5}, {}, {1.7, 0.45}, {}, true},
      {"nearest", {2, 4, 19}, {7}, {}, {}, {}},
      {"nearest-exact", {2, 3, 5, 7}, {11, 16}, {}, {}, {}},
      {"nearest-exact", {2, 3, 13, 9}, {}, {0.3, 0.7}, {}, {}},
      {"bilinear", {2, 3, 5, 7}, {11, 16}, {}, false, {}},
      {"bilinear", {2, 3, 5, 7}, {11, 16}, {}, true, {}},
      {"bilinear", {2, 3, 13, 9}, {4, 5}, {}, false, {}},
      {"bilinear", {2, 3, 13, 9}, {4, 5}, {}, true, {}},
      {"bilinear", {1, 40, 6, 6}, {}, {1.5, 2.5}, {}, {}},
      {"bilinear", {2, 2, 1, 6}, {1, 9}, {}, true, {}},
      {"linear", {2, 3, 9}, {20}, {}, false, {}},
      {"linear", {2, 3, 20}, {9}, {}, true, {}},
      {"area", {2, 3, 9, 7}, {4, 3}, {}, {}, {}},
      {"bilinear", {0, 3, 4, 4}, {8}, {}, {}, {}},
  };
  for (const InterpolateCase& c : cases) {
    for (DType dtype : test::floating_dtypes()) {
      for (Layout layout : all_layouts()) {
        SCOPED_TRACE(std::string(c.mode) + " " + shape_str(c.shape) + " " + dtype_name(dtype) +
                     " " + layout_name(layout));
        const Pair x = random_pair(c.shape, dtype, layout);
        auto plan = [&](const Tensor& t) {
          return ops::interpolate_plan(t, c.size, c.scale_factor, c.mode, c.align_corners,
                                       c.recompute);
        };
        const ops::InterpolatePlan pg = plan(x.gpu), pc = plan(x.cpu);
        EXPECT_TRUE(
            close(ops::interpolate_forward(x.gpu, pg), ops::interpolate_forward(x.cpu, pc), dtype))
            << "out";
        if (pc.area) continue;
        const Pair g = random_pair(pc.output_shape, dtype, layout);
        EXPECT_TRUE(close(ops::interpolate_backward(g.gpu, pg),
                          ops::interpolate_backward(g.cpu, pc), dtype))
            << "grad_input";
      }
    }
  }
}

// A larger input than the table's, over the grid-stride loops.
TEST(CudaInterpolate, LargeInputsMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    SCOPED_TRACE(layout_name(layout));
    const Pair x = random_pair({8, 32, 31, 33}, DType::Float32, layout);
    for (const char* mode : {"nearest", "bilinear"}) {
      const ops::InterpolatePlan pg =
          ops::interpolate_plan(x.gpu, {64, 50}, {}, mode, std::nullopt, std::nullopt);
      const ops::InterpolatePlan pc =
          ops::interpolate_plan(x.cpu, {64, 50}, {}, mode, std::nullopt, std::nullopt);
      EXPECT_TRUE(close(ops::interpolate_forward(x.gpu, pg), ops::interpolate_forward(x.cpu, pc),
                        DType::Float32));
      const Pair g = random_pair(pc.output_shape, DType::Float32, layout);
      EXPECT_TRUE(close(ops::interpolate_backward(g.gpu, pg), ops::interpolate_backward(g.cpu, pc),
                        DType::Float32));
    }
  }
}

// The recorded gradient reaches a CUDA leaf through the public entry points.
TEST(CudaResample, AutogradOnTheGpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor host = test::random_tensor({2, 3, 5, 6}, DType::Float32);
  Tensor xg = to(host, kCuda), xc = host;
  xg.requires_grad_();
  xc.requires_grad_();
  auto loss = [](const Tensor& x) {
    return sum(mul(interpolate(pad(x, {1, 2, 2, 1}, "reflect"), {9, 13}, {}, "bilinear", true),
                   interpolate(x, {9, 13}, {}, "nearest")));
  };
  autograd::backward({loss(xg)});
  autograd::backward({loss(xc)});
  ASSERT_TRUE(xg.grad().defined());
  EXPECT_TRUE(test::all_close(values(xg.grad()), values(xc.grad()), 1e-5));
}

}  // namespace
}  // namespace rcuda
