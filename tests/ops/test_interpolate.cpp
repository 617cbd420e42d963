// interpolate on the CPU backend against plain double loops written from PyTorch's documented
// source-index formulas (torch.nn.functional.interpolate; UpSample.h): nearest reads
// floor(o * scale) with PyTorch's float32 scale, nearest-exact floor((o + 0.5) * scale),
// linear the two neighbours of (o + 0.5) * in / out - 0.5 (clamped at 0) or, with
// align_corners, of o * (in - 1) / (out - 1), weighted by distance; area averages adaptive
// windows. Plus values derived by hand for tiny cases, upsampling and downsampling, odd sizes,
// size and scale_factor (recomputed or not), batch 1, an empty batch, contiguous, channels-last
// and strided inputs, float32 and float64 (the half types against float32), input gradients
// against the same loops, and every argument error.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/layer_test_util.h"
#include "rcuda/ops/resample.h"

namespace rcuda::test {
namespace {

struct Case {
  std::string mode;
  Shape shape;  // (N, C, L) or (N, C, H, W)
  std::vector<int64_t> size;
  std::vector<double> scale_factor;
  std::optional<bool> align_corners;
  std::optional<bool> recompute;
};

std::string describe(const Case& c) {
  std::string s = c.mode + " " + shape_str(c.shape);
  if (!c.size.empty()) s += " size " + shape_str(c.size);
  for (double f : c.scale_factor) s += " scale " + std::to_string(f);
  if (c.align_corners) s += *c.align_corners ? " align_corners" : " align_corners=false";
  if (c.recompute && *c.recompute) s += " recompute";
  return s;
}

// One dim's reading rule: for output o, input positions and weights.
struct Axis {
  int64_t in, out;
  double factor;  // the scale_factor the kernel receives, 0 for none
};

std::vector<std::pair<int64_t, double>> taps(const Case& c, const Axis& a, int64_t o) {
  const int64_t last = a.in - 1;
  if (c.mode == "nearest" || c.mode == "nearest-exact") {
    // PyTorch computes the scale in float32: 1 / scale_factor, or in / out.
    const float scale = a.factor > 0 ? static_cast<float>(1.0 / a.factor)
                                     : static_cast<float>(a.in) / static_cast<float>(a.out);
    int64_t i;
    if (c.mode == "nearest") {
      i = a.out == a.in       ? o
          : a.out == 2 * a.in ? o / 2
                              : static_cast<int64_t>(std::floor(static_cast<float>(o) * scale));
    } else {
      i = static_cast<int64_t>(std::floor(static_cast<float>((o + 0.5) * scale)));
    }
    return {{std::min(i, last), 1.0}};
  }
  if (a.in == a.out) return {{o, 1.0}};
  double x;
  if (c.align_corners.value_or(false)) {
    x = a.out > 1 ? static_cast<double>(o) * static_cast<double>(last) / (a.out - 1) : 0.0;
  } else {
    const double scale = a.factor > 0 ? 1.0 / a.factor : static_cast<double>(a.in) / a.out;
    x = std::max(0.0, (o + 0.5) * scale - 0.5);
  }
  const int64_t i0 = std::min(static_cast<int64_t>(std::floor(x)), last);
  const double l1 = std::min(std::max(x - i0, 0.0), 1.0);
  return {{i0, 1 - l1}, {std::min(i0 + 1, last), l1}};
}

// Adaptive average pooling's windows: [floor(o * in / out), ceil((o + 1) * in / out)).
std::vector<std::pair<int64_t, double>> area_taps(const Axis& a, int64_t o) {
  const int64_t lo = (o * a.in) / a.out, hi = ((o + 1) * a.in + a.out - 1) / a.out;
  std::vector<std::pair<int64_t, double>> t;
  for (int64_t i = lo; i < hi; ++i) t.push_back({i, 1.0 / static_cast<double>(hi - lo)});
  return t;
}

struct Reference {
  Shape out_shape;
  std::vector<double> out, grad_input;
};

Reference reference(const Case& c, const std::vector<double>& x, const std::vector<double>& g) {
  const bool two_d = c.shape.size() == 4;
  const int64_t n = c.shape[0], ch = c.shape[1];
  const int64_t H = two_d ? c.shape[2] : 1, W = c.shape.back();
  std::vector<Axis> axes;  // (height, width)
  for (size_t i = 0; i < c.shape.size() - 2; ++i) {
    const int64_t in = c.shape[2 + i];
    const bool recompute = c.recompute.value_or(false);
    if (!c.size.empty()) {
      axes.push_back({in, c.size[c.size.size() == 1 ? 0 : i], 0});
    } else {
      const double f = c.scale_factor[c.scale_factor.size() == 1 ? 0 : i];
      axes.push_back({in, static_cast<int64_t>(std::floor(in * f)), recompute ? 0 : f});
    }
  }
  if (!two_d) axes.insert(axes.begin(), Axis{1, 1, 0});
  const Axis rows = axes[0], cols = axes[1];
  auto rule = [&](const Axis& a, int64_t o) {
    return c.mode == "area" ? area_taps(a, o) : taps(c, a, o);
  };
  Reference r;
  r.out_shape = c.shape;
  if (two_d) r.out_shape[2] = rows.out;
  r.out_shape.back() = cols.out;
  r.grad_input.assign(x.size(), 0);
  for (int64_t plane = 0; plane < n * ch; ++plane)
    for (int64_t oh = 0; oh < rows.out; ++oh)
      for (int64_t ow = 0; ow < cols.out; ++ow) {
        double v = 0;
        const double grad = g[static_cast<size_t>((plane * rows.out + oh) * cols.out + ow)];
        for (const auto& [h, wh] : rule(rows, oh))
          for (const auto& [w, ww] : rule(cols, ow)) {
            const size_t at = static_cast<size_t>((plane * H + h) * W + w);
            v += wh * ww * x[at];
            r.grad_input[at] += wh * ww * grad;
          }
        r.out.push_back(v);
      }
  return r;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // nearest: up and down by size, doubling, a given factor (used as 1 / factor) and the
      // same factor recomputed, 1-D, batch 1, an empty batch, a 1x1 output.
      {"nearest", {2, 3, 3, 4}, {7, 9}, {}, {}, {}},
      {"nearest", {1, 2, 9, 7}, {4, 3}, {}, {}, {}},
      {"nearest", {2, 2, 3, 5}, {}, {2}, {}, {}},
      {"nearest", {2, 2, 4, 5}, {}, {1.7, 0.6}, {}, {}},
      {"nearest", {2, 2, 4, 5}, {}, {1.7, 0.6}, {}, true},
      {"nearest", {2, 3, 11}, {4}, {}, {}, {}},
      {"nearest", {2, 3, 5}, {}, {2.5}, {}, {}},
      {"nearest", {0, 3, 4, 4}, {8}, {}, {}, {}},
      {"nearest", {2, 3, 4, 5}, {1}, {}, {}, {}},
      {"nearest-exact", {2, 3, 3, 4}, {7, 9}, {}, {}, {}},
      {"nearest-exact", {1, 2, 9, 7}, {4, 3}, {}, {}, {}},
      {"nearest-exact", {2, 3, 5}, {}, {1.5}, {}, {}},
      // bilinear: both corner rules, up and down, odd sizes, a single row in or out, factors.
      {"bilinear", {2, 3, 3, 4}, {7, 9}, {}, false, {}},
      {"bilinear", {2, 3, 3, 4}, {7, 9}, {}, true, {}},
      {"bilinear", {1, 2, 9, 7}, {4, 3}, {}, {}, {}},
      {"bilinear", {1, 2, 9, 7}, {4, 3}, {}, true, {}},
      {"bilinear", {2, 2, 1, 5}, {3, 8}, {}, true, {}},
      {"bilinear", {2, 2, 4, 5}, {1, 2}, {}, true, {}},
      {"bilinear", {2, 2, 4, 5}, {1, 2}, {}, false, {}},
      {"bilinear", {2, 2, 4, 6}, {}, {2, 0.5}, {}, {}},
      {"bilinear", {2, 2, 5, 6}, {}, {1.3, 2.7}, {}, {}},
      {"bilinear", {2, 2, 5, 6}, {}, {1.3, 2.7}, {}, true},
      {"bilinear", {2, 2, 5, 6}, {5, 6}, {}, {}, {}},
      {"bilinear", {0, 2, 5, 6}, {3}, {}, {}, {}},
      // linear (1-D).
      {"linear", {2, 3, 7}, {12}, {}, false, {}},
      {"linear", {2, 3, 7}, {12}, {}, true, {}},
      {"linear", {1, 4, 13}, {5}, {}, {}, {}},
      {"linear", {2, 3, 6}, {}, {0.75}, {}, {}},
      // area: adaptive average pooling.
      {"area", {2, 3, 7, 9}, {3, 4}, {}, {}, {}},
      {"area", {2, 3, 10}, {}, {0.4}, {}, {}},
  };
  return all;
}

Tensor run(const Case& c, const Tensor& x) {
  return ops::interpolate(x, c.size, c.scale_factor, c.mode, c.align_corners, c.recompute);
}

// float32 computes the source coordinate in float32 (as PyTorch's opmath), so a linear weight
// carries an error of about 1.2e-7 * the coordinate, times value differences up to 4 here; the
// backward sums several such products.
double float32_tolerance(const Case& c, const Shape& out_shape) {
  int64_t largest = 1;
  for (size_t d = 2; d < c.shape.size(); ++d)
    largest = std::max({largest, c.shape[d], out_shape[d]});
  return 2e-6 * static_cast<double>(1 + largest);
}

TEST(Interpolate, ForwardAndBackwardMatchDoubleLoops) {
  for (const Case& c : cases()) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      for (Layout layout : all_layouts()) {
        SCOPED_TRACE(describe(c) + " " + dtype_name(dtype) + " " + layout_name(layout));
        const Tensor x = in_layout(random_tensor(c.shape, dtype), layout);
        const Reference probe = reference(c, to_doubles(x), std::vector<double>(x.numel(), 0));
        const Tensor g = random_tensor(probe.out_shape, dtype, -1, 1);
        const Reference ref = reference(c, to_doubles(x), to_doubles(g));
        const Tensor out = run(c, x);
        ASSERT_EQ(out.shape(), ref.out_shape);
        const double tol = dtype == DType::Float32 ? float32_tolerance(c, ref.out_shape) : 1e-12;
        EXPECT_TRUE(all_close(to_doubles(out), ref.out, tol)) << "out";
        EXPECT_TRUE(in_expected_format(out, layout));
        if (c.mode == "area") continue;  // adaptive pooling's backward: tests/ops/test_pool.cpp
        const ops::InterpolatePlan plan =
            ops::interpolate_plan(x, c.size, c.scale_factor, c.mode, c.align_corners, c.recompute);
        EXPECT_EQ(plan.output_shape, ref.out_shape);
        const Tensor grad = ops::interpolate_backward(in_layout(g, layout), plan);
        ASSERT_EQ(grad.shape(), x.shape());
        EXPECT_TRUE(all_close(to_doubles(grad), ref.grad_input, tol)) << "grad_input";
        EXPECT_TRUE(in_expected_format(grad, layout));
      }
    }
  }
}

