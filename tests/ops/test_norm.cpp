// batch_norm, group_norm and instance_norm on the CPU backend against plain double loops: the
// outputs, the saved statistics, the gradients (input, weight, bias; with batch statistics and
// with constant ones), the running-statistics updates against the hand formulas (and their
// version bumps), every memory format, float32 (oneDNN for batch_norm) and float64 (loops),
// empty batches, and the argument errors.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ops/layer_test_util.h"
#include "rcuda/ops/norm.h"

namespace rcuda::test {
namespace {

// x's values seen as [N, C, S] (row-major).
struct Dims3 {
  int64_t n, c, s;
};

Dims3 dims_of(const Shape& shape) {
  Dims3 d{shape[0], shape[1], 1};
  for (size_t i = 2; i < shape.size(); ++i) d.s *= shape[i];
  return d;
}

struct Reference {
  std::vector<double> out, mean, invstd, grad_input, grad_weight, grad_bias;
};

// Normalisation over sets of elements: `set_of(n, c)` names the set of (n, c) (batch norm: c;
// group norm: n * G + c / (C / G)), each normalised with its biased variance, then the
// per-channel affine map. The gradient is the standard one through the statistics
// (batch_stats) or with them held constant.
Reference normalise(const Dims3& d, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& b, const std::vector<double>& g, double eps,
                    int64_t sets, const std::function<int64_t(int64_t, int64_t)>& set_of,
                    bool batch_stats, const std::vector<double>& given_mean = {},
                    const std::vector<double>& given_invstd = {}) {
  auto idx = [&](int64_t n, int64_t c, int64_t s) { return (n * d.c + c) * d.s + s; };
  std::vector<double> sum(sets, 0), count(sets, 0), sq(sets, 0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t s = 0; s < d.s; ++s) {
        sum[set_of(n, c)] += x[idx(n, c, s)];
        count[set_of(n, c)] += 1;
      }
  Reference r;
  for (int64_t k = 0; k < sets; ++k) r.mean.push_back(sum[k] / count[k]);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t s = 0; s < d.s; ++s) {
        const double dev = x[idx(n, c, s)] - r.mean[set_of(n, c)];
        sq[set_of(n, c)] += dev * dev;
      }
  for (int64_t k = 0; k < sets; ++k) r.invstd.push_back(1 / std::sqrt(sq[k] / count[k] + eps));
  if (!given_mean.empty()) {
    r.mean = given_mean;
    r.invstd = given_invstd;
  }
  r.out.resize(x.size());
  r.grad_input.resize(x.size());
  r.grad_weight.assign(d.c, 0);
  r.grad_bias.assign(d.c, 0);
  std::vector<double> sum_g(sets, 0), sum_g_xhat(sets, 0);
  auto xhat = [&](int64_t n, int64_t c, int64_t s) {
    return (x[idx(n, c, s)] - r.mean[set_of(n, c)]) * r.invstd[set_of(n, c)];
  };
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t s = 0; s < d.s; ++s) {
        const double wc = w.empty() ? 1 : w[c], bc = b.empty() ? 0 : b[c];
        const int64_t i = idx(n, c, s);
        r.out[i] = xhat(n, c, s) * wc + bc;
        r.grad_weight[c] += g[i] * xhat(n, c, s);
        r.grad_bias[c] += g[i];
        sum_g[set_of(n, c)] += g[i] * wc;
        sum_g_xhat[set_of(n, c)] += g[i] * wc * xhat(n, c, s);
      }
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t s = 0; s < d.s; ++s) {
        const int64_t k = set_of(n, c), i = idx(n, c, s);
        const double gw = g[i] * (w.empty() ? 1 : w[c]);
        r.grad_input[i] = batch_stats ? r.invstd[k] * (gw - sum_g[k] / count[k] -
                                                       xhat(n, c, s) * sum_g_xhat[k] / count[k])
                                      : r.invstd[k] * gw;
      }
  return r;
}

std::vector<double> values_of(const Tensor& t) {
  return t.defined() ? to_doubles(t) : std::vector<double>{};
}

DType stats_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

// Outputs and gradients are invstd times differences of terms of the inputs' size, so their
// rounding error grows with invstd: up to 1/sqrt(eps) when a set of few elements (a channel of
// three) is nearly constant. The bounds scale with the largest invstd of the reference.
double conditioning(const Reference& ref) {
  double worst = 1;
  for (double r : ref.invstd) worst = std::max(worst, r);
  return worst;
}

double grad_tolerance(DType dtype, const Reference& ref) {
  return (dtype == DType::Float32 ? 2e-5 : 1e-11) * conditioning(ref);
}

