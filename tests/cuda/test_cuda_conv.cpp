// Convolutions on CUDA (cuDNN's graph API) against the CPU backend (oneDNN), which
// tests/nn/test_conv*.cpp check against double loops and central differences. For each case,
// dtype and memory format: the forward, the input, weight and bias gradients; the transposed
// convolution and conv1d through autograd; misaligned views; float64's refusal.
//
// References and tolerances. Every input is drawn in the dtype under test (so its values are
// exact in it) and the CPU reference runs in float32 on the same values. Each element of a
// convolution is a sum of products; `scale` is the same sum over their magnitudes (the pass run
// on |inputs| in float64), and every rounding error is a fraction of it, while a wrong result
// (a wrong tap, channel or group) is off by about scale itself. Allowed, times scale (with
// 1% of the largest scale as a floor, for sums whose terms are all zero):
//  - float32 without TF32: 1e-4. Both sides round float32 sums (about sqrt(K) * 6e-8 for K
//    terms); cuDNN may pick FFT or Winograd engines, whose errors spread over the output.
//  - float32 with TF32 (the default): 5e-3. Tensor cores round both factors to 10 mantissa bits
//    (relative error 2^-11 each, 2^-10 each when truncated).
//  - float16: 5e-3: products exact, float32 sums, the output rounded (2^-11), and engines that
//    reduce partial sums in float16 (REDUCED_PRECISION_REDUCTION) a few roundings more.
//  - bfloat16: 3e-2: the same with 8-bit mantissas (2^-8 per rounding).
// Robustness: nothing here depends on which engine cuDNN picks or on a cuDNN minor version
// beyond "some plan exists", and TF32 is set explicitly around each comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/conv_reference.h"
#include "rcuda/nn/conv.h"
#include "rcuda/ops/elementwise.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using autograd::TensorList;
using test::kCuda;
using test::on_cuda;
using test::random_tensor;
using test::values;

// Sets float32 convolutions' TF32 switch for a scope.
class ConvTf32 {
 public:
  explicit ConvTf32(bool allow) : previous_(cuda::allow_conv_tf32()) {
    cuda::set_allow_conv_tf32(allow);
  }
  ~ConvTf32() { cuda::set_allow_conv_tf32(previous_); }
  ConvTf32(const ConvTf32&) = delete;
  ConvTf32& operator=(const ConvTf32&) = delete;

 private:
  bool previous_;
};

struct Precision {
  const char* name;
  DType dtype;
  bool tf32;
  double tol;
};

const std::vector<Precision>& precisions() {
  static const std::vector<Precision> p = {{"float32", DType::Float32, false, 1e-4},
                                           {"float32 with TF32", DType::Float32, true, 5e-3},
                                           {"float16", DType::Float16, false, 5e-3},
                                           {"bfloat16", DType::BFloat16, false, 3e-2}};
  return p;
}