// Values worked out by hand from the formulas for [[1, 2], [3, 4]] and [0, 10].
TEST(Interpolate, HandComputedValues) {
  const Tensor x = tensor_of({1, 2, 3, 4}, {1, 1, 2, 2}, DType::Float64);
  // align_corners: positions 0, 1/3, 2/3, 1 along each dim; out = 1 + w / 3 + 2 h / 3.
  EXPECT_TRUE(all_close(to_doubles(ops::interpolate(x, {4}, {}, "bilinear", true)),
                        {1, 4. / 3, 5. / 3, 2, 5. / 3, 2, 7. / 3, 8. / 3, 7. / 3, 8. / 3, 3,
                         10. / 3, 3, 10. / 3, 11. / 3, 4},
                        1e-15));
  // Half-pixel centres: (o + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (the last
  // input), so positions 0, 0.25, 0.75, 1.
  EXPECT_TRUE(all_close(
      to_doubles(ops::interpolate(x, {}, {2}, "bilinear", false)),
      {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}, 1e-15));
  EXPECT_TRUE(all_close(to_doubles(ops::interpolate(x, {4}, {}, "nearest")),
                        {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0));
  const Tensor line = tensor_of({0, 10}, {1, 1, 2}, DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(ops::interpolate(line, {5}, {}, "linear", true)),
                        {0, 2.5, 5, 7.5, 10}, 1e-6));
  // (o + 0.5) * 0.4 - 0.5 = 0 (clamped), 0.1, 0.5, 0.9, 1.3 (the last input).
  EXPECT_TRUE(all_close(to_doubles(ops::interpolate(line, {5}, {}, "linear", false)),
                        {0, 1, 5, 9, 10}, 1e-6));
  // Three to two: nearest reads floor(o * 1.5) = 0, 1; nearest-exact floor((o + 0.5) * 1.5) =
  // 0, 2.
  const Tensor three = tensor_of({5, 6, 7}, {1, 1, 3}, DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(ops::interpolate(three, {2})), {5, 6}, 0));
  EXPECT_TRUE(all_close(to_doubles(ops::interpolate(three, {2}, {}, "nearest-exact")), {5, 7}, 0));
  // The gradient of nearest doubling sums each pair of outputs; of linear with align_corners
  // [0, 10] -> 5 points: weights (1, .75, .5, .25, 0) and their complements.
  const ops::InterpolatePlan near =
      ops::interpolate_plan(line, {4}, {}, "nearest", std::nullopt, std::nullopt);
  EXPECT_TRUE(all_close(to_doubles(ops::interpolate_backward(
                            tensor_of({1, 2, 4, 8}, {1, 1, 4}, DType::Float32), near)),
                        {3, 12}, 0));
  const ops::InterpolatePlan lin =
      ops::interpolate_plan(line, {5}, {}, "linear", true, std::nullopt);
  EXPECT_TRUE(all_close(to_doubles(ops::interpolate_backward(
                            tensor_of({1, 1, 1, 1, 1}, {1, 1, 5}, DType::Float32), lin)),
                        {2.5, 2.5}, 1e-6));
}