double out_tolerance(DType dtype, const Reference& ref) {
  return (dtype == DType::Float32 ? 1e-5 : 1e-12) * conditioning(ref);
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{4, 3},          {3, 4, 5}, {2, 6, 5, 3}, {1, 4, 3, 3},
                                       {2, 2, 2, 3, 3}, {5, 1, 7}, {3, 8, 1, 1}};
  return s;
}

TEST(BatchNorm, TrainingMatchesDoubleLoopsAndUpdatesRunningStats) {
  for (const Shape& shape : shapes()) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      for (Layout layout : all_layouts()) {
        for (bool affine : {true, false}) {
          SCOPED_TRACE(shape_str(shape) + " " + dtype_name(dtype) + " " + layout_name(layout) +
                       (affine ? " affine" : ""));
          const Dims3 d = dims_of(shape);
          const Tensor x = in_layout(random_tensor(shape, dtype, -2, 3), layout);
          const Tensor w = affine ? random_tensor({d.c}, dtype) : Tensor();
          const Tensor b = affine ? random_tensor({d.c}, dtype) : Tensor();
          const Tensor rm = random_tensor({d.c}, dtype), rv = random_tensor({d.c}, dtype, 0.5, 2);
          const std::vector<double> rm0 = to_doubles(rm), rv0 = to_doubles(rv);
          const uint64_t version_mean = rm.storage()->version(),
                         version_var = rv.storage()->version();
          const double momentum = 0.3, eps = 1e-4;
          const ops::NormForward f = ops::batch_norm_forward(x, rm, rv, w, b, true, momentum, eps);
          const Tensor g = random_tensor(shape, dtype, -1, 1);
          const Reference ref = normalise(
              d, to_doubles(x), values_of(w), values_of(b), to_doubles(g), eps, d.c,
              [](int64_t, int64_t c) { return c; }, true);
          const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
          EXPECT_TRUE(all_close(to_doubles(f.out), ref.out, out_tolerance(dtype, ref))) << "out";
          EXPECT_TRUE(in_expected_format(f.out, layout));
          EXPECT_EQ(f.mean.dtype(), stats_dtype(dtype));
          EXPECT_TRUE(all_close(to_doubles(f.mean), ref.mean, tol)) << "mean";
          EXPECT_TRUE(all_close(to_doubles(f.invstd), ref.invstd, tol)) << "invstd";
          // running = (1 - m) running + m * batch statistic, the variance unbiased.
          const double count = static_cast<double>(d.n * d.s);
          std::vector<double> want_mean, want_var;
          for (int64_t c = 0; c < d.c; ++c) {
            const double var = 1 / (ref.invstd[c] * ref.invstd[c]) - eps;
            want_mean.push_back((1 - momentum) * rm0[c] + momentum * ref.mean[c]);
            want_var.push_back((1 - momentum) * rv0[c] + momentum * var * count / (count - 1));
          }
          EXPECT_TRUE(all_close(to_doubles(rm), want_mean, tol)) << "running_mean";
          EXPECT_TRUE(all_close(to_doubles(rv), want_var, tol)) << "running_var";
          EXPECT_GT(rm.storage()->version(), version_mean);
          EXPECT_GT(rv.storage()->version(), version_var);
          const ops::NormGrads gr =
              ops::batch_norm_backward(in_layout(g, layout), x, w, f.mean, f.invstd, true);
          EXPECT_TRUE(
              all_close(to_doubles(gr.grad_input), ref.grad_input, grad_tolerance(dtype, ref)))
              << "grad_input";
          EXPECT_TRUE(in_expected_format(gr.grad_input, layout));
          EXPECT_TRUE(
              all_close(to_doubles(gr.grad_weight), ref.grad_weight, grad_tolerance(dtype, ref)));
          EXPECT_TRUE(
              all_close(to_doubles(gr.grad_bias), ref.grad_bias, grad_tolerance(dtype, ref)));
        }
      }
    }
  }
}

