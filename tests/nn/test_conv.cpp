// Convolutions on the CPU against plain double loops (tests/nn/conv_reference.h): a table of
// configurations (strides, padding, dilation, groups incl. depthwise, odd sizes, batch 1, a
// kernel as large as the padded input, extra end padding) in every floating dtype and in three
// layouts (contiguous, channels-last, stepped); empty batches and channels; the transposed
// convolution against its own scatter loop; memory formats of the results.
#include <string>

#include "nn/conv_reference.h"
#include "nn/nn_test_util.h"
#include "rcuda/nn/conv.h"

namespace rcuda::test {
namespace {

using Pair = std::array<int64_t, 2>;

struct ConvCase {
  const char* name;
  Shape input, weight;
  Pair stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  Pair extra{0, 0};
  ops::ConvParams params() const {
    ops::ConvParams p;
    p.stride = stride;
    p.padding = padding;
    p.dilation = dilation;
    p.groups = groups;
    p.padding_end_extra = extra;
    return p;
  }
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {"3x3 padding 1", {2, 3, 7, 9}, {4, 3, 3, 3}, {1, 1}, {1, 1}},
      {"stride 2, batch 1, 3x2 kernel", {1, 3, 8, 7}, {5, 3, 3, 2}, {2, 2}},
      {"dilation 2", {2, 2, 9, 9}, {3, 2, 3, 3}, {1, 1}, {2, 2}, {2, 2}},
      {"groups 2, stride 2x1", {2, 4, 6, 5}, {6, 2, 3, 3}, {2, 1}, {1, 1}, {1, 1}, 2},
      {"depthwise, multiplier 2", {2, 4, 7, 7}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4},
      {"1x1", {3, 5, 4, 4}, {2, 5, 1, 1}},
      {"kernel as large as the padded input", {1, 2, 3, 3}, {2, 2, 5, 5}, {1, 1}, {1, 1}},
      {"extra end padding", {2, 2, 6, 6}, {3, 2, 2, 4}, {1, 1}, {0, 1}, {1, 1}, 1, {1, 1}},
      {"stride 3 not dividing, mixed dilation, groups 3",
       {2, 3, 10, 11},
       {6, 1, 3, 3},
       {3, 3},
       {1, 0},
       {1, 2},
       3},
      {"one output channel, odd sizes", {2, 3, 5, 3}, {1, 3, 2, 3}, {1, 2}, {1, 1}},
  };
  return cases;
}

enum class Layout { Contiguous, ChannelsLast, Stepped };
const char* layout_name(Layout l) {
  return l == Layout::Contiguous     ? "contiguous"
         : l == Layout::ChannelsLast ? "channels-last"
                                     : "stepped";
}

Tensor make_tensor(const std::vector<double>& v, const Shape& shape, DType dtype, Layout layout) {
  switch (layout) {
    case Layout::Contiguous:
      return tensor_of(v, shape, dtype);
    case Layout::ChannelsLast:
      return channels_last_of(v, shape, dtype);
    case Layout::Stepped:
      return stepped_of(v, shape, dtype);
  }
  return Tensor();
}

// float32 and the half types against the loop on the values they hold: one rounding of a
// float32 sum (float32), or float32 sums rounded once to the dtype.
double conv_tolerance(DType dtype) {
  return dtype == DType::Float64 ? 1e-12 : dtype == DType::Float32 ? 1e-5 : 2 * tolerance(dtype);
}

TEST(Conv2d, MatchesTheLoopForEveryCaseDtypeAndLayout) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<double> x = uniform_values(numel(c.input)),
                              w = uniform_values(numel(c.weight));
    const std::vector<double> b = uniform_values(c.weight[0]);
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(dtype_name(dtype));
      const std::vector<double> xr = rounded(x, dtype), wr = rounded(w, dtype),
                                br = rounded(b, dtype);
      Shape out_shape;
      const std::vector<double> expected =
          conv2d_loop(xr, c.input, wr, c.weight, br, c.params(), &out_shape);
      const std::vector<double> scale = conv2d_loop(abs_values(xr), c.input, abs_values(wr),
                                                    c.weight, abs_values(br), c.params());
      for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast, Layout::Stepped}) {
        SCOPED_TRACE(layout_name(layout));
        const Tensor xt = make_tensor(xr, c.input, dtype, layout);
        const Tensor wt = make_tensor(wr, c.weight, dtype,
                                      layout == Layout::Stepped ? Layout::Contiguous : layout);
        const Tensor out = ops::conv2d(xt, wt, tensor_of(br, {c.weight[0]}, dtype), c.params());
        ASSERT_EQ(out.shape(), out_shape);
        EXPECT_TRUE(close_to_scale(to_doubles(out), expected, scale, conv_tolerance(dtype)));
        // The output keeps the input's memory format (a stepped input gives a contiguous one).
        const MemoryFormat f =
            layout == Layout::ChannelsLast ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
        EXPECT_EQ(out.strides(), memory_format_strides(out_shape, f));
        // No bias.
        const std::vector<double> no_bias = conv2d_loop(xr, c.input, wr, c.weight, {}, c.params());
        EXPECT_TRUE(close_to_scale(to_doubles(ops::conv2d(xt, wt, Tensor(), c.params())), no_bias,
                                   scale, conv_tolerance(dtype)));
      }
    }
  }
}