// |got - ref| <= tol * max(scale, 1% of the largest scale), elementwise.
::testing::AssertionResult near_scale(const Tensor& got, const Tensor& ref, const Tensor& scale,
                                      double tol) {
  if (got.shape() != ref.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_str(got.shape()) << " vs " << shape_str(ref.shape());
  std::vector<double> s = values(scale);
  double largest = 0;
  for (double v : s) largest = std::max(largest, v);
  for (double& v : s) v = std::max(v, 0.01 * largest);
  return test::close_to_scale(values(got), values(ref), s, tol);
}

Tensor as_format(const Tensor& t, MemoryFormat f) {
  if (f == MemoryFormat::Contiguous) return contiguous(t);
  Tensor out = empty_with_format(t.shape(), t.dtype(), t.device(), f);
  copy_(out, t);
  return out;
}

struct ConvCase {
  const char* name;
  Shape input, weight;
  ConvParams params;
};

ConvParams make_params(std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                       std::array<int64_t, 2> dilation, int64_t groups,
                       std::array<int64_t, 2> extra = {0, 0}) {
  ConvParams p;
  p.stride = stride;
  p.padding = padding;
  p.dilation = dilation;
  p.groups = groups;
  p.padding_end_extra = extra;
  return p;
}

const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> c = {
      {"3x3 padding 1, 32 -> 64 channels",
       {4, 32, 14, 14},
       {64, 32, 3, 3},
       make_params({1, 1}, {1, 1}, {1, 1}, 1)},
      {"stride 2, odd sizes, batch 1",
       {1, 8, 13, 11},
       {16, 8, 3, 3},
       make_params({2, 2}, {1, 1}, {1, 1}, 1)},
      {"dilation 2", {2, 16, 12, 12}, {16, 16, 3, 3}, make_params({1, 1}, {2, 2}, {2, 2}, 1)},
      {"groups 4", {2, 32, 9, 9}, {32, 8, 3, 3}, make_params({1, 1}, {1, 1}, {1, 1}, 4)},
      {"depthwise", {2, 16, 10, 10}, {16, 1, 3, 3}, make_params({1, 1}, {1, 1}, {1, 1}, 16)},
      {"1x1", {3, 24, 7, 7}, {40, 24, 1, 1}, make_params({1, 1}, {0, 0}, {1, 1}, 1)},
      {"even kernel with extra end padding (\"same\")",
       {2, 8, 9, 9},
       {8, 8, 4, 4},
       make_params({1, 1}, {1, 1}, {1, 1}, 1, {1, 1})},
      {"3 input channels (a first layer), 5x5 stride 2",
       {2, 3, 16, 16},
       {16, 3, 5, 5},
       make_params({2, 2}, {2, 2}, {1, 1}, 1)},
  };
  return c;
}

// Forward, input gradient, weight gradient and bias gradient of one case on both backends.
void check_case(const ConvCase& c, const Precision& prec, MemoryFormat format) {
  const ConvTf32 tf32(prec.tf32);
  const Tensor x = random_tensor(c.input, prec.dtype), w = random_tensor(c.weight, prec.dtype);
  const Tensor b = random_tensor({c.weight[0]}, prec.dtype);
  const Shape out_shape = ops::conv2d_output_shape(c.input, c.weight, c.params);
  const Tensor g = random_tensor(out_shape, prec.dtype);
  // The layout is made on the device: a copy to it arrives contiguous.
  const auto device = [&](const Tensor& t) { return as_format(on_cuda(t), format); };
  const Tensor xd = device(x), wd = device(w), gd = device(g);
  ASSERT_EQ(suggest_memory_format(xd), format);
  const auto f32 = [](const Tensor& t) { return to(t, DType::Float32); };
  const auto abs64 = [](const Tensor& t) { return ops::abs(to(t, DType::Float64)); };

  const Tensor y = ops::conv2d(xd, wd, on_cuda(b), c.params);
  ASSERT_EQ(y.device(), kCuda);
  EXPECT_EQ(y.strides(), memory_format_strides(out_shape, format)) << "output's memory format";
  EXPECT_TRUE(near_scale(y, ops::conv2d(f32(x), f32(w), f32(b), c.params),
                         ops::conv2d(abs64(x), abs64(w), abs64(b), c.params), prec.tol))
      << "forward";

  const Tensor gi = ops::conv2d_backward_input(gd, wd, c.input, c.params, format);
  EXPECT_EQ(gi.strides(), memory_format_strides(c.input, format)) << "grad_input's memory format";
  EXPECT_TRUE(near_scale(gi, ops::conv2d_backward_input(f32(g), f32(w), c.input, c.params),
                         ops::conv2d_backward_input(abs64(g), abs64(w), c.input, c.params),
                         prec.tol))
      << "input gradient";

  const Tensor gw = ops::conv2d_backward_weight(gd, xd, c.weight, c.params, format);
  EXPECT_EQ(gw.strides(), memory_format_strides(c.weight, format)) << "grad_weight's memory format";
  EXPECT_TRUE(near_scale(gw, ops::conv2d_backward_weight(f32(g), f32(x), c.weight, c.params),
                         ops::conv2d_backward_weight(abs64(g), abs64(x), c.weight, c.params),
                         prec.tol))
      << "weight gradient";

  EXPECT_TRUE(near_scale(ops::conv_bias_backward(gd), ops::conv_bias_backward(f32(g)),
                         ops::conv_bias_backward(abs64(g)), prec.tol))
      << "bias gradient";
}