TEST(BatchNorm, EvaluationUsesRunningStats) {
  for (const Shape& shape : shapes()) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      for (Layout layout : all_layouts()) {
        SCOPED_TRACE(shape_str(shape) + " " + dtype_name(dtype) + " " + layout_name(layout));
        const Dims3 d = dims_of(shape);
        const Tensor x = in_layout(random_tensor(shape, dtype, -2, 3), layout);
        const Tensor w = random_tensor({d.c}, dtype), b = random_tensor({d.c}, dtype);
        const Tensor rm = random_tensor({d.c}, dtype), rv = random_tensor({d.c}, dtype, 0.5, 2);
        const std::vector<double> rm0 = to_doubles(rm), rv0 = to_doubles(rv);
        const double eps = 1e-3;
        std::vector<double> invstd(rv0.size());
        for (size_t c = 0; c < rv0.size(); ++c) invstd[c] = 1 / std::sqrt(rv0[c] + eps);
        const Tensor g = random_tensor(shape, dtype, -1, 1);
        const Reference ref = normalise(
            d, to_doubles(x), to_doubles(w), to_doubles(b), to_doubles(g), eps, d.c,
            [](int64_t, int64_t c) { return c; }, false, rm0, invstd);
        const ops::NormForward f = ops::batch_norm_forward(x, rm, rv, w, b, false, 0.1, eps);
        const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
        EXPECT_TRUE(all_close(to_doubles(f.out), ref.out, tol));
        EXPECT_TRUE(in_expected_format(f.out, layout));
        EXPECT_TRUE(all_close(to_doubles(rm), rm0, 0)) << "running_mean changed";
        EXPECT_TRUE(all_close(to_doubles(rv), rv0, 0)) << "running_var changed";
        const ops::NormGrads gr = ops::batch_norm_backward(g, x, w, f.mean, f.invstd, false);
        EXPECT_TRUE(
            all_close(to_doubles(gr.grad_input), ref.grad_input, grad_tolerance(dtype, ref)));
        EXPECT_TRUE(
            all_close(to_doubles(gr.grad_weight), ref.grad_weight, grad_tolerance(dtype, ref)));
        EXPECT_TRUE(all_close(to_doubles(gr.grad_bias), ref.grad_bias, grad_tolerance(dtype, ref)));
      }
    }
  }
}

// Half inputs keep float32 statistics and take float32 weights and running statistics.
TEST(BatchNorm, HalfInputsWithFloatParameters) {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    const Tensor x = random_tensor({4, 3, 5}, dtype);
    const Tensor x32 = tensor_of(to_doubles(x), x.shape(), DType::Float32);
    const Tensor w = random_tensor({3}, DType::Float32), b = random_tensor({3}, DType::Float32);
    const Tensor rm = ops::zeros({3}, {DType::Float32}), rv = ops::ones({3}, {DType::Float32});
    const Tensor rm32 = ops::zeros({3}, {DType::Float32}), rv32 = ops::ones({3}, {DType::Float32});
    const ops::NormForward h = ops::batch_norm_forward(x, rm, rv, w, b, true);
    const ops::NormForward f = ops::batch_norm_forward(x32, rm32, rv32, w, b, true);
    EXPECT_EQ(h.mean.dtype(), DType::Float32);
    EXPECT_TRUE(
        all_close(to_doubles(h.out), rounded_to(to_doubles(f.out), dtype), tolerance(dtype)));
    EXPECT_TRUE(all_close(to_doubles(rm), to_doubles(rm32), 1e-6));
    EXPECT_TRUE(all_close(to_doubles(rv), to_doubles(rv32), 1e-6));
    const Tensor half_rm = ops::zeros({3}, {dtype}), half_rv = ops::ones({3}, {dtype});
    ops::batch_norm_forward(x, half_rm, half_rv, Tensor(), Tensor(), true);  // same-dtype buffers
    EXPECT_TRUE(
        all_close(to_doubles(half_rm), rounded_to(to_doubles(rm32), dtype), tolerance(dtype)));
  }
}

TEST(BatchNorm, EmptyBatch) {
  const Tensor x = ops::zeros({0, 3, 4}, {DType::Float32});
  const Tensor rm = ops::ones({3}, {DType::Float32}), rv = ops::ones({3}, {DType::Float32});
  const ops::NormForward f = ops::batch_norm_forward(x, rm, rv, Tensor(), Tensor(), true);
  EXPECT_EQ(f.out.shape(), x.shape());
  EXPECT_TRUE(all_close(to_doubles(rm), {1, 1, 1}, 0));
  const Tensor w = ops::ones({3}, {DType::Float32});
  const ops::NormGrads g = ops::batch_norm_backward(x, x, w, f.mean, f.invstd, true);
  EXPECT_EQ(g.grad_input.shape(), x.shape());
  EXPECT_TRUE(all_close(to_doubles(g.grad_weight), {0, 0, 0}, 0));
  EXPECT_TRUE(all_close(to_doubles(g.grad_bias), {0, 0, 0}, 0));
}

