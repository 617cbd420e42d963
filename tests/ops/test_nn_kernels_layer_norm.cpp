// Tests for ops::layer_norm_forward / layer_norm_backward on the CPU backend: the forward and
// its statistics against plain double loops, the backward against float64 central differences
// of sum(grad_out * layer_norm(x, w, b)) and against the double formulas, for every floating
// dtype (half inputs keep float32 statistics), several normalized ranks, non-contiguous inputs,
// empty tensors, the OpenMP path and the argument checks.
#include <cmath>
#include <string>
#include <vector>

#include "rcuda/ops/nn.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

double stored(double v, DType dtype) {
  char buf[8];
  write_element(buf, dtype, v);
  return read_element(buf, dtype);
}

std::vector<double> rounded(std::vector<double> v, DType dtype) {
  for (double& x : v) x = stored(x, dtype);
  return v;
}

struct Reference {
  std::vector<double> out, mean, rstd, grad_input, grad_weight, grad_bias;
};

// Double loops over rows of `cols` values; w, b empty for "undefined"; g the upstream grad.
Reference reference(const std::vector<double>& x, int64_t cols, const std::vector<double>& w,
                    const std::vector<double>& b, double eps, const std::vector<double>& g) {
  const int64_t rows = cols == 0 ? 0 : static_cast<int64_t>(x.size()) / cols;
  Reference r;
  r.out.resize(x.size());
  r.grad_input.resize(x.size());
  r.grad_weight.assign(cols, 0);
  r.grad_bias.assign(cols, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = &x[i * cols];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += row[j];
    mean /= cols;
    for (int64_t j = 0; j < cols; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= cols;
    const double rstd = 1 / std::sqrt(var + eps);
    r.mean.push_back(mean);
    r.rstd.push_back(rstd);
    double sum = 0, sum_xhat = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double xhat = (row[j] - mean) * rstd;
      const double wj = w.empty() ? 1 : w[j], bj = b.empty() ? 0 : b[j];
      r.out[i * cols + j] = xhat * wj + bj;
      const double gw = g[i * cols + j] * wj;
      sum += gw;
      sum_xhat += gw * xhat;
      r.grad_weight[j] += g[i * cols + j] * xhat;
      r.grad_bias[j] += g[i * cols + j];
    }
    for (int64_t j = 0; j < cols; ++j) {
      const double xhat = (row[j] - mean) * rstd;
      const double gw = g[i * cols + j] * (w.empty() ? 1 : w[j]);
      r.grad_input[i * cols + j] = rstd * (gw - sum / cols - xhat * sum_xhat / cols);
    }
  }
  return r;
}

std::vector<double> values_or_empty(const Tensor& t) {
  return t.defined() ? to_doubles(t) : std::vector<double>{};
}

DType stats_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

// Checks forward and backward of one configuration against the double reference.
void check_against_reference(const Tensor& x, const Shape& normalized, const Tensor& w,
                             const Tensor& b, double eps) {
  const DType dtype = x.dtype();
  const Tensor g = random_tensor(x.shape(), dtype, -1, 1);
  const int64_t cols = numel(normalized);
  const Reference ref =
      reference(to_doubles(x), cols, values_or_empty(w), values_or_empty(b), eps, to_doubles(g));
  const ops::LayerNormForward f = ops::layer_norm_forward(x, normalized, w, b, eps);
  ASSERT_EQ(f.out.shape(), x.shape());
  EXPECT_EQ(f.out.dtype(), dtype);
  EXPECT_EQ(f.mean.dtype(), stats_dtype(dtype));
  Shape stats_shape = x.shape();
  for (size_t k = 0; k < normalized.size(); ++k) stats_shape[stats_shape.size() - 1 - k] = 1;
  EXPECT_EQ(f.mean.shape(), stats_shape);
  EXPECT_EQ(f.rstd.shape(), stats_shape);
  // float32 statistics; the output rounds once to dtype from float32 arithmetic.
  const double tol = dtype == DType::Float64 ? 1e-12 : std::max(tolerance(dtype), 2e-6);
  EXPECT_TRUE(all_close(to_doubles(f.out), rounded(ref.out, dtype), tol)) << "out";
  EXPECT_TRUE(all_close(to_doubles(f.mean), ref.mean, dtype == DType::Float64 ? 1e-12 : 2e-6));
  EXPECT_TRUE(all_close(to_doubles(f.rstd), ref.rstd, dtype == DType::Float64 ? 1e-12 : 2e-6));

  const ops::LayerNormGrads grads =
      ops::layer_norm_backward(g, x, normalized, f.mean, f.rstd, w, b);
  ASSERT_TRUE(grads.grad_input.defined());
  EXPECT_EQ(grads.grad_input.shape(), x.shape());
  EXPECT_EQ(grads.grad_weight.defined(), w.defined());
  EXPECT_EQ(grads.grad_bias.defined(), b.defined());
  // The backward reads the stored statistics (float32 for half input): a few float32 ulps of
  // the reference's, then one rounding to dtype.
  const double gtol = dtype == DType::Float64 ? 1e-10 : std::max(tolerance(dtype), 1e-5);
  EXPECT_TRUE(all_close(to_doubles(grads.grad_input), rounded(ref.grad_input, dtype), gtol))
      << "grad_input";
  if (w.defined()) {
    EXPECT_EQ(grads.grad_weight.shape(), normalized);
    EXPECT_TRUE(all_close(to_doubles(grads.grad_weight), rounded(ref.grad_weight, dtype), gtol))
        << "grad_weight";
  }
  if (b.defined()) {
    EXPECT_TRUE(all_close(to_doubles(grads.grad_bias), rounded(ref.grad_bias, dtype), gtol))
        << "grad_bias";
  }
}