// The fused inference op: relu of the loop's convolution, with and without bias, in every
// dtype and layout, and an empty batch (the CPU runs the three passes; CUDA's fused epilogue is
// checked against this backend in tests/cuda/test_cuda_conv.cpp).
TEST(Conv2dBiasRelu, MatchesTheLoopWithRelu) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<double> x = uniform_values(numel(c.input)),
                              w = uniform_values(numel(c.weight)), b = uniform_values(c.weight[0]);
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(dtype_name(dtype));
      const std::vector<double> xr = rounded(x, dtype), wr = rounded(w, dtype),
                                br = rounded(b, dtype);
      const std::vector<double> scale = conv2d_loop(abs_values(xr), c.input, abs_values(wr),
                                                    c.weight, abs_values(br), c.params());
      for (bool with_bias : {true, false}) {
        SCOPED_TRACE(with_bias ? "bias" : "no bias");
        std::vector<double> expected = conv2d_loop(
            xr, c.input, wr, c.weight, with_bias ? br : std::vector<double>{}, c.params());
        for (double& v : expected) v = std::max(v, 0.0);
        for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast, Layout::Stepped}) {
          SCOPED_TRACE(layout_name(layout));
          const Tensor xt = make_tensor(xr, c.input, dtype, layout);
          const Tensor wt = make_tensor(wr, c.weight, dtype,
                                        layout == Layout::Stepped ? Layout::Contiguous : layout);
          const Tensor bt = with_bias ? tensor_of(br, {c.weight[0]}, dtype) : Tensor();
          const Tensor out = ops::conv2d_bias_relu(xt, wt, bt, c.params());
          EXPECT_TRUE(close_to_scale(to_doubles(out), expected, scale, conv_tolerance(dtype)));
        }
      }
    }
  }
  const Tensor empty =
      ops::conv2d_bias_relu(tensor_of({}, {0, 2, 5, 5}, DType::Float32),
                            tensor_of(uniform_values(18), {1, 2, 3, 3}, DType::Float32),
                            tensor_of({0.5}, {1}, DType::Float32));
  EXPECT_EQ(empty.shape(), (Shape{0, 1, 3, 3}));
  EXPECT_THROW(ops::conv2d_bias_relu(tensor_of(uniform_values(50), {1, 2, 5, 5}, DType::Float32),
                                     tensor_of(uniform_values(18), {1, 2, 3, 3}, DType::Float32),
                                     tensor_of({0.5, 0.5}, {2}, DType::Float32)),
               ShapeError);
}

TEST(Conv2d, MixedLayoutsOfInputAndWeight) {
  const ConvCase& c = conv_cases()[3];  // groups 2
  const std::vector<double> x = uniform_values(numel(c.input)), w = uniform_values(numel(c.weight));
  const std::vector<double> expected = conv2d_loop(x, c.input, w, c.weight, {}, c.params());
  const std::vector<double> scale =
      conv2d_loop(abs_values(x), c.input, abs_values(w), c.weight, {}, c.params());
  for (Layout xl : {Layout::Contiguous, Layout::ChannelsLast, Layout::Stepped})
    for (Layout wl : {Layout::Contiguous, Layout::ChannelsLast, Layout::Stepped}) {
      SCOPED_TRACE(std::string(layout_name(xl)) + " input, " + layout_name(wl) + " weight");
      const Tensor out =
          ops::conv2d(make_tensor(x, c.input, DType::Float32, xl),
                      make_tensor(w, c.weight, DType::Float32, wl), Tensor(), c.params());
      EXPECT_TRUE(close_to_scale(to_doubles(out), expected, scale, 1e-5));
    }
}

