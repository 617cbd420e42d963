// Gradients of convolutions: float64 against central differences (tests/autograd/gradcheck.h)
// for input, weight and bias over strides, padding, dilation, groups, extra end padding,
// channels-last and stepped inputs, conv1d and the transposed convolution; float32 and the half
// types against float64 gradients of the same values; the saved tensors' version checks.
#include <string>

#include "nn/conv_reference.h"
#include "nn/nn_test_util.h"
#include "rcuda/nn/conv.h"

namespace rcuda::test {
namespace {

using Pair = std::array<int64_t, 2>;

ops::ConvParams params(Pair stride, Pair padding, Pair dilation, int64_t groups,
                       Pair extra = {0, 0}) {
  ops::ConvParams p;
  p.stride = stride;
  p.padding = padding;
  p.dilation = dilation;
  p.groups = groups;
  p.padding_end_extra = extra;
  return p;
}

// A float64 leaf in channels-last layout.
Tensor leaf_channels_last(const Shape& shape) {
  Tensor t = channels_last_of(uniform_values(numel(shape)), shape, DType::Float64);
  t.requires_grad_();
  return t;
}
Tensor leaf_stepped(const Shape& shape) {
  Tensor t = stepped_of(uniform_values(numel(shape)), shape, DType::Float64);
  t.requires_grad_();
  return t;
}

// The bias of a gradcheck input list: its third tensor, or none.
Tensor bias_of(const TensorList& t) { return t.size() > 2 ? t[2] : Tensor(); }

struct GradCase {
  const char* name;
  Shape input, weight;
  ops::ConvParams p;
};

TEST(Conv2dGrad, GradcheckOfInputWeightAndBias) {
  const std::vector<GradCase> cases = {
      {"3x3 padding 1", {2, 2, 5, 4}, {3, 2, 3, 3}, params({1, 1}, {1, 1}, {1, 1}, 1)},
      {"stride 2x1, dilation 1x2", {1, 2, 6, 7}, {2, 2, 2, 3}, params({2, 1}, {0, 1}, {1, 2}, 1)},
      {"groups 2", {2, 4, 4, 4}, {4, 2, 3, 2}, params({1, 2}, {1, 0}, {1, 1}, 2)},
      {"depthwise", {1, 3, 5, 5}, {3, 1, 3, 3}, params({2, 2}, {1, 1}, {1, 1}, 3)},
      {"extra end padding", {2, 2, 4, 5}, {2, 2, 2, 4}, params({1, 1}, {0, 1}, {1, 1}, 1, {1, 1})},
      {"kernel as large as the padded input",
       {1, 2, 3, 2},
       {2, 2, 5, 4},
       params({1, 1}, {1, 1}, {1, 1}, 1)},
  };
  for (const GradCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto f = [&](const TensorList& t) { return conv2d(t[0], t[1], bias_of(t), c.p); };
    const Tensor w = leaf(c.weight), b = leaf({c.weight[0]});
    EXPECT_TRUE(gradcheck(f, {leaf(c.input), w, b}));
    EXPECT_TRUE(gradcheck(f, {leaf_channels_last(c.input), leaf_channels_last(c.weight), b}));
    EXPECT_TRUE(gradcheck(f, {leaf_stepped(c.input), w, b}));
    // Only some inputs requiring grad (the node saves only what those need).
    EXPECT_TRUE(gradcheck(f, {leaf(c.input), random_tensor(c.weight, DType::Float64)}));
    EXPECT_TRUE(gradcheck(f, {random_tensor(c.input, DType::Float64), w}));
  }
}

TEST(Conv2dGrad, GradientsKeepTheInputsMemoryFormats) {
  // What flows back from the node (a channels-last network's activations stay channels-last);
  // a leaf's accumulated .grad is the engine's business (AccumulateGrad keeps contiguous ones).
  const Tensor x = leaf_channels_last({2, 3, 5, 5}), w = leaf({4, 3, 3, 3});
  const Tensor y = conv2d(x, w, Tensor(), params({1, 1}, {1, 1}, {1, 1}, 1));
  EXPECT_EQ(std::string(y.grad_fn()->name()), "ConvolutionBackward");
  const TensorList g = autograd::grad({sum(y)}, {x, w});
  EXPECT_EQ(suggest_memory_format(g[0]), MemoryFormat::ChannelsLast);
  EXPECT_EQ(suggest_memory_format(g[1]), MemoryFormat::Contiguous);
  const Tensor wl = leaf_channels_last({4, 3, 3, 3}), xc = leaf({2, 3, 5, 5});
  const TensorList h = autograd::grad({sum(conv2d(xc, wl))}, {xc, wl});
  EXPECT_EQ(suggest_memory_format(h[0]), MemoryFormat::Contiguous);
  EXPECT_EQ(suggest_memory_format(h[1]), MemoryFormat::ChannelsLast);
}

TEST(ConvTranspose2dGrad, GradcheckOfInputWeightAndBias) {
  struct Case {
    const char* name;
    Shape input, weight;
    ops::ConvParams p;
    Pair output_padding;
  };
  const std::vector<Case> cases = {
      {"stride 1", {2, 2, 3, 4}, {2, 3, 3, 2}, params({1, 1}, {0, 0}, {1, 1}, 1), {0, 0}},
      {"stride 2, output_padding 1",
       {1, 3, 3, 3},
       {3, 2, 3, 3},
       params({2, 2}, {1, 1}, {1, 1}, 1),
       {1, 1}},
      {"groups 2, dilation 2, stride 2x3",
       {1, 4, 2, 3},
       {4, 1, 2, 2},
       params({2, 3}, {0, 1}, {2, 2}, 2),
       {1, 2}},
      {"output_padding at the dilation",
       {2, 2, 3, 3},
       {2, 2, 2, 3},
       params({1, 1}, {0, 1}, {2, 2}, 1),
       {1, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto f = [&](const TensorList& t) {
      return conv_transpose2d(t[0], t[1], bias_of(t), c.p, c.output_padding);
    };
    const Shape out = ops::conv_transpose2d_output_shape(c.input, c.weight, c.p, c.output_padding);
    EXPECT_TRUE(gradcheck(f, {leaf(c.input), leaf(c.weight), leaf({out[1]})}));
    EXPECT_TRUE(gradcheck(f, {leaf_channels_last(c.input), leaf(c.weight)}));
  }
}

TEST(Conv1dGrad, GradcheckAndTheLoop) {
  const Tensor x = leaf({2, 3, 9}), w = leaf({4, 3, 3}), b = leaf({4});
  const auto f = [](const TensorList& t) { return conv1d(t[0], t[1], t[2], 2, 1, 2, 1); };
  EXPECT_TRUE(gradcheck(f, {x, w, b}));
  // The values: conv2d of height 1.
  const Tensor y = f({x, w, b});
  EXPECT_EQ(y.shape(), (Shape{2, 4, 4}));
  const std::vector<double> expected =
      conv2d_loop(to_doubles(x), {2, 3, 1, 9}, to_doubles(w), {4, 3, 1, 3}, to_doubles(b),
                  params({1, 2}, {0, 1}, {1, 2}, 1));
  EXPECT_TRUE(all_close(to_doubles(y), expected, 1e-12));
  // Channels-last 1-D input ([N, L, C] transposed) and groups.
  const Tensor xl = random_tensor({2, 9, 4}, DType::Float64).permute({0, 2, 1});
  xl.requires_grad_();
  EXPECT_TRUE(
      gradcheck([](const TensorList& t) { return conv1d(t[0], t[1], Tensor(), 1, 1, 1, 2); },
                {xl, leaf({4, 2, 3})}));
}

// Gradients in a lower precision against float64 gradients of the very same values.
TEST(Conv2dGrad, LowerPrecisionsAgreeWithFloat64) {
  const Shape xs = {2, 4, 7, 6}, ws = {6, 2, 3, 3};
  const ops::ConvParams p = params({2, 1}, {1, 1}, {1, 2}, 2);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = random_tensor(xs, dtype), w = random_tensor(ws, dtype),
                 b = random_tensor({6}, dtype);
    const Tensor x64 = to(x, DType::Float64), w64 = to(w, DType::Float64),
                 b64 = to(b, DType::Float64);
    const Tensor y = ops::conv2d(x, w, b, p);
    const Tensor g = random_tensor(y.shape(), dtype), g64 = to(g, DType::Float64);
    // Each gradient against float64, relative to the sum of magnitudes of its terms.
    const auto check = [&](const Tensor& got, const Tensor& ref, const Tensor& scale) {
      const double tol = dtype == DType::Float32 ? 1e-5 : 2 * tolerance(dtype);
      EXPECT_TRUE(close_to_scale(to_doubles(got), to_doubles(ref), to_doubles(scale), tol));
    };
    const auto absd = [](const Tensor& t) { return ops::abs(t); };
    check(ops::conv2d_backward_input(g, w, xs, p), ops::conv2d_backward_input(g64, w64, xs, p),
          ops::conv2d_backward_input(absd(g64), absd(w64), xs, p));
    check(ops::conv2d_backward_weight(g, x, ws, p), ops::conv2d_backward_weight(g64, x64, ws, p),
          ops::conv2d_backward_weight(absd(g64), absd(x64), ws, p));
    check(ops::conv_bias_backward(g), ops::conv_bias_backward(g64),
          ops::conv_bias_backward(absd(g64)));
  }
}

TEST(Conv2dGrad, AnInputChangedInPlaceAfterTheForwardIsAnError) {
  const Tensor x = leaf({1, 2, 4, 4}), w = leaf({2, 2, 3, 3});
  const Tensor x2 = mul(x, 2.0);
  const Tensor y = conv2d(x2, w);
  {
    NoGradGuard no_grad;
    ops::fill_(x2, 1.0);  // bumps the version conv2d saved
  }
  EXPECT_THROW(autograd::backward(sum(y)), ValueError);
}

}  // namespace
}  // namespace rcuda::test
