// rcuda::nn::conv1d/conv2d/conv_transpose2d: torch's argument forms ("same" and "valid"
// padding, one number or one per dim, unbatched input) against the loops, and the errors of
// every argument check, each naming the op, the argument and the values.
#include <string>

#include "nn/conv_reference.h"
#include "nn/nn_test_util.h"
#include "rcuda/nn/conv.h"

namespace rcuda::test {
namespace {

ops::ConvParams numeric(std::array<int64_t, 2> padding, std::array<int64_t, 2> extra = {0, 0},
                        std::array<int64_t, 2> dilation = {1, 1}) {
  ops::ConvParams p;
  p.padding = padding;
  p.padding_end_extra = extra;
  p.dilation = dilation;
  return p;
}

TEST(NnConv2d, SamePaddingKeepsTheSizeWithTorchsSplit) {
  struct Case {
    Shape weight;
    std::array<int64_t, 2> dilation, padding,
        extra;  // torch: total d (k - 1), the odd one at the end
  };
  const std::vector<Case> cases = {
      {{3, 2, 3, 3}, {1, 1}, {1, 1}, {0, 0}},
      {{3, 2, 4, 2}, {1, 1}, {1, 0}, {1, 1}},  // even kernels: one more zero at the end
      {{3, 2, 2, 3}, {2, 3}, {1, 3}, {0, 0}},  // dilated even kernel, even extent
      {{3, 2, 4, 5}, {3, 1}, {4, 2}, {1, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.weight));
    const Tensor x = random_tensor({2, 2, 9, 8}, DType::Float64),
                 w = random_tensor(c.weight, DType::Float64);
    const Tensor b = random_tensor({3}, DType::Float64);
    const Tensor y = nn::conv2d(x, w, b, 1, "same", {c.dilation[0], c.dilation[1]});
    EXPECT_EQ(y.shape(), (Shape{2, 3, 9, 8}));
    EXPECT_TRUE(all_close(to_doubles(y),
                          conv2d_loop(to_doubles(x), x.shape(), to_doubles(w), c.weight,
                                      to_doubles(b), numeric(c.padding, c.extra, c.dilation)),
                          1e-12));
    x.requires_grad_();
    w.requires_grad_();
    EXPECT_TRUE(gradcheck(
        [&](const TensorList& t) {
          return nn::conv2d(t[0], t[1], Tensor(), 1, "same", {c.dilation[0], c.dilation[1]});
        },
        {x, w}));
  }
  // "valid" is no padding.
  const Tensor x = random_tensor({1, 2, 6, 6}, DType::Float32),
               w = random_tensor({2, 2, 3, 3}, DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(nn::conv2d(x, w, Tensor(), 1, "valid")),
                        to_doubles(nn::conv2d(x, w)), 0));
}

TEST(NnConv2d, PerDimArgumentsAndUnbatchedInput) {
  const Tensor x = random_tensor({2, 3, 8, 9}, DType::Float64),
               w = random_tensor({4, 3, 3, 2}, DType::Float64);
  ops::ConvParams p;
  p.stride = {2, 1};
  p.padding = {1, 0};
  p.dilation = {1, 3};
  const std::vector<double> expected =
      conv2d_loop(to_doubles(x), x.shape(), to_doubles(w), w.shape(), {}, p);
  EXPECT_TRUE(
      all_close(to_doubles(nn::conv2d(x, w, Tensor(), {2, 1}, {1, 0}, {1, 3})), expected, 1e-12));
  // One number for both dims.
  ops::ConvParams q;
  q.stride = {2, 2};
  q.padding = {1, 1};
  EXPECT_TRUE(all_close(to_doubles(nn::conv2d(x, w, Tensor(), 2, 1)),
                        conv2d_loop(to_doubles(x), x.shape(), to_doubles(w), w.shape(), {}, q),
                        1e-12));
  // Unbatched [C, H, W] is one image.
  const Tensor one = x.select(0, 1);
  const Tensor y = nn::conv2d(one, w, Tensor(), 2, 1);
  ASSERT_EQ(y.dim(), 3);
  EXPECT_TRUE(
      all_close(to_doubles(y), to_doubles(nn::conv2d(x, w, Tensor(), 2, 1).select(0, 1)), 0));
}

TEST(NnConv1d, MatchesTheLoopWithNumbersAndSame) {
  const Tensor x = random_tensor({2, 4, 11}, DType::Float64),
               w = random_tensor({6, 2, 4}, DType::Float64);
  const Tensor b = random_tensor({6}, DType::Float64);
  ops::ConvParams p;
  p.stride = {1, 3};
  p.padding = {0, 2};
  p.dilation = {1, 2};
  p.groups = 2;
  const std::vector<double> xv = to_doubles(x), wv = to_doubles(w), bv = to_doubles(b);
  EXPECT_TRUE(all_close(to_doubles(nn::conv1d(x, w, b, 3, 2, 2, 2)),
                        conv2d_loop(xv, {2, 4, 1, 11}, wv, {6, 2, 1, 4}, bv, p), 1e-12));
  // "same" with the even kernel: 3 zeros in all, 1 at the start and 2 at the end.
  const Tensor same = nn::conv1d(x, w, b, 1, "same", 1, 2);
  EXPECT_EQ(same.shape(), (Shape{2, 6, 11}));
  ops::ConvParams s;
  s.padding = {0, 1};
  s.padding_end_extra = {0, 1};
  s.groups = 2;
  EXPECT_TRUE(
      all_close(to_doubles(same), conv2d_loop(xv, {2, 4, 1, 11}, wv, {6, 2, 1, 4}, bv, s), 1e-12));
  // Unbatched [C, L].
  EXPECT_TRUE(all_close(to_doubles(nn::conv1d(x.select(0, 0), w, b, 1, "same", 1, 2)),
                        to_doubles(same.select(0, 0)), 0));
}

TEST(NnConvTranspose2d, TorchsArgumentOrder) {
  const Tensor x = random_tensor({2, 4, 3, 4}, DType::Float64),
               w = random_tensor({4, 3, 3, 2}, DType::Float64);
  const Tensor b = random_tensor({6}, DType::Float64);
  ops::ConvParams p;
  p.stride = {2, 3};
  p.padding = {1, 0};
  p.dilation = {2, 1};
  p.groups = 2;
  const std::vector<double> expected = conv_transpose2d_loop(
      to_doubles(x), x.shape(), to_doubles(w), w.shape(), to_doubles(b), p, {1, 2});
  // (input, weight, bias, stride, padding, output_padding, groups, dilation)
  const Tensor y = nn::conv_transpose2d(x, w, b, {2, 3}, {1, 0}, {1, 2}, 2, {2, 1});
  EXPECT_TRUE(all_close(to_doubles(y), expected, 1e-12));
  EXPECT_TRUE(all_close(
      to_doubles(nn::conv_transpose2d(x.select(0, 0), w, b, {2, 3}, {1, 0}, {1, 2}, 2, {2, 1})),
      to_doubles(y.select(0, 0)), 0));
}

// ---- errors -----------------------------------------------------------------------------------

TEST(ConvErrors, NameTheOpTheArgumentAndTheValues) {
  const Tensor x = random_tensor({2, 4, 6, 6}, DType::Float32),
               w = random_tensor({6, 2, 3, 3}, DType::Float32);
  ops::ConvParams g2;
  g2.groups = 2;
  const auto expect = [](auto f, const std::vector<std::string>& parts) {
    EXPECT_TRUE(mentions(error_message(f), parts));
  };
  // dims
  EXPECT_THROW(ops::conv2d(x.select(0, 0), w, Tensor(), g2), ShapeError);
  expect([&] { ops::conv2d(x.select(0, 0), w, Tensor(), g2); },
         {"conv2d", "input", "4-D", "[4, 6, 6]"});
  expect([&] { ops::conv2d(x, w.select(0, 0), Tensor(), g2); },
         {"conv2d", "weight", "4-D", "[2, 3, 3]"});
  // channels and groups
  EXPECT_THROW(ops::conv2d(x, w), ShapeError);
  expect([&] { ops::conv2d(x, w); },
         {"conv2d", "[6, 2, 3, 3]", "groups 1", "2 channels", "[2, 4, 6, 6]"});
  ops::ConvParams g3;
  g3.groups = 3;
  EXPECT_THROW(ops::conv2d(x, w, Tensor(), g3), ValueError);
  expect([&] { ops::conv2d(x, w, Tensor(), g3); }, {"conv2d", "input channels (4)", "groups (3)"});
  ops::ConvParams g4;
  g4.groups = 4;
  expect(
      [&] {
        ops::conv2d(x, random_tensor({6, 1, 3, 3}, DType::Float32), Tensor(), g4);
      },
      {"conv2d", "output channels", "6", "groups (4)"});
  ops::ConvParams g0;
  g0.groups = 0;
  EXPECT_THROW(ops::conv2d(x, w, Tensor(), g0), ValueError);
  // stride, dilation, padding
  ops::ConvParams bad = g2;
  bad.stride = {1, 0};
  EXPECT_THROW(ops::conv2d(x, w, Tensor(), bad), ValueError);
  expect([&] { ops::conv2d(x, w, Tensor(), bad); }, {"conv2d", "stride", "positive", "[1, 0]"});
  bad = g2;
  bad.dilation = {-1, 1};
  expect([&] { ops::conv2d(x, w, Tensor(), bad); }, {"conv2d", "dilation", "positive", "[-1, 1]"});
  bad = g2;
  bad.padding = {0, -2};
  EXPECT_THROW(ops::conv2d(x, w, Tensor(), bad), ValueError);
  expect([&] { ops::conv2d(x, w, Tensor(), bad); },
         {"conv2d", "padding", "non-negative", "[0, -2]"});
  // a kernel larger than the padded input
  bad = g2;
  bad.dilation = {4, 1};
  EXPECT_THROW(ops::conv2d(x, w, Tensor(), bad), ShapeError);
  expect([&] { ops::conv2d(x, w, Tensor(), bad); },
         {"conv2d", "kernel", "dilation 4", "spans 9", "padded input", "6"});
  // bias, dtypes, devices
  expect([&] { ops::conv2d(x, w, random_tensor({5}, DType::Float32), g2); },
         {"conv2d", "bias", "[6]", "[5]"});
  EXPECT_THROW(ops::conv2d(x, to(w, DType::Float64), Tensor(), g2), DTypeError);
  expect([&] { ops::conv2d(x, to(w, DType::Float64), Tensor(), g2); },
         {"conv2d", "weight", "float64", "float32"});
  expect([&] { ops::conv2d(to(x, DType::Int64), to(w, DType::Int64), Tensor(), g2); },
         {"conv2d", "floating", "int64"});
  EXPECT_THROW(ops::conv2d(x, w, to(random_tensor({6}, DType::Float32), DType::Float16), g2),
               DTypeError);
  expect([&] { ops::conv2d(Tensor(), w); }, {"conv2d", "input", "undefined"});
  // a zero-sized kernel
  expect(
      [&] {
        ops::conv2d(x, Tensor::empty({6, 2, 0, 3}, DType::Float32), Tensor(), g2);
      },
      {"conv2d", "kernel", "at least 1x1", "[6, 2, 0, 3]"});
}

TEST(ConvErrors, BackwardAndTransposedChecks) {
  const Tensor w = random_tensor({4, 3, 3, 3}, DType::Float32);
  // grad_out of the wrong shape
  EXPECT_THROW(
      ops::conv2d_backward_input(random_tensor({2, 4, 5, 5}, DType::Float32), w, {2, 3, 6, 6}, {}),
      ShapeError);
  EXPECT_TRUE(mentions(error_message([&] {
                         ops::conv2d_backward_input(random_tensor({2, 4, 5, 5}, DType::Float32), w,
                                                    {2, 3, 6, 6}, {});
                       }),
                       {"conv2d_backward_input", "grad_out", "[2, 4, 5, 5]", "[2, 4, 4, 4]"}));
  // transposed: channels, output_padding, padding_end_extra
  const Tensor x = random_tensor({1, 4, 3, 3}, DType::Float32);
  EXPECT_THROW(ops::conv_transpose2d(x, random_tensor({3, 2, 3, 3}, DType::Float32)), ShapeError);
  EXPECT_TRUE(mentions(error_message([&] {
                         ops::conv_transpose2d(x, random_tensor({3, 2, 3, 3}, DType::Float32));
                       }),
                       {"conv_transpose2d", "[3, 2, 3, 3]", "3 channels", "[1, 4, 3, 3]"}));
  ops::ConvParams p;
  p.stride = {2, 2};
  EXPECT_THROW(ops::conv_transpose2d(x, w.slice(0, 0, 4), Tensor(), p, {2, 0}), ValueError);
  EXPECT_TRUE(mentions(
      error_message([&] {
        ops::conv_transpose2d(x, random_tensor({4, 2, 3, 3}, DType::Float32), Tensor(), p, {2, 0});
      }),
      {"conv_transpose2d", "output_padding", "[2, 0]", "stride [2, 2]", "dilation [1, 1]"}));
  p.padding_end_extra = {1, 0};
  EXPECT_THROW(ops::conv_transpose2d(x, random_tensor({4, 2, 3, 3}, DType::Float32), Tensor(), p),
               ValueError);
  ops::ConvParams big;
  big.padding = {3, 3};
  EXPECT_THROW(ops::conv_transpose2d(x, random_tensor({4, 2, 3, 3}, DType::Float32), Tensor(), big),
               ShapeError);
  EXPECT_TRUE(mentions(
      error_message([&] {
        ops::conv_transpose2d(x, random_tensor({4, 2, 3, 3}, DType::Float32), Tensor(), big);
      }),
      {"conv_transpose2d", "output would have size -1"}));
}

TEST(ConvErrors, NnArgumentForms) {
  const Tensor x = random_tensor({1, 2, 6, 6}, DType::Float32),
               w = random_tensor({2, 2, 3, 3}, DType::Float32);
  EXPECT_THROW(nn::conv2d(x, w, Tensor(), 2, "same"), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { nn::conv2d(x, w, Tensor(), 2, "same"); }),
                       {"conv2d", "same", "strided", "[2, 2]"}));
  EXPECT_TRUE(mentions(error_message([&] { nn::conv2d(x, w, Tensor(), 1, "full"); }),
                       {"conv2d", "padding", "\"full\""}));
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::conv2d(x, w, Tensor(), {1, 1, 1});
                       }),
                       {"conv2d", "stride", "one number or two", "[1, 1, 1]"}));
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::conv2d(x.view({2, 6, 6}).unsqueeze(0).unsqueeze(0), w);
                       }),
                       {"conv2d", "input", "4-D", "3-D", "[1, 1, 2, 6, 6]"}));
  EXPECT_TRUE(mentions(error_message([&] { nn::conv1d(x.select(0, 0), w); }),
                       {"conv1d", "weight", "3-D", "[2, 2, 3, 3]"}));
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::conv1d(x.select(0, 0), w.select(3, 0), Tensor(), 1, {1, 1});
                       }),
                       {"conv1d", "padding", "one number", "[1, 1]"}));
  // conv1d names itself in the errors of the conv2d it runs.
  EXPECT_THROW(nn::conv1d(random_tensor({1, 3, 5}, DType::Float32), w.select(3, 0)), ShapeError);
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::conv1d(random_tensor({1, 3, 5}, DType::Float32), w.select(3, 0));
                       }),
                       {"conv1d", "channels"}));
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::conv1d(random_tensor({1, 2, 2}, DType::Float32), w.select(3, 0));
                       }),
                       {"conv1d", "larger than the padded input"}));
}

}  // namespace
}  // namespace rcuda::test