// float32 agrees with float64 on a larger input (the OpenMP split; the tolerance as
// float32_tolerance says for sizes up to 47), and the half types with float32 on the same
// rounded inputs.
TEST(Interpolate, DtypesAgree) {
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    SCOPED_TRACE(layout_name(layout));
    const Tensor x32 = in_layout(random_tensor({4, 16, 33, 31}, DType::Float32), layout);
    const Tensor x64 = in_layout(tensor_of(to_doubles(x32), x32.shape(), DType::Float64), layout);
    for (const char* mode : {"nearest", "bilinear"}) {
      const Tensor a = ops::interpolate(x32, {47, 20}, {}, mode);
      EXPECT_TRUE(
          all_close(to_doubles(a), to_doubles(ops::interpolate(x64, {47, 20}, {}, mode)), 1e-4));
      EXPECT_TRUE(in_expected_format(a, layout));
    }
  }
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = random_tensor({2, 3, 5, 7}, dtype);
    const Tensor x32 = tensor_of(to_doubles(x), x.shape(), DType::Float32);
    for (const char* mode : {"nearest", "nearest-exact", "bilinear"}) {
      EXPECT_TRUE(all_close(to_doubles(ops::interpolate(x, {9, 4}, {}, mode)),
                            rounded_to(to_doubles(ops::interpolate(x32, {9, 4}, {}, mode)), dtype),
                            tolerance(dtype)));
      const ops::InterpolatePlan p =
          ops::interpolate_plan(x, {9, 4}, {}, mode, std::nullopt, std::nullopt);
      const Tensor g = random_tensor({2, 3, 9, 4}, dtype);
      const Tensor g32 = tensor_of(to_doubles(g), g.shape(), DType::Float32);
      EXPECT_TRUE(all_close(to_doubles(ops::interpolate_backward(g, p)),
                            rounded_to(to_doubles(ops::interpolate_backward(g32, p)), dtype),
                            tolerance(dtype)));
    }
  }
}

