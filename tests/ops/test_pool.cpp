// Pooling on the CPU backend against plain double loops written from PyTorch's definitions:
// every pool over a table of configurations (odd sizes, batch 1 and no batch, ceil_mode,
// padding, dilation, empty batches), in every memory format, float32 (oneDNN where it applies)
// and float64 (the loops), values-only and with indices; the input gradients against the same
// loops; float32 against float64; and the argument errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ops/layer_test_util.h"
#include "rcuda/ops/pool.h"

namespace rcuda::test {
namespace {

enum class Kind { Max, Avg, AdaptiveMax, AdaptiveAvg };

struct Case {
  Kind kind = Kind::Max;
  Shape shape;   // (N, C, H, W), (C, H, W), (N, C, L) or (C, L)
  int dims = 2;  // spatial dims
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode = false, count_include_pad = true;
  int64_t divisor = 0;               // avg_pool2d's divisor_override (0: none)
  std::vector<int64_t> output_size;  // adaptive
};

Case max_case(Shape shape, int dims, std::vector<int64_t> kernel, std::vector<int64_t> stride,
              std::vector<int64_t> padding, std::vector<int64_t> dilation, bool ceil_mode = false) {
  Case c;
  c.kind = Kind::Max;
  c.shape = std::move(shape);
  c.dims = dims;
  c.kernel = std::move(kernel);
  c.stride = std::move(stride);
  c.padding = std::move(padding);
  c.dilation = std::move(dilation);
  c.ceil_mode = ceil_mode;
  return c;
}

Case avg_case(Shape shape, int dims, std::vector<int64_t> kernel, std::vector<int64_t> stride,
              std::vector<int64_t> padding, bool ceil_mode = false, bool count_include_pad = true,
              int64_t divisor = 0) {
  Case c = max_case(std::move(shape), dims, std::move(kernel), std::move(stride),
                    std::move(padding), {}, ceil_mode);
  c.kind = Kind::Avg;
  c.count_include_pad = count_include_pad;
  c.divisor = divisor;
  return c;
}

Case adaptive_case(Kind kind, Shape shape, std::vector<int64_t> output_size) {
  Case c;
  c.kind = kind;
  c.shape = std::move(shape);
  c.dims = 2;
  c.output_size = std::move(output_size);
  return c;
}

std::string describe(const Case& c) {
  const char* kinds[] = {"max", "avg", "adaptive_max", "adaptive_avg"};
  std::string s = std::string(kinds[static_cast<int>(c.kind)]) + std::to_string(c.dims) + "d " +
                  shape_str(c.shape);
  if (c.kind == Kind::AdaptiveMax || c.kind == Kind::AdaptiveAvg)
    return s + " out " + shape_str(c.output_size);
  s += " k" + shape_str(c.kernel) + " s" + shape_str(c.stride) + " p" + shape_str(c.padding);
  if (!c.dilation.empty()) s += " d" + shape_str(c.dilation);
  if (c.ceil_mode) s += " ceil";
  if (!c.count_include_pad) s += " exclude_pad";
  if (c.divisor) s += " divisor " + std::to_string(c.divisor);
  return s;
}

int64_t at(const std::vector<int64_t>& v, int i, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
}

// The reference's view of one spatial dim (for 1-D pools the height is a dim of size 1).
struct Dim {
  int64_t in, out, k, s, p, d;
};

// PyTorch's pooling_output_shape.
int64_t output_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
  int64_t out = static_cast<int64_t>(std::floor(static_cast<double>(num) / s)) + 1;
  if (ceil && (out - 1) * s >= in + p) --out;
  return out;
}

struct Problem {
  int64_t n, c;
  Dim h, w;
  Shape out_shape;
};

Problem problem(const Case& c) {
  const bool batched = static_cast<int>(c.shape.size()) == c.dims + 2;
  Problem p;
  p.n = batched ? c.shape[0] : 1;
  p.c = c.shape[batched ? 1 : 0];
  const int64_t in_h = c.dims == 2 ? c.shape[c.shape.size() - 2] : 1, in_w = c.shape.back();
  const bool adaptive = c.kind == Kind::AdaptiveMax || c.kind == Kind::AdaptiveAvg;
  auto dim = [&](int i, int64_t in) {  // i: index among the case's spatial dims
    if (adaptive) return Dim{in, at(c.output_size, i, 1), 0, 0, 0, 1};
    const int64_t k = at(c.kernel, i, 1), s = at(c.stride, i, k), pad = at(c.padding, i, 0),
                  d = at(c.dilation, i, 1);
    return Dim{in, output_size(in, k, s, pad, d, c.ceil_mode), k, s, pad, d};
  };
  p.h = c.dims == 2 ? dim(0, in_h) : Dim{1, 1, 1, 1, 0, 1};
  p.w = dim(c.dims == 2 ? 1 : 0, in_w);
  p.out_shape = c.shape;
  if (c.dims == 2) p.out_shape[p.out_shape.size() - 2] = p.h.out;
  p.out_shape.back() = p.w.out;
  return p;
}

struct Reference {
  std::vector<double> out, indices, grad_input;
};

// Windows straight from the definitions: fixed windows tap o * s - p + j * d; adaptive ones
// cover [floor(o * in / out), ceil((o + 1) * in / out)).
Reference reference(const Case& c, const std::vector<double>& x, const std::vector<double>& g) {
  const Problem p = problem(c);
  const int64_t H = p.h.in, W = p.w.in, OH = p.h.out, OW = p.w.out;
  Reference r;
  r.grad_input.assign(x.size(), 0);
  for (int64_t plane = 0; plane < p.n * p.c; ++plane) {
    const double* xp = &x[plane * H * W];
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const double grad = g[(plane * OH + oh) * OW + ow];
        std::vector<std::pair<int64_t, int64_t>> taps;  // (h, w) inside the input
        double divisor = 0;
        if (c.kind == Kind::AdaptiveMax || c.kind == Kind::AdaptiveAvg) {
          const auto lo = [](int64_t o, int64_t in, int64_t out) {
            return static_cast<int64_t>(std::floor(static_cast<double>(o * in) / out));
          };
          const auto hi = [](int64_t o, int64_t in, int64_t out) {
            return static_cast<int64_t>(std::ceil(static_cast<double>((o + 1) * in) / out));
          };
          for (int64_t h = lo(oh, H, OH); h < hi(oh, H, OH); ++h)
            for (int64_t w = lo(ow, W, OW); w < hi(ow, W, OW); ++w) taps.push_back({h, w});
          divisor = static_cast<double>(taps.size());
        } else if (c.kind == Kind::Max) {
          for (int64_t i = 0; i < p.h.k; ++i)
            for (int64_t j = 0; j < p.w.k; ++j) {
              const int64_t h = oh * p.h.s - p.h.p + i * p.h.d, w = ow * p.w.s - p.w.p + j * p.w.d;
              if (h >= 0 && h < H && w >= 0 && w < W) taps.push_back({h, w});
            }
        } else {  // avg: the padded count stops at the padded edge (PyTorch's avg_pool2d)
          const int64_t h0 = oh * p.h.s - p.h.p, w0 = ow * p.w.s - p.w.p;
          const int64_t h1 = std::min(h0 + p.h.k, H + p.h.p), w1 = std::min(w0 + p.w.k, W + p.w.p);
          for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, H); ++h)
            for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w1, W); ++w)
              taps.push_back({h, w});
          divisor = c.divisor != 0        ? static_cast<double>(c.divisor)
                    : c.count_include_pad ? static_cast<double>((h1 - h0) * (w1 - w0))
                                          : static_cast<double>(taps.size());
        }
        if (c.kind == Kind::Max || c.kind == Kind::AdaptiveMax) {
          double best = -std::numeric_limits<double>::infinity();
          int64_t best_index = -1;
          for (const auto& [h, w] : taps)
            if (xp[h * W + w] > best) {
              best = xp[h * W + w];
              best_index = h * W + w;
            }
          r.out.push_back(best);
          r.indices.push_back(static_cast<double>(best_index));
          if (best_index >= 0) r.grad_input[plane * H * W + best_index] += grad;
        } else {
          double sum = 0;
          for (const auto& [h, w] : taps) sum += xp[h * W + w];
          r.out.push_back(sum / divisor);
          for (const auto& [h, w] : taps) r.grad_input[plane * H * W + h * W + w] += grad / divisor;
        }
      }
  }
  return r;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    std::vector<Case> v;
    // Max pools: defaults, strides, padding, dilation, ceil_mode (one with its last window
    // dropped: H 5, k 2, s 2, p 1), batch 1, no batch, empty batch, rectangular everything.
    v.push_back(max_case({2, 3, 7, 9}, 2, {3}, {2}, {1}, {1}));
    v.push_back(max_case({1, 2, 8, 8}, 2, {2}, {}, {0}, {1}));
    v.push_back(max_case({2, 3, 7, 7}, 2, {3}, {2}, {1}, {1}, true));
    v.push_back(max_case({2, 2, 9, 10}, 2, {3}, {1}, {1}, {2}));
    v.push_back(max_case({1, 1, 5, 6}, 2, {2, 3}, {1, 2}, {1, 0}, {1}, true));
    v.push_back(max_case({2, 3, 11, 4}, 2, {4, 2}, {3, 1}, {2, 1}, {1, 2}, true));
    v.push_back(max_case({1, 2, 5, 5}, 2, {2}, {2}, {1}, {1}, true));
    v.push_back(max_case({3, 6, 5}, 2, {2}, {1}, {1}, {1}));
    v.push_back(max_case({0, 3, 5, 5}, 2, {2}, {}, {0}, {1}));
    v.push_back(max_case({2, 3, 1, 7}, 2, {1, 3}, {1, 2}, {0, 1}, {1}));
    v.push_back(max_case({2, 2, 4, 4}, 2, {4}, {1}, {2}, {1}));  // the kernel over all
    v.push_back(max_case({2, 3, 13}, 1, {3}, {2}, {1}, {2}, true));
    v.push_back(max_case({4, 9}, 1, {2}, {}, {1}, {1}));
    // Average pools: padding counted or not, ceil_mode's overhang past the padding (the
    // divisor stops at the padded edge), divisor_override, 1-D.
    v.push_back(avg_case({2, 3, 7, 9}, 2, {3}, {2}, {1}, false, true));
    v.push_back(avg_case({2, 3, 7, 9}, 2, {3}, {2}, {1}, false, false));
    v.push_back(avg_case({2, 3, 6, 6}, 2, {3}, {2}, {1}, true, true));
    v.push_back(avg_case({1, 2, 6, 5}, 2, {3, 2}, {2, 2}, {1, 1}, true, false));
    v.push_back(avg_case({2, 2, 5, 7}, 2, {2, 3}, {1, 2}, {0, 1}, false, true, 5));
    v.push_back(avg_case({1, 3, 4, 4}, 2, {2}, {}, {0}, true, true, -3));
    v.push_back(avg_case({3, 5, 5}, 2, {3}, {1}, {1}, false, true));
    v.push_back(avg_case({0, 2, 4, 4}, 2, {2}, {}, {0}));
    v.push_back(avg_case({2, 3, 10}, 1, {4}, {3}, {2}, true, true));
    v.push_back(avg_case({2, 3, 10}, 1, {3}, {1}, {1}, false, false));
    // Adaptive pools: dividing and non-dividing sizes, outputs larger than inputs, no batch.
    v.push_back(adaptive_case(Kind::AdaptiveAvg, {2, 3, 7, 9}, {3, 4}));
    v.push_back(adaptive_case(Kind::AdaptiveAvg, {1, 2, 8, 8}, {1}));
    v.push_back(adaptive_case(Kind::AdaptiveAvg, {2, 2, 3, 5}, {5, 7}));
    v.push_back(adaptive_case(Kind::AdaptiveAvg, {3, 6, 6}, {4}));
    v.push_back(adaptive_case(Kind::AdaptiveAvg, {0, 2, 6, 6}, {2}));
    v.push_back(adaptive_case(Kind::AdaptiveMax, {2, 3, 7, 9}, {3, 4}));
    v.push_back(adaptive_case(Kind::AdaptiveMax, {1, 2, 5, 5}, {1}));
    v.push_back(adaptive_case(Kind::AdaptiveMax, {2, 1, 3, 4}, {6, 5}));
    v.push_back(adaptive_case(Kind::AdaptiveMax, {3, 7, 5}, {2, 3}));
    return v;
  }();
  return all;
}