TEST(CudaConv2d, ForwardAndGradientsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  for (const ConvCase& c : cases())
    for (const Precision& p : precisions())
      for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
        SCOPED_TRACE(std::string(c.name) + ", " + p.name + ", " + memory_format_name(f));
        check_case(c, p, f);
      }
}

// The fused epilogue (Note [Fused convolution epilogue]): relu(conv + bias) in one cuDNN graph
// against the CPU's three passes, in every case, precision and layout, with a bias at an odd
// offset (copied aligned first). relu is 1-Lipschitz, so the convolution's error bound holds.
TEST(CudaConv2d, FusedBiasReluMatchesTheCpu) {
  RCUDA_REQUIRE_CUDA();
  for (const ConvCase& c : cases())
    for (const Precision& p : precisions())
      for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
        SCOPED_TRACE(std::string(c.name) + ", " + p.name + ", " + memory_format_name(f));
        const ConvTf32 tf32(p.tf32);
        const Tensor x = random_tensor(c.input, p.dtype), w = random_tensor(c.weight, p.dtype);
        const Tensor b = random_tensor({c.weight[0] + 1}, p.dtype);
        const Tensor b0 = b.narrow(0, 0, c.weight[0]), b1 = b.narrow(0, 1, c.weight[0]);
        const auto f32 = [](const Tensor& t) { return to(t, DType::Float32); };
        const auto abs64 = [](const Tensor& t) { return ops::abs(to(t, DType::Float64)); };
        const Tensor xd = as_format(on_cuda(x), f), wd = as_format(on_cuda(w), f);
        const Tensor bd = on_cuda(b);
        for (const Tensor* bias : {&b0, &b1}) {
          const Tensor bias_d = bd.narrow(0, bias == &b0 ? 0 : 1, c.weight[0]);
          const Tensor y = ops::conv2d_bias_relu(xd, wd, bias_d, c.params);
          ASSERT_EQ(y.device(), kCuda);
          EXPECT_EQ(y.strides(), memory_format_strides(
                                     ops::conv2d_output_shape(c.input, c.weight, c.params), f));
          EXPECT_TRUE(near_scale(y, ops::relu(ops::conv2d(f32(x), f32(w), f32(*bias), c.params)),
                                 ops::conv2d(abs64(x), abs64(w), abs64(*bias), c.params), p.tol))
              << (bias == &b0 ? "aligned bias" : "bias at offset 1");
        }
      }
}

TEST(CudaConv2d, TheTf32SwitchDefaultsOnAndIsSeparateFromMatmuls) {
  RCUDA_REQUIRE_CUDA();
  EXPECT_TRUE(cuda::allow_conv_tf32());
  const bool matmul = cuda::allow_tf32();
  {
    const ConvTf32 off(false);
    EXPECT_FALSE(cuda::allow_conv_tf32());
    EXPECT_EQ(cuda::allow_tf32(), matmul);
  }
  EXPECT_TRUE(cuda::allow_conv_tf32());
}