TEST(NnLayerNorm, MatchesDoubleLoopsForEveryDtype) {
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = random_tensor({6, 37}, dtype, -2, 3);
    check_against_reference(x, {37}, random_tensor({37}, dtype), random_tensor({37}, dtype), 1e-5);
    check_against_reference(x, {37}, Tensor(), Tensor(), 1e-3);
    check_against_reference(x, {37}, random_tensor({37}, dtype), Tensor(), 0.1);
    check_against_reference(x, {37}, Tensor(), random_tensor({37}, dtype), 1e-5);
    // Two normalized dims, a 1-D input (one row), a row of one element (var 0: rstd 1/sqrt(eps)).
    const Tensor x3 = random_tensor({2, 3, 4, 5}, dtype);
    check_against_reference(x3, {4, 5}, random_tensor({4, 5}, dtype), random_tensor({4, 5}, dtype),
                            1e-5);
    check_against_reference(random_tensor({9}, dtype), {9}, Tensor(), Tensor(), 1e-5);
    check_against_reference(random_tensor({4, 1}, dtype), {1}, random_tensor({1}, dtype),
                            random_tensor({1}, dtype), 1e-2);
  }
}

TEST(NnLayerNorm, NonContiguousAndLarge) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor xt = transposed_copy(random_tensor({8, 33}, dtype));
    ASSERT_FALSE(xt.is_contiguous());
    const Tensor w = random_tensor({66}, dtype).slice(0, 0, 66, 2);
    ASSERT_FALSE(w.is_contiguous());
    check_against_reference(xt, {33}, w, random_tensor({33}, dtype), 1e-5);
  }
  // Past the OpenMP grain, rows and columns both larger than one strip.
  check_against_reference(random_tensor({300, 257}, DType::Float32, -1, 4), {257},
                          random_tensor({257}, DType::Float32),
                          random_tensor({257}, DType::Float32), 1e-5);
}

TEST(NnLayerNorm, BackwardMatchesCentralDifferences) {
  const Tensor x = random_tensor({3, 4, 5}, DType::Float64);
  const Tensor w = random_tensor({4, 5}, DType::Float64);
  const Tensor b = random_tensor({4, 5}, DType::Float64);
  const Tensor g = random_tensor({3, 4, 5}, DType::Float64);
  const Shape normalized = {4, 5};
  const double eps = 1e-3;
  const std::vector<double> gv = to_doubles(g);
  // L(x, w, b) = sum(g * layer_norm(x, w, b)).
  auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv,
                  const std::vector<double>& bv) {
    const Tensor out = ops::layer_norm(tensor_of(xv, x.shape(), DType::Float64), normalized,
                                       tensor_of(wv, w.shape(), DType::Float64),
                                       tensor_of(bv, b.shape(), DType::Float64), eps);
    const std::vector<double> y = to_doubles(out);
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += gv[i] * y[i];
    return l;
  };
  const std::vector<double> x0 = to_doubles(x), w0 = to_doubles(w), b0 = to_doubles(b);
  auto central = [&](int which) {
    std::vector<double> v = which == 0 ? x0 : which == 1 ? w0 : b0, d(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const double h = 1e-6, keep = v[i];
      std::vector<double> xs = x0, ws = w0, bs = b0;
      std::vector<double>& target = which == 0 ? xs : which == 1 ? ws : bs;
      target[i] = keep + h;
      const double up = loss(xs, ws, bs);
      target[i] = keep - h;
      d[i] = (up - loss(xs, ws, bs)) / (2 * h);
    }
    return d;
  };
  const ops::LayerNormForward f = ops::layer_norm_forward(x, normalized, w, b, eps);
  const ops::LayerNormGrads grads =
      ops::layer_norm_backward(g, x, normalized, f.mean, f.rstd, w, b);
  EXPECT_TRUE(all_close(to_doubles(grads.grad_input), central(0), 1e-7));
  EXPECT_TRUE(all_close(to_doubles(grads.grad_weight), central(1), 1e-7));
  EXPECT_TRUE(all_close(to_doubles(grads.grad_bias), central(2), 1e-7));
}