struct Result {
  Tensor out, indices;
};

Result run_forward(const Case& c, const Tensor& x, bool with_indices) {
  switch (c.kind) {
    case Kind::Max: {
      const std::optional<int64_t> s1 =
          c.stride.empty() ? std::nullopt : std::optional<int64_t>(c.stride[0]);
      if (c.dims == 1) {
        if (!with_indices)
          return {ops::max_pool1d(x, c.kernel[0], s1, c.padding[0], c.dilation[0], c.ceil_mode),
                  Tensor()};
        const auto r = ops::max_pool1d_with_indices(x, c.kernel[0], s1, c.padding[0], c.dilation[0],
                                                    c.ceil_mode);
        return {r.out, r.indices};
      }
      if (!with_indices)
        return {ops::max_pool2d(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode),
                Tensor()};
      const auto r =
          ops::max_pool2d_with_indices(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
      return {r.out, r.indices};
    }
    case Kind::Avg: {
      if (c.dims == 1)
        return {ops::avg_pool1d(x, c.kernel[0], c.stride[0], c.padding[0], c.ceil_mode,
                                c.count_include_pad),
                Tensor()};
      return {ops::avg_pool2d(x, c.kernel, c.stride, c.padding, c.ceil_mode, c.count_include_pad,
                              c.divisor ? std::optional<int64_t>(c.divisor) : std::nullopt),
              Tensor()};
    }
    case Kind::AdaptiveAvg:
      return {ops::adaptive_avg_pool2d(x, c.output_size), Tensor()};
    case Kind::AdaptiveMax: {
      const auto r = ops::adaptive_max_pool2d(x, c.output_size);
      return {r.out, r.indices};
    }
  }
  return {};
}

ops::PoolOptions options_of(const Case& c) {
  switch (c.kind) {
    case Kind::Max:
      return ops::max_pool_options(c.dims, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
    case Kind::Avg:
      return ops::avg_pool_options(c.dims, c.kernel, c.stride, c.padding, c.ceil_mode,
                                   c.count_include_pad,
                                   c.divisor ? std::optional<int64_t>(c.divisor) : std::nullopt);
    case Kind::AdaptiveAvg:
      return ops::adaptive_pool_options(PoolOp::Avg, c.output_size);
    case Kind::AdaptiveMax:
      return ops::adaptive_pool_options(PoolOp::Max, c.output_size);
  }
  return {};
}

bool has_batch(const Case& c) { return static_cast<int>(c.shape.size()) == c.dims + 2; }
bool is_max(const Case& c) { return c.kind == Kind::Max || c.kind == Kind::AdaptiveMax; }

// Distinct values (a shuffled ramp), so that every maximum is unique and its index defined.
Tensor distinct_values(const Shape& shape, DType dtype) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = -3 + 0.03125 * static_cast<double>(i);
  std::shuffle(v.begin(), v.end(), rng());
  return tensor_of(v, shape, dtype);
}

TEST(Pool, ForwardAndBackwardMatchDoubleLoops) {
  for (const Case& c : cases()) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      for (Layout layout : all_layouts()) {
        if (layout == Layout::ChannelsLast && !has_batch(c)) continue;
        SCOPED_TRACE(describe(c) + " " + dtype_name(dtype) + " " + layout_name(layout));
        const Tensor x = in_layout(distinct_values(c.shape, dtype), layout);
        const Problem p = problem(c);
        const Tensor g = random_tensor(p.out_shape, dtype, -1, 1);
        const Reference ref = reference(c, to_doubles(x), to_doubles(g));
        const double tol = tolerance(dtype);
        for (bool with_indices : {false, true}) {
          const Result r = run_forward(c, x, with_indices);
          ASSERT_EQ(r.out.shape(), p.out_shape);
          EXPECT_TRUE(all_close(to_doubles(r.out), ref.out, tol)) << "out";
          EXPECT_TRUE(in_expected_format(r.out, layout));
          if (is_max(c) && (with_indices || c.kind == Kind::AdaptiveMax)) {
            ASSERT_TRUE(r.indices.defined());
            EXPECT_EQ(r.indices.dtype(), DType::Int64);
            EXPECT_TRUE(all_close(to_doubles(r.indices), ref.indices, 0)) << "indices";
            EXPECT_TRUE(in_expected_format(r.indices, layout));
          }
        }
        // The input gradient, from the forward's indices for max pools.
        const ops::PoolOptions options = options_of(c);
        const ops::PoolForward f = ops::pool_forward(x, options, true);
        const Tensor grad = ops::pool_backward(in_layout(g, layout), x.shape(), f.channels_last,
                                               f.indices, options);
        ASSERT_EQ(grad.shape(), x.shape());
        EXPECT_TRUE(all_close(to_doubles(grad), ref.grad_input, tol)) << "grad_input";
        EXPECT_TRUE(in_expected_format(grad, layout));
      }
    }
  }
}