// Mixed layouts (a channels-last input with a contiguous weight and the reverse), stepped
// views, and views at offsets that leave their data misaligned for cuDNN's engines.
TEST(CudaConv2d, MixedLayoutsStepsAndMisalignedViews) {
  RCUDA_REQUIRE_CUDA();
  const ConvTf32 tf32(false);
  const ConvParams p = make_params({1, 2}, {1, 1}, {1, 1}, 2);
  for (DType dtype : {DType::Float32, DType::Float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tol = dtype == DType::Float32 ? 1e-4 : 5e-3;
    const Tensor x = random_tensor({3, 8, 9, 10}, dtype), w = random_tensor({12, 4, 3, 3}, dtype);
    const auto f32 = [](const Tensor& t) { return to(t, DType::Float32); };
    const auto abs64 = [](const Tensor& t) { return ops::abs(to(t, DType::Float64)); };
    const Tensor ref = ops::conv2d(f32(x), f32(w), Tensor(), p);
    const Tensor scale = ops::conv2d(abs64(x), abs64(w), Tensor(), p);
    const Tensor xd = on_cuda(x), wd = on_cuda(w);
    EXPECT_TRUE(near_scale(ops::conv2d(as_format(xd, MemoryFormat::ChannelsLast), wd, Tensor(), p),
                           ref, scale, tol));
    EXPECT_TRUE(near_scale(ops::conv2d(xd, as_format(wd, MemoryFormat::ChannelsLast), Tensor(), p),
                           ref, scale, tol));
    // A stepped view (made on the device, so it stays stepped there).
    Tensor wide = ops::zeros({3, 8, 9, 20}, {dtype, kCuda});
    copy_(wide.slice(3, 0, 20, 2), xd);
    EXPECT_TRUE(near_scale(ops::conv2d(wide.slice(3, 0, 20, 2), wd, Tensor(), p), ref, scale, tol));
    // Dense views one element past an aligned address: input, weight, and the batch rows 1..2.
    Tensor flat = ops::zeros({x.numel() + 1}, {dtype, kCuda});
    const Tensor xm = flat.slice(0, 1, x.numel() + 1).view(x.shape());
    copy_(xm, xd);
    Tensor wflat = ops::zeros({w.numel() + 1}, {dtype, kCuda});
    const Tensor wm = wflat.slice(0, 1, w.numel() + 1).view(w.shape());
    copy_(wm, wd);
    EXPECT_TRUE(near_scale(ops::conv2d(xm, wm, Tensor(), p), ref, scale, tol));
    EXPECT_TRUE(near_scale(ops::conv2d(xd.slice(0, 1, 3), wd, Tensor(), p), ref.slice(0, 1, 3),
                           scale.slice(0, 1, 3), tol));
    // Gradients into misaligned-looking results come back through an aligned temporary.
    const Tensor g = random_tensor(ref.shape(), dtype);
    EXPECT_TRUE(near_scale(ops::conv2d_backward_weight(on_cuda(g), xm, w.shape(), p),
                           ops::conv2d_backward_weight(f32(g), f32(x), w.shape(), p),
                           ops::conv2d_backward_weight(abs64(g), abs64(x), w.shape(), p), tol));
  }
}

// The autograd layer on CUDA: gradients of nn::conv2d ("same"), conv1d and conv_transpose2d
// against the same functions on the CPU in float32.
TEST(CudaConv2d, AutogradGradientsOfEveryLayer) {
  RCUDA_REQUIRE_CUDA();
  const ConvTf32 tf32(false);
  using F = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  struct Layer {
    const char* name;
    Shape input, weight, bias;
    F f;
  };
  const std::vector<Layer> layers = {
      {"conv2d same, even kernel",
       {2, 4, 7, 8},
       {6, 4, 2, 4},
       {6},
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return nn::conv2d(x, w, b, 1, "same");
       }},
      {"conv1d stride 2 groups 2",
       {3, 4, 15},
       {6, 2, 3},
       {6},
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return nn::conv1d(x, w, b, 2, 1, 1, 2);
       }},
      {"conv_transpose2d stride 2, output_padding 1, groups 2",
       {2, 4, 5, 6},
       {4, 3, 3, 3},
       {6},
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return nn::conv_transpose2d(x, w, b, 2, 1, 1, 2);
       }},
      {"conv_transpose2d dilation 2, output_padding at the dilation",
       {2, 3, 4, 4},
       {3, 2, 3, 2},
       {2},
       [](const Tensor& x, const Tensor& w, const Tensor& b) {
         return nn::conv_transpose2d(x, w, b, 1, 0, 1, 1, 2);
       }},
  };
  for (const Layer& l : layers) {
    SCOPED_TRACE(l.name);
    const Tensor x = random_tensor(l.input, DType::Float32),
                 w = random_tensor(l.weight, DType::Float32);
    const Tensor b = random_tensor(l.bias, DType::Float32);
    TensorList cpu = {clone(x), clone(w), clone(b)}, gpu = {on_cuda(x), on_cuda(w), on_cuda(b)};
    for (const Tensor& t : cpu) t.requires_grad_();
    for (const Tensor& t : gpu) t.requires_grad_();
    const Tensor yc = l.f(cpu[0], cpu[1], cpu[2]), yg = l.f(gpu[0], gpu[1], gpu[2]);
    ASSERT_EQ(yg.shape(), yc.shape());
    const Tensor weights = random_tensor(yc.shape(), DType::Float32, 0.5, 1.5);
    const TensorList gc = autograd::grad({sum(mul(yc, weights))}, cpu);
    const TensorList gg = autograd::grad({sum(mul(yg, on_cuda(weights)))}, gpu);
    // Values are sums of at most a few hundred products of numbers below 2 in magnitude:
    // 1e-4 relative to max(1, |value|) is far above float32 rounding and far below an error.
    EXPECT_TRUE(test::all_close(values(yg), values(yc), 1e-4)) << "values";
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(test::all_close(values(gg[i]), values(gc[i]), 1e-4)) << "gradient " << i;
  }
}