TEST(Interpolate, ArgumentErrors) {
  const Tensor x = random_tensor({2, 3, 4, 5}, DType::Float32);
  const Tensor x1 = random_tensor({2, 3, 5}, DType::Float32);
  expect_error_mentioning([&] { ops::interpolate(x); }, "ValueError",
                          {"interpolate", "either size or scale_factor"});
  expect_error_mentioning([&] { ops::interpolate(x, {8}, {2.0}); }, "ValueError",
                          {"interpolate", "only one of size and scale_factor", "[8]", "[2]"});
  expect_error_mentioning([&] { ops::interpolate(x, {8}, {}, "bicubic"); }, "ValueError",
                          {"interpolate", "mode must be", "'bicubic'", "not supported"});
  expect_error_mentioning(
      [&] { ops::interpolate(x, {8}, {}, "linear"); }, "ShapeError",
      {"interpolate", "mode 'linear' expects a 3-D", "[2, 3, 4, 5]", "'bilinear'"});
  expect_error_mentioning([&] { ops::interpolate(x1, {8}, {}, "bilinear"); }, "ShapeError",
                          {"mode 'bilinear' expects a 4-D", "[2, 3, 5]"});
  expect_error_mentioning(
      [&] {
        ops::interpolate(random_tensor({3, 5}, DType::Float32), {8});
      },
      "ShapeError", {"mode 'nearest' expects a 3-D (N, C, L) or 4-D (N, C, H, W)", "[3, 5]"});
  expect_error_mentioning(
      [&] {
        ops::interpolate(random_tensor({2, 0, 4, 4}, DType::Float32), {8});
      },
      "ShapeError", {"non-zero sizes but for N", "[2, 0, 4, 4]"});
  expect_error_mentioning([&] { ops::interpolate(x, {8}, {}, "nearest", false); }, "ValueError",
                          {"align_corners can only be set", "'nearest'"});
  expect_error_mentioning([&] { ops::interpolate(x, {8}, {}, "area", true); }, "ValueError",
                          {"align_corners", "'area'"});
  expect_error_mentioning([&] { ops::interpolate(x, {8}, {}, "nearest", {}, true); }, "ValueError",
                          {"recompute_scale_factor is not meaningful"});
  expect_error_mentioning(
      [&] {
        ops::interpolate(x, {8, 8, 8});
      },
      "ValueError", {"size must have 1 or 2 values", "got 3", "[8, 8, 8]"});
  expect_error_mentioning(
      [&] {
        ops::interpolate(x, {8, 0});
      },
      "ValueError", {"size must be at least 1", "[8, 0]"});
  expect_error_mentioning(
      [&] {
        ops::interpolate(x1, {}, {2.0, 2.0});
      },
      "ValueError", {"scale_factor must have 1 value", "3-D", "[2, 2]"});
  expect_error_mentioning([&] { ops::interpolate(x, {}, {-1.0}); }, "ValueError",
                          {"scale_factor must be positive and finite", "[-1]"});
  expect_error_mentioning([&] { ops::interpolate(x, {}, {INFINITY}); }, "ValueError",
                          {"positive and finite"});
  expect_error_mentioning([&] { ops::interpolate(x, {}, {0.2}); }, "ShapeError",
                          {"scale_factor 0.2", "size 4", "output of size 0"});
  expect_error_mentioning(
      [&] {
        ops::interpolate(random_tensor({2, 3, 4, 5}, DType::Int32), {8});
      },
      "DTypeError", {"interpolate", "int32"});
  const ops::InterpolatePlan p =
      ops::interpolate_plan(x, {8}, {}, "bilinear", std::nullopt, std::nullopt);
  expect_error_mentioning([&] { ops::interpolate_backward(x, p); }, "ShapeError",
                          {"interpolate_backward", "grad_output", "[2, 3, 4, 5]", "[2, 3, 8, 8]"});
}

}  // namespace
}  // namespace rcuda::test