TEST(NnLayerNorm, OutputMaskAndEmpty) {
  const Tensor x = random_tensor({5, 6}, DType::Float32);
  const Tensor w = random_tensor({6}, DType::Float32), b = random_tensor({6}, DType::Float32);
  const Tensor g = random_tensor({5, 6}, DType::Float32);
  const ops::LayerNormForward f = ops::layer_norm_forward(x, {6}, w, b);
  const ops::LayerNormGrads all = ops::layer_norm_backward(g, x, {6}, f.mean, f.rstd, w, b);
  const ops::LayerNormGrads only_weight =
      ops::layer_norm_backward(g, x, {6}, f.mean, f.rstd, w, b, {false, true, false});
  EXPECT_FALSE(only_weight.grad_input.defined());
  EXPECT_FALSE(only_weight.grad_bias.defined());
  EXPECT_EQ(to_doubles(only_weight.grad_weight), to_doubles(all.grad_weight));

  // No rows: empty output, zero weight and bias gradients (sums of nothing).
  const Tensor e = random_tensor({0, 6}, DType::Float32);
  const ops::LayerNormForward fe = ops::layer_norm_forward(e, {6}, w, b);
  EXPECT_EQ(fe.out.shape(), (Shape{0, 6}));
  EXPECT_EQ(fe.mean.shape(), (Shape{0, 1}));
  const ops::LayerNormGrads ge = ops::layer_norm_backward(e, e, {6}, fe.mean, fe.rstd, w, b);
  EXPECT_EQ(ge.grad_input.shape(), (Shape{0, 6}));
  EXPECT_EQ(to_doubles(ge.grad_weight), std::vector<double>(6, 0.0));
  EXPECT_EQ(to_doubles(ge.grad_bias), std::vector<double>(6, 0.0));
  // Rows of nothing: NaN statistics, as the mean of no values.
  const ops::LayerNormForward fz =
      ops::layer_norm_forward(random_tensor({3, 0}, DType::Float32), {0});
  EXPECT_EQ(fz.out.shape(), (Shape{3, 0}));
  EXPECT_TRUE(std::isnan(to_doubles(fz.mean)[0]));
}

TEST(NnLayerNorm, ArgumentChecks) {
  const Tensor x = random_tensor({4, 6}, DType::Float32);
  const Tensor w = random_tensor({6}, DType::Float32);
  EXPECT_THROW(ops::layer_norm(x, {5}), ShapeError);
  EXPECT_THROW(ops::layer_norm(x, {}), ValueError);
  EXPECT_THROW(ops::layer_norm(x, {3, 4, 6}), ShapeError);
  EXPECT_THROW(ops::layer_norm(x, {6}, random_tensor({5}, DType::Float32)), ShapeError);
  EXPECT_THROW(ops::layer_norm(x, {6}, random_tensor({6}, DType::Float64)), DTypeError);
  EXPECT_THROW(ops::layer_norm(x, {6}, w, Tensor(), -1), ValueError);
  EXPECT_THROW(ops::layer_norm(random_tensor({4, 6}, DType::Int64), {6}), DTypeError);
  const ops::LayerNormForward f = ops::layer_norm_forward(x, {6}, w);
  EXPECT_THROW(ops::layer_norm_backward(random_tensor({4, 5}, DType::Float32), x, {6}, f.mean,
                                        f.rstd, w, Tensor()),
               ShapeError);
  EXPECT_THROW(
      ops::layer_norm_backward(x, x, {6}, ops::to(f.mean, DType::Float64), f.rstd, w, Tensor()),
      DTypeError);
  const std::string message = error_message([&] { ops::layer_norm(x, {5}); });
  EXPECT_NE(message.find("layer_norm"), std::string::npos) << message;
  EXPECT_NE(message.find("[5]"), std::string::npos) << message;
  EXPECT_NE(message.find("[4, 6]"), std::string::npos) << message;
}

}  // namespace
}  // namespace rcuda::test
