// Gradients of pad and interpolate against float64 central differences (gradcheck): every pad
// mode over 1, 2 and 3 padded dims (cropping included), every interpolation mode with both
// corner rules, by size and by scale_factor, contiguous, channels-last and strided inputs; the
// node names; and the public rcuda::nn entry points recording as the api ones do.
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "ops/layer_test_util.h"
#include "rcuda/autograd.h"
#include "rcuda/nn/resample.h"

namespace rcuda::test {
namespace {

Tensor random_leaf(const Shape& shape, Layout layout) {
  Tensor t = in_layout(random_tensor(shape, DType::Float64), layout);
  t.requires_grad_();
  return t;
}

struct PadCase {
  const char* mode;
  Shape shape;
  std::vector<int64_t> padding;
};

TEST(GradResample, PadEveryMode) {
  const std::vector<PadCase> cases = {
      {"constant", {2, 3, 4, 5}, {1, 2, -1, 2}},
      {"constant", {3, 4}, {2, -1, 0, 1}},
      {"reflect", {2, 3, 6}, {3, 2}},
      {"reflect", {2, 3, 4, 5}, {2, 1, 3, -1}},
      {"reflect", {1, 2, 3, 3, 4}, {1, 2, 2, 1, 1, 1}},
      {"replicate", {2, 3, 3}, {4, 2}},
      {"replicate", {2, 2, 3, 4}, {2, 3, 1, 4}},
      {"replicate", {2, 3, 2, 3}, {1, 1, 1, 2, 1, 0}},
      {"circular", {2, 3, 4}, {4, 1}},
      {"circular", {2, 2, 3, 4}, {1, -2, 2, -1}},
      {"circular", {1, 2, 2, 3, 3}, {1, 2, 2, 1, 1, 1}},
  };
  for (const PadCase& c : cases) {
    for (Layout layout : all_layouts()) {
      if (layout == Layout::ChannelsLast && c.shape.size() < 3) continue;
      SCOPED_TRACE(std::string(c.mode) + " " + shape_str(c.shape) + " " + shape_str(c.padding) +
                   " " + layout_name(layout));
      EXPECT_TRUE(
          gradcheck([&](const TensorList& x) { return pad(x[0], c.padding, c.mode, std::nullopt); },
                    {random_leaf(c.shape, layout)}));
    }
  }
}

struct InterpolateCase {
  const char* mode;
  Shape shape;
  std::vector<int64_t> size;
  std::vector<double> scale_factor;
  std::optional<bool> align_corners;
};

TEST(GradResample, InterpolateEveryMode) {
  const std::vector<InterpolateCase> cases = {
      {"nearest", {2, 3, 3, 4}, {7, 5}, {}, {}},
      {"nearest", {1, 2, 7, 6}, {}, {0.5, 1.5}, {}},
      {"nearest", {2, 3, 5}, {9}, {}, {}},
      {"nearest-exact", {2, 2, 5, 4}, {3, 7}, {}, {}},
      {"bilinear", {2, 3, 3, 4}, {7, 5}, {}, false},
      {"bilinear", {2, 3, 3, 4}, {7, 5}, {}, true},
      {"bilinear", {1, 2, 7, 6}, {3, 4}, {}, true},
      {"bilinear", {1, 2, 7, 6}, {}, {0.6, 1.7}, false},
      {"linear", {2, 3, 5}, {9}, {}, true},
      {"linear", {2, 3, 9}, {4}, {}, false},
      {"area", {2, 2, 7, 5}, {3, 2}, {}, {}},
      {"area", {2, 2, 9}, {4}, {}, {}},
  };
  for (const InterpolateCase& c : cases) {
    for (Layout layout : all_layouts()) {
      SCOPED_TRACE(std::string(c.mode) + " " + shape_str(c.shape) + " " + layout_name(layout));
      EXPECT_TRUE(gradcheck(
          [&](const TensorList& x) {
            return interpolate(x[0], c.size, c.scale_factor, c.mode, c.align_corners);
          },
          {random_leaf(c.shape, layout)}));
    }
  }
}

TEST(GradResample, NodeNamesAndPublicEntryPoints) {
  const Tensor x = random_leaf({1, 2, 4, 4}, Layout::Contiguous);
  EXPECT_EQ(std::string(nn::pad(x, {1, 1}).grad_fn()->name()), "ConstantPadNdBackward");
  EXPECT_EQ(std::string(nn::pad(x, {1, 1, 1, 1}, "reflect").grad_fn()->name()),
            "ReflectionPad2DBackward");
  EXPECT_EQ(std::string(nn::pad(x, {1, 1, 0, 2}, "replicate").grad_fn()->name()),
            "ReplicationPad2DBackward");
  const Tensor line = random_leaf({2, 3, 5}, Layout::Contiguous);
  EXPECT_EQ(std::string(nn::pad(line, {2, 1}, "circular").grad_fn()->name()),
            "CircularPad1DBackward");
  EXPECT_EQ(std::string(nn::interpolate(line, {9}, {}, "linear").grad_fn()->name()),
            "UpsampleLinear1DBackward");
  EXPECT_EQ(std::string(nn::interpolate(x, {8}, {}, "bilinear").grad_fn()->name()),
            "UpsampleBilinear2DBackward");
  EXPECT_EQ(std::string(nn::interpolate(x, {}, {2}).grad_fn()->name()),
            "UpsampleNearest2DBackward");
  // Without grad mode nothing records.
  NoGradGuard no_grad;
  EXPECT_FALSE(nn::interpolate(x, {8}, {}, "bilinear").requires_grad());
  EXPECT_FALSE(nn::pad(x, {1, 1, 1, 1}, "circular").requires_grad());
}

}  // namespace
}  // namespace rcuda::test