TEST(CudaConv2d, Float64IsRefusedWithAClearError) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(random_tensor({1, 2, 5, 5}, DType::Float64));
  const Tensor w = on_cuda(random_tensor({2, 2, 3, 3}, DType::Float64));
  EXPECT_THROW(ops::conv2d(x, w), DTypeError);
  const std::string message = test::error_message([&] { ops::conv2d(x, w); });
  EXPECT_NE(message.find("float64"), std::string::npos) << message;
  EXPECT_NE(message.find("CPU"), std::string::npos) << message;
}

// A configuration run twice hits the plan cache; the result must not change, and a changed
// parameter (the stride) must not reuse the first plan.
TEST(CudaConv2d, CachedPlansAreKeyedByEveryParameter) {
  RCUDA_REQUIRE_CUDA();
  const ConvTf32 tf32(false);
  const Tensor x = random_tensor({2, 8, 12, 12}, DType::Float32),
               w = random_tensor({8, 8, 3, 3}, DType::Float32);
  const Tensor xd = on_cuda(x), wd = on_cuda(w);
  for (const ConvParams& p :
       {make_params({1, 1}, {1, 1}, {1, 1}, 1), make_params({2, 2}, {1, 1}, {1, 1}, 1),
        make_params({1, 1}, {0, 0}, {1, 1}, 1), make_params({1, 1}, {1, 1}, {2, 2}, 1),
        make_params({1, 1}, {1, 1}, {1, 1}, 2)}) {
    const Tensor wp = p.groups == 2 ? wd.slice(1, 0, 4) : wd;
    const Tensor wc = p.groups == 2 ? w.slice(1, 0, 4) : w;
    for (int repeat = 0; repeat < 2; ++repeat)
      EXPECT_TRUE(near_scale(ops::conv2d(xd, contiguous(wp), Tensor(), p),
                             ops::conv2d(x, contiguous(wc), Tensor(), p),
                             ops::conv2d(ops::abs(to(x, DType::Float64)),
                                         ops::abs(to(contiguous(wc), DType::Float64)), Tensor(), p),
                             1e-4))
          << "stride " << p.stride[0] << " padding " << p.padding[0] << " dilation "
          << p.dilation[0] << " groups " << p.groups << " run " << repeat;
  }
}

}  // namespace
}  // namespace rcuda