// A dilated window that holds no input element (taps -1 and 2 of a 2-row input) gives -inf and
// index -1, and no gradient.
TEST(Pool, MaxWindowWithoutInputElements) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = random_tensor({1, 1, 2, 2}, dtype);
    const auto r = ops::max_pool2d_with_indices(x, {2}, {1}, {1}, {3});
    ASSERT_EQ(r.out.shape(), (Shape{1, 1, 1, 1}));
    EXPECT_EQ(to_doubles(r.out)[0], -std::numeric_limits<double>::infinity());
    EXPECT_EQ(to_doubles(r.indices)[0], -1);
    const ops::PoolOptions o = ops::max_pool_options(2, {2}, {1}, {1}, {3}, false);
    const Tensor grad =
        ops::pool_backward(tensor_of({1.0}, {1, 1, 1, 1}, dtype), x.shape(), false, r.indices, o);
    EXPECT_TRUE(all_close(to_doubles(grad), {0, 0, 0, 0}, 0));
  }
}

// float32 (oneDNN where it applies) agrees with float64 (the loops) on the same rounded inputs,
// over a larger input than the table's so that the OpenMP split runs.
TEST(Pool, Float32MatchesFloat64) {
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    SCOPED_TRACE(layout_name(layout));
    const Tensor x32 = in_layout(distinct_values({4, 16, 33, 31}, DType::Float32), layout);
    const Tensor x64 = in_layout(tensor_of(to_doubles(x32), x32.shape(), DType::Float64), layout);
    auto both = [&](auto f) {
      EXPECT_TRUE(all_close(to_doubles(f(x32)), to_doubles(f(x64)), 2e-6));
    };
    both([](const Tensor& x) { return ops::max_pool2d(x, {3}, {2}, {1}); });
    both([](const Tensor& x) { return ops::max_pool2d_with_indices(x, {3}, {2}, {1}).indices; });
    both([](const Tensor& x) { return ops::avg_pool2d(x, {3}, {2}, {1}); });
    both([](const Tensor& x) { return ops::avg_pool2d(x, {3}, {2}, {1}, true, false); });
    both([](const Tensor& x) { return ops::adaptive_avg_pool2d(x, {5, 7}); });
    const ops::PoolOptions avg = ops::avg_pool_options(2, {3}, {2}, {1}, false, true, std::nullopt);
    const Shape out_shape = {4, 16, 17, 16};
    const Tensor g32 = random_tensor(out_shape, DType::Float32);
    const Tensor g64 = tensor_of(to_doubles(g32), out_shape, DType::Float64);
    const bool cl = layout == Layout::ChannelsLast;
    EXPECT_TRUE(all_close(to_doubles(ops::pool_backward(g32, x32.shape(), cl, Tensor(), avg)),
                          to_doubles(ops::pool_backward(g64, x64.shape(), cl, Tensor(), avg)),
                          2e-6));
  }
}