TEST(Conv2d, ChannelsLastAmbiguousTensorsFollowTheirStrides) {
  // C == 1: contiguous and channels-last hold the same elements; the strides decide.
  const std::vector<double> x = uniform_values(2 * 1 * 5 * 5), w = uniform_values(3 * 1 * 3 * 3);
  const Tensor xc = tensor_of(x, {2, 1, 5, 5}, DType::Float32);
  const Tensor xl = channels_last_of(x, {2, 1, 5, 5}, DType::Float32);
  const Tensor wt = tensor_of(w, {3, 1, 3, 3}, DType::Float32);
  EXPECT_EQ(suggest_memory_format(xc), MemoryFormat::Contiguous);
  EXPECT_EQ(suggest_memory_format(xl), MemoryFormat::ChannelsLast);
  ops::ConvParams p;
  p.padding = {1, 1};
  const Tensor yc = ops::conv2d(xc, wt, Tensor(), p), yl = ops::conv2d(xl, wt, Tensor(), p);
  EXPECT_EQ(yc.strides(), memory_format_strides({2, 3, 5, 5}, MemoryFormat::Contiguous));
  EXPECT_EQ(yl.strides(), memory_format_strides({2, 3, 5, 5}, MemoryFormat::ChannelsLast));
  const std::vector<double> expected = conv2d_loop(x, {2, 1, 5, 5}, w, {3, 1, 3, 3}, {}, p);
  EXPECT_TRUE(all_close(to_doubles(yc), expected, 1e-5));
  EXPECT_TRUE(all_close(to_doubles(yl), expected, 1e-5));
}

TEST(Conv2d, EmptyBatchAndNoInputChannels) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    ops::ConvParams p;
    p.padding = {1, 1};
    const Tensor w = random_tensor({4, 3, 3, 3}, dtype), b = random_tensor({4}, dtype);
    const Tensor empty = ops::conv2d(Tensor::empty({0, 3, 5, 6}, dtype), w, b, p);
    EXPECT_EQ(empty.shape(), (Shape{0, 4, 5, 6}));
    // No input channels: a sum of nothing, so the bias alone.
    const Tensor none =
        ops::conv2d(Tensor::empty({2, 0, 5, 6}, dtype), Tensor::empty({4, 0, 3, 3}, dtype), b, p);
    ASSERT_EQ(none.shape(), (Shape{2, 4, 5, 6}));
    const std::vector<double> bv = to_doubles(b), got = to_doubles(none);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], bv[(i / 30) % 4]) << i;
    // Gradients of an empty batch: zero weight and bias gradients, an empty input gradient.
    const Tensor g = Tensor::empty({0, 4, 5, 6}, dtype);
    EXPECT_EQ(ops::conv2d_backward_input(g, w, {0, 3, 5, 6}, p).shape(), (Shape{0, 3, 5, 6}));
    const Tensor gw =
        ops::conv2d_backward_weight(g, Tensor::empty({0, 3, 5, 6}, dtype), {4, 3, 3, 3}, p);
    EXPECT_TRUE(all_close(to_doubles(gw), std::vector<double>(108, 0.0), 0));
    EXPECT_TRUE(all_close(to_doubles(ops::conv_bias_backward(g)), std::vector<double>(4, 0.0), 0));
  }
}

// ---- transposed convolution -----------------------------------------------------------------

struct TransposedCase {
  const char* name;
  Shape input, weight;
  Pair stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  Pair output_padding{0, 0};
  ops::ConvParams params() const {
    ops::ConvParams p;
    p.stride = stride;
    p.padding = padding;
    p.dilation = dilation;
    p.groups = groups;
    return p;
  }
};