TEST(GroupNorm, MatchesDoubleLoops) {
  struct GroupCase {
    Shape shape;
    int64_t groups;
  };
  for (const GroupCase& gc : std::vector<GroupCase>{{{2, 6, 5}, 3},
                                                    {{3, 4, 3, 3}, 2},
                                                    {{1, 6, 2, 3}, 6},
                                                    {{2, 5, 4, 4}, 1},
                                                    {{4, 6}, 2},
                                                    {{2, 8, 3, 1, 2}, 4},
                                                    {{0, 4, 3, 3}, 2}}) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      for (Layout layout : all_layouts()) {
        for (bool affine : {true, false}) {
          SCOPED_TRACE(shape_str(gc.shape) + " groups " + std::to_string(gc.groups) + " " +
                       dtype_name(dtype) + " " + layout_name(layout) + (affine ? " affine" : ""));
          const Dims3 d = dims_of(gc.shape);
          const Tensor x = in_layout(random_tensor(gc.shape, dtype, -1, 4), layout);
          const Tensor w = affine ? random_tensor({d.c}, dtype) : Tensor();
          const Tensor b = affine ? random_tensor({d.c}, dtype) : Tensor();
          const Tensor g = random_tensor(gc.shape, dtype, -1, 1);
          const int64_t per = d.c / gc.groups, groups = gc.groups;
          const Reference ref = normalise(
              d, to_doubles(x), values_of(w), values_of(b), to_doubles(g), 1e-5,
              std::max<int64_t>(1, d.n * groups),
              [&](int64_t n, int64_t c) { return n * groups + c / per; }, true);
          const ops::NormForward f = ops::group_norm_forward(x, gc.groups, w, b);
          const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
          EXPECT_EQ(f.mean.shape(), (Shape{d.n, gc.groups}));
          EXPECT_TRUE(all_close(to_doubles(f.out), ref.out, out_tolerance(dtype, ref)));
          EXPECT_TRUE(in_expected_format(f.out, layout));
          if (d.n > 0) {
            EXPECT_TRUE(all_close(to_doubles(f.mean), ref.mean, tol));
            EXPECT_TRUE(all_close(to_doubles(f.invstd), ref.invstd, tol));
          }
          const ops::NormGrads gr =
              ops::group_norm_backward(in_layout(g, layout), x, gc.groups, w, f.mean, f.invstd);
          EXPECT_TRUE(
              all_close(to_doubles(gr.grad_input), ref.grad_input, grad_tolerance(dtype, ref)));
          EXPECT_TRUE(in_expected_format(gr.grad_input, layout));
          EXPECT_TRUE(
              all_close(to_doubles(gr.grad_weight), ref.grad_weight, grad_tolerance(dtype, ref)));
          EXPECT_TRUE(
              all_close(to_doubles(gr.grad_bias), ref.grad_bias, grad_tolerance(dtype, ref)));
        }
      }
    }
  }
}

TEST(InstanceNorm, MatchesDoubleLoopsAndUpdatesRunningStats) {
  for (const Shape& shape :
       {Shape{2, 3, 5}, Shape{3, 4, 3, 2}, Shape{1, 2, 4, 4}, Shape{2, 2, 2, 2, 3}}) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      for (Layout layout : all_layouts()) {
        SCOPED_TRACE(shape_str(shape) + " " + dtype_name(dtype) + " " + layout_name(layout));
        const Dims3 d = dims_of(shape);
        const Tensor x = in_layout(random_tensor(shape, dtype, -2, 2), layout);
        const Tensor w = random_tensor({d.c}, dtype), b = random_tensor({d.c}, dtype);
        const Tensor rm = random_tensor({d.c}, dtype), rv = random_tensor({d.c}, dtype, 0.5, 2);
        const std::vector<double> rm0 = to_doubles(rm), rv0 = to_doubles(rv);
        const Tensor g = random_tensor(shape, dtype, -1, 1);
        const double momentum = 0.2, eps = 1e-5;
        const Reference ref = normalise(
            d, to_doubles(x), to_doubles(w), to_doubles(b), to_doubles(g), eps, d.n * d.c,
            [&](int64_t n, int64_t c) { return n * d.c + c; }, true);
        const ops::NormForward f = ops::instance_norm_forward(x, rm, rv, w, b, true, momentum, eps);
        const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
        EXPECT_TRUE(all_close(to_doubles(f.out), ref.out, out_tolerance(dtype, ref)));
        EXPECT_TRUE(in_expected_format(f.out, layout));
        // The instances' means and unbiased variances, averaged over the batch, blended in.
        const std::vector<double> xv = to_doubles(x);
        for (int64_t c = 0; c < d.c; ++c) {
          double mean_sum = 0, var_sum = 0;
          for (int64_t n = 0; n < d.n; ++n) {
            double m = 0, v = 0;
            for (int64_t s = 0; s < d.s; ++s) m += xv[(n * d.c + c) * d.s + s];
            m /= d.s;
            for (int64_t s = 0; s < d.s; ++s) {
              const double dev = xv[(n * d.c + c) * d.s + s] - m;
              v += dev * dev;
            }
            mean_sum += m;
            var_sum += v / (d.s - 1);
          }
          EXPECT_NEAR(to_doubles(rm)[c], (1 - momentum) * rm0[c] + momentum * mean_sum / d.n, tol);
          EXPECT_NEAR(to_doubles(rv)[c], (1 - momentum) * rv0[c] + momentum * var_sum / d.n,
                      tol * 4);
        }
        const ops::NormGrads gr = ops::instance_norm_backward(g, x, w, f.mean, f.invstd, true);
        EXPECT_TRUE(
            all_close(to_doubles(gr.grad_input), ref.grad_input, grad_tolerance(dtype, ref)));
        EXPECT_TRUE(
            all_close(to_doubles(gr.grad_weight), ref.grad_weight, grad_tolerance(dtype, ref)));
        EXPECT_TRUE(all_close(to_doubles(gr.grad_bias), ref.grad_bias, grad_tolerance(dtype, ref)));
        // Without input statistics: the running ones, as batch_norm in evaluation.
        const ops::NormForward e =
            ops::instance_norm_forward(x, rm, rv, w, b, false, momentum, eps);
        const ops::NormForward be = ops::batch_norm_forward(x, rm, rv, w, b, false, momentum, eps);
        EXPECT_TRUE(all_close(to_doubles(e.out), to_doubles(be.out), 0));
      }
    }
  }
}