TEST(Pool, HalfTypesMatchFloat32) {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    const Tensor x = distinct_values({2, 3, 9, 8}, dtype);
    const Tensor x32 = tensor_of(to_doubles(x), x.shape(), DType::Float32);
    const auto h = ops::max_pool2d_with_indices(x, {3}, {2}, {1}, {1}, true);
    const auto f = ops::max_pool2d_with_indices(x32, {3}, {2}, {1}, {1}, true);
    EXPECT_TRUE(all_close(to_doubles(h.out), to_doubles(f.out), 0));
    EXPECT_TRUE(all_close(to_doubles(h.indices), to_doubles(f.indices), 0));
    EXPECT_TRUE(all_close(to_doubles(ops::avg_pool2d(x, {2})),
                          rounded_to(to_doubles(ops::avg_pool2d(x32, {2})), dtype),
                          tolerance(dtype)));
  }
}

TEST(Pool, ArgumentErrors) {
  const Tensor x = random_tensor({2, 3, 5, 5}, DType::Float32);
  expect_error_mentioning([&] { ops::max_pool2d(x, {6}); }, "ShapeError",
                          {"max_pool2d", "kernel_size 6", "larger than the padded input", "5"});
  expect_error_mentioning([&] { ops::max_pool2d(x, {3}, {1}, {0}, {3}); }, "ShapeError",
                          {"max_pool2d", "dilated to 7", "larger"});
  expect_error_mentioning(
      [&] { ops::max_pool2d(x, {3}, {1}, {2}); }, "ValueError",
      {"max_pool2d", "padding should be at most half of kernel_size", "[2, 2]", "[3, 3]"});
  expect_error_mentioning(
      [&] {
        ops::avg_pool2d(x, {2, 0});
      },
      "ValueError", {"avg_pool2d", "kernel_size", "greater than zero", "[2, 0]"});
  expect_error_mentioning([&] { ops::max_pool2d(x, {2}, {0}); }, "ValueError",
                          {"max_pool2d", "stride", "[0, 0]"});
  expect_error_mentioning([&] { ops::max_pool2d(x, {2}, {}, {-1}); }, "ValueError",
                          {"padding", "non-negative"});
  expect_error_mentioning([&] { ops::max_pool2d(x, {2}, {}, {0}, {0}); }, "ValueError",
                          {"dilation", "greater than zero"});
  expect_error_mentioning(
      [&] {
        ops::max_pool2d(x, {2, 2, 2});
      },
      "ValueError", {"kernel_size must have 1 or 2 values", "3"});
  expect_error_mentioning([&] { ops::avg_pool2d(x, {2}, {}, {0}, false, true, 0); }, "ValueError",
                          {"avg_pool2d", "divisor_override must not be zero"});
  expect_error_mentioning(
      [&] {
        ops::max_pool2d(random_tensor({3, 5}, DType::Float32), {2});
      },
      "ShapeError", {"max_pool2d", "(N, C, H, W)", "[3, 5]"});
  expect_error_mentioning(
      [&] {
        ops::max_pool2d(random_tensor({2, 0, 5, 5}, DType::Float32), {2});
      },
      "ShapeError", {"non-zero sizes", "[2, 0, 5, 5]"});
  expect_error_mentioning(
      [&] {
        ops::max_pool1d(random_tensor({2, 3, 4}, DType::Float32), 5);
      },
      "ShapeError", {"max_pool1d", "length 4"});
  expect_error_mentioning(
      [&] {
        ops::max_pool2d(random_tensor({2, 3, 5, 5}, DType::Int64), {2});
      },
      "DTypeError", {"max_pool2d", "int64"});
  expect_error_mentioning(
      [&] {
        ops::adaptive_avg_pool2d(x, {0, 2});
      },
      "ValueError", {"adaptive_avg_pool2d", "output_size", "[0, 2]"});
  expect_error_mentioning(
      [&] {
        ops::adaptive_max_pool2d(x, {1, 2, 3});
      },
      "ValueError", {"adaptive_max_pool2d", "output_size must have 1 or 2 values"});
  const ops::PoolOptions o = ops::max_pool_options(2, {2}, {}, {0}, {1}, false);
  expect_error_mentioning(
      [&] {
        ops::pool_backward(random_tensor({2, 3, 3, 3}, DType::Float32), x.shape(), false, Tensor(),
                           o);
      },
      "ShapeError", {"max_pool2d_backward", "grad_output", "[2, 3, 2, 2]"});
}

}  // namespace
}  // namespace rcuda::test