const std::vector<TransposedCase>& transposed_cases() {
  static const std::vector<TransposedCase> cases = {
      {"3x3 stride 1", {2, 3, 5, 4}, {3, 4, 3, 3}},
      {"stride 2, padding 1, output_padding 1",
       {2, 4, 4, 5},
       {4, 3, 3, 3},
       {2, 2},
       {1, 1},
       {1, 1},
       1,
       {1, 1}},
      {"groups 2, dilation 2, stride 2x3",
       {1, 4, 3, 4},
       {4, 2, 3, 2},
       {2, 3},
       {1, 0},
       {2, 2},
       2,
       {1, 2}},
      // output_padding not below the stride but below the dilation (torch allows it).
      {"output_padding 1 with stride 1, dilation 2",
       {2, 2, 4, 4},
       {2, 3, 3, 3},
       {1, 1},
       {1, 0},
       {2, 2},
       1,
       {1, 1}},
      {"depthwise stride 2", {2, 3, 5, 5}, {3, 1, 2, 2}, {2, 2}, {0, 0}, {1, 1}, 3},
  };
  return cases;
}

TEST(ConvTranspose2d, MatchesTheScatterLoop) {
  for (const TransposedCase& c : transposed_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<double> x = uniform_values(numel(c.input)),
                              w = uniform_values(numel(c.weight));
    const std::vector<double> b = uniform_values(c.weight[1] * c.groups);
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(dtype_name(dtype));
      const std::vector<double> xr = rounded(x, dtype), wr = rounded(w, dtype),
                                br = rounded(b, dtype);
      Shape out_shape;
      const std::vector<double> expected = conv_transpose2d_loop(
          xr, c.input, wr, c.weight, br, c.params(), c.output_padding, &out_shape);
      const std::vector<double> scale =
          conv_transpose2d_loop(abs_values(xr), c.input, abs_values(wr), c.weight, abs_values(br),
                                c.params(), c.output_padding);
      EXPECT_EQ(ops::conv_transpose2d_output_shape(c.input, c.weight, c.params(), c.output_padding),
                out_shape);
      for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast, Layout::Stepped}) {
        SCOPED_TRACE(layout_name(layout));
        const Tensor out = ops::conv_transpose2d(
            make_tensor(xr, c.input, dtype, layout), tensor_of(wr, c.weight, dtype),
            tensor_of(br, {out_shape[1]}, dtype), c.params(), c.output_padding);
        ASSERT_EQ(out.shape(), out_shape);
        EXPECT_TRUE(close_to_scale(to_doubles(out), expected, scale, conv_tolerance(dtype)));
        const MemoryFormat f =
            layout == Layout::ChannelsLast ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
        EXPECT_EQ(out.strides(), memory_format_strides(out_shape, f));
      }
    }
  }
}

TEST(ConvTranspose2d, IsTheAdjointOfConv2d) {
  // <conv2d(x, w), y> == <x, conv_transpose2d(y, w)> for the same weight and parameters: the
  // two loops are independent, and so are the two primitives behind the ops.
  for (const ConvCase& c : conv_cases()) {
    if (c.extra != Pair{0, 0}) continue;
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(c.input, DType::Float64),
                 w = random_tensor(c.weight, DType::Float64);
    const Tensor cx = ops::conv2d(x, w, Tensor(), c.params());
    const Tensor y = random_tensor(cx.shape(), DType::Float64);
    Pair output_padding{0, 0};
    for (int d = 0; d < 2; ++d)
      output_padding[d] = c.input[2 + d] - ((cx.size(2 + d) - 1) * c.stride[d] - 2 * c.padding[d] +
                                            c.dilation[d] * (c.weight[2 + d] - 1) + 1);
    const Tensor ty = ops::conv_transpose2d(y, w, Tensor(), c.params(), output_padding);
    ASSERT_EQ(ty.shape(), x.shape());
    const std::vector<double> xv = to_doubles(x), yv = to_doubles(y), cxv = to_doubles(cx),
                              tyv = to_doubles(ty);
    double lhs = 0, rhs = 0, mag = 0;
    for (size_t i = 0; i < cxv.size(); ++i) lhs += cxv[i] * yv[i], mag += std::fabs(cxv[i] * yv[i]);
    for (size_t i = 0; i < xv.size(); ++i) rhs += xv[i] * tyv[i];
    EXPECT_NEAR(lhs, rhs, 1e-12 * std::max(1.0, mag));
  }
}

}  // namespace
}  // namespace rcuda::test