TEST(Norm, ArgumentErrors) {
  const Tensor x = random_tensor({2, 3, 4}, DType::Float32);
  const Tensor c3 = ops::ones({3}, {DType::Float32}), c4 = ops::ones({4}, {DType::Float32});
  expect_error_mentioning([&] { ops::batch_norm(x, c4, c3, Tensor(), Tensor(), true); },
                          "ShapeError",
                          {"batch_norm", "running_mean should contain 3 elements", "[4]"});
  expect_error_mentioning([&] { ops::batch_norm(x, c3, c3, c4, Tensor(), true); }, "ShapeError",
                          {"batch_norm", "weight should contain 3"});
  expect_error_mentioning(
      [&] { ops::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false); }, "ValueError",
      {"batch_norm", "required when training is false"});
  expect_error_mentioning(
      [&] {
        ops::batch_norm(random_tensor({1, 3}, DType::Float32), c3, c3, Tensor(), Tensor(), true);
      },
      "ValueError", {"batch_norm", "more than 1 value per channel", "[1, 3]"});
  expect_error_mentioning(
      [&] { ops::batch_norm(x, ops::ones({3}, {DType::Float64}), c3, Tensor(), Tensor(), true); },
      "DTypeError", {"batch_norm", "running_mean is float64", "float32"});
  expect_error_mentioning([&] { ops::batch_norm(random_tensor({3}, DType::Float32), c3, c3); },
                          "ShapeError", {"batch_norm", "at least 2 dims"});
  expect_error_mentioning([&] { ops::batch_norm(x, c3, c3, Tensor(), Tensor(), true, 0.1, -1); },
                          "ValueError", {"batch_norm", "eps"});
  expect_error_mentioning(
      [&] { ops::group_norm(x, 2); }, "ShapeError",
      {"group_norm", "channels (3)", "divisible by num_groups (2)", "[2, 3, 4]"});
  expect_error_mentioning([&] { ops::group_norm(x, 0); }, "ValueError",
                          {"group_norm", "num_groups must be positive"});
  expect_error_mentioning([&] { ops::group_norm(x, 3, c4); }, "ShapeError",
                          {"group_norm", "weight should contain 3"});
  expect_error_mentioning(
      [&] {
        ops::instance_norm(random_tensor({2, 3, 1}, DType::Float32));
      },
      "ValueError", {"instance_norm", "more than 1 spatial element", "[2, 3, 1]"});
  expect_error_mentioning(
      [&] {
        ops::group_norm(random_tensor({2, 4}, DType::Int32), 2);
      },
      "DTypeError", {"group_norm", "int32"});
  const ops::NormForward f = ops::batch_norm_forward(x, c3, c3, Tensor(), Tensor(), true);
  expect_error_mentioning(
      [&] {
        ops::batch_norm_backward(random_tensor({2, 3, 5}, DType::Float32), x, Tensor(), f.mean,
                                 f.invstd, true);
      },
      "ShapeError", {"batch_norm_backward", "grad_output", "[2, 3, 4]"});
}

}  // namespace
}  // namespace rcuda::test
