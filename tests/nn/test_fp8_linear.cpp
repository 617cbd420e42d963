// Tests for fp8_linear and Fp8LinearState (rcuda/nn/fp8_linear.h) on the CPU: over several
// steps, the scales follow the delayed-scaling rule computed here from the recorded amaxes, and
// the output and the three gradients equal double-precision products of the float8 values the
// casts produce (float8_cast itself is checked bit by bit in tests/ops/test_float8_cast.cpp).
#include <cmath>
#include <vector>

#include "autograd/gradcheck.h"
#include "rcuda/nn/fp8_linear.h"
#include "rcuda/ops/float8.h"

namespace rcuda::test {
namespace {

const DType kE4M3 = DType::Float8E4M3FN;
const DType kE5M2 = DType::Float8E5M2;

// The values a cast of t with `scale` stores, divided back by the scale: what the products see.
std::vector<double> dequantized(const Tensor& t, double scale, DType format) {
  const Tensor amax = tensor_of({0}, {1}, DType::Float32);
  const Tensor s = tensor_of({scale}, {1}, DType::Float32);
  std::vector<double> v = to_doubles(ops::float8_cast(autograd::detach(t), s, amax, format).data);
  for (double& x : v) x /= static_cast<double>(static_cast<float>(scale));
  return v;
}

// c[i,j] = sum_p a[i,p] b[j,p] (a [m,k], b [n,k], row-major).
std::vector<double> products_nt(const std::vector<double>& a, const std::vector<double>& b,
                                int64_t m, int64_t n, int64_t k) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[j * k + p];
      c[i * n + j] = s;
    }
  return c;
}

std::vector<double> transpose(const std::vector<double>& a, int64_t rows, int64_t cols) {
  std::vector<double> t(a.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  return t;
}

double abs_max(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::fmax(m, std::fabs(x));
  return m;
}

// float32 accumulation of K float8 products plus a rounding to float32, relative to the value;
// bounded here by the magnitudes the tests use.
constexpr double kProductTolerance = 2e-5;

TEST(Fp8Linear, ScalesFollowTheHistoryAndProductsMatchDoubleLoops) {
  const int64_t m = 32, k = 48, n = 64, history_len = 3;
  nn::Fp8LinearState state(Device(), {history_len, 0});
  const Tensor w = random_tensor({n, k}, DType::Float32, -0.5, 0.5).requires_grad_();
  const Tensor b = random_tensor({n}, DType::Float32).requires_grad_();
  std::vector<double> amax_seen[3];  // per row, per step
  for (int step = 0; step < 5; ++step) {
    // Inputs and gradients whose ranges change from step to step, so the scales move.
    const double spread = 1.0 + step;
    const Tensor x = random_tensor({m, k}, DType::Float32, -spread, spread).requires_grad_();
    const Tensor g = random_tensor({m, n}, DType::Float32, -1e-3 * spread, 1e-3 * spread);
    // The scales this step must use: from the last history_len steps' amaxes.
    double want_scale[3];
    const double maxima[3] = {448, 448, 57344};
    const std::vector<double> before = to_doubles(state.scale());
    for (int r = 0; r < 3; ++r) {
      double amax = 0;
      const int first = std::max(0, step - static_cast<int>(history_len));
      for (int s = first; s < step; ++s) amax = std::fmax(amax, amax_seen[r][s]);
      want_scale[r] =
          amax > 0 ? static_cast<double>(static_cast<float>(maxima[r]) / static_cast<float>(amax))
                   : before[r];
    }
    const Tensor y = nn::fp8_linear(x, w, b, state);
    const std::vector<double> scale = to_doubles(state.scale());
    for (int r = 0; r < 3; ++r)
      ASSERT_NEAR(scale[r], want_scale[r], 1e-6 * want_scale[r]) << "step " << step << " row " << r;
    ASSERT_EQ(y.dtype(), DType::Float32);
    ASSERT_EQ(y.shape(), (Shape{m, n}));

    const std::vector<double> xq = dequantized(x, scale[0], kE4M3);
    const std::vector<double> wq = dequantized(w, scale[1], kE4M3);
    std::vector<double> want_y = products_nt(xq, wq, m, n, k);
    const std::vector<double> bias = to_doubles(b);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) want_y[i * n + j] += bias[j];
    EXPECT_TRUE(all_close(to_doubles(y), want_y, kProductTolerance)) << "step " << step;

    autograd::backward(y, g);
    const std::vector<double> gq = dequantized(g, scale[2], kE5M2);
    // gx = gq @ wq: [m,n] x [n,k]; gw = gq^T @ xq: [n,m] x [m,k]; gb = column sums of g.
    const std::vector<double> want_gx = products_nt(gq, transpose(wq, n, k), m, k, n);
    const std::vector<double> want_gw =
        products_nt(transpose(gq, m, n), transpose(xq, m, k), n, k, m);
    const std::vector<double> gv = to_doubles(g);
    std::vector<double> want_gb(static_cast<size_t>(n), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) want_gb[j] += gv[i * n + j];
    EXPECT_TRUE(all_close(to_doubles(x.grad()), want_gx, kProductTolerance)) << "step " << step;
    EXPECT_TRUE(all_close(to_doubles(w.grad()), want_gw, kProductTolerance)) << "step " << step;
    EXPECT_TRUE(all_close(to_doubles(b.grad()), want_gb, kProductTolerance)) << "step " << step;

    // The step's amaxes sit in column 0 of each row.
    const std::vector<double> h = to_doubles(state.amax_history());
    amax_seen[0].push_back(abs_max(to_doubles(x)));
    amax_seen[1].push_back(abs_max(to_doubles(w)));
    amax_seen[2].push_back(abs_max(gv));
    for (int r = 0; r < 3; ++r)
      EXPECT_EQ(h[static_cast<size_t>(r * history_len)], amax_seen[r].back())
          << "step " << step << " row " << r;
    w.set_grad(Tensor());
    b.set_grad(Tensor());
  }
}

TEST(Fp8Linear, BatchedInputsHalfDtypesAndRowsNotAMultipleOf16) {
  nn::Fp8LinearState state(Device(), {4, 0});
  // [2, 5, 32] input: 10 rows, so the weight's gradient is the input dtype's product of g and x.
  for (DType dtype : {DType::BFloat16, DType::Float16}) {
    const Tensor x = random_tensor({2, 5, 32}, dtype).requires_grad_();
    const Tensor w = random_tensor({16, 32}, DType::Float32, -0.5, 0.5).requires_grad_();
    const Tensor y = nn::fp8_linear(x, w, Tensor(), state);
    ASSERT_EQ(y.shape(), (Shape{2, 5, 16}));
    ASSERT_EQ(y.dtype(), dtype);
    const Tensor g = random_tensor({2, 5, 16}, dtype);
    autograd::backward(y, g);
    ASSERT_EQ(x.grad().shape(), x.shape());
    ASSERT_EQ(w.grad().dtype(), DType::Float32);
    // Weight gradient: sum over the 10 rows of g^T x in double, against the input dtype's product.
    const std::vector<double> gv = to_doubles(g), xv = to_doubles(x);
    const std::vector<double> want =
        products_nt(transpose(gv, 10, 16), transpose(xv, 10, 32), 16, 32, 10);
    EXPECT_TRUE(all_close(to_doubles(w.grad()), want, 4 * tolerance(dtype))) << dtype_name(dtype);
    // Output: each float8 factor is within 2^-4 of its value (3 mantissa bits; the scales keep
    // these inputs out of the subnormals), so each element is within 2 * 2^-4 of sum |x w|, plus
    // the dtype's rounding.
    const std::vector<double> wv = to_doubles(w);
    const std::vector<double> exact = products_nt(xv, wv, 10, 16, 32);
    std::vector<double> xa(xv.size()), wa(wv.size());
    for (size_t i = 0; i < xv.size(); ++i) xa[i] = std::fabs(xv[i]);
    for (size_t i = 0; i < wv.size(); ++i) wa[i] = std::fabs(wv[i]);
    const std::vector<double> terms = products_nt(xa, wa, 10, 16, 32);
    const std::vector<double> got = to_doubles(y);
    for (size_t i = 0; i < exact.size(); ++i)
      EXPECT_NEAR(got[i], exact[i], 0.13 * terms[i] + tolerance(dtype) * std::fabs(exact[i]))
          << dtype_name(dtype) << " element " << i;
  }
}

TEST(Fp8Linear, InferenceRecordsNothingAndInputsWithoutGradGetNone) {
  nn::Fp8LinearState state{Device()};
  const Tensor x = random_tensor({16, 32}, DType::Float32);
  const Tensor w = random_tensor({32, 32}, DType::Float32).requires_grad_();
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(nn::fp8_linear(x, w, Tensor(), state).requires_grad());
  }
  const Tensor y = nn::fp8_linear(x, w, Tensor(), state);
  EXPECT_STREQ(y.grad_fn()->name(), "Fp8LinearBackward");
  autograd::backward(sum(y));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_EQ(w.grad().shape(), w.shape());
}

TEST(Fp8Linear, StateLoadsAndChecksItsArguments) {
  nn::Fp8LinearState state(Device(), {8, 1});
  EXPECT_EQ(state.amax_history().shape(), (Shape{3, 8}));
  EXPECT_EQ(to_doubles(state.scale()), (std::vector<double>{1, 1, 1}));
  nn::Fp8LinearState other{Device()};
  other.load(tensor_of({1, 2, 3, 4, 5, 6}, {3, 2}, DType::Float64),
             tensor_of({2, 4, 8}, {3}, DType::Float32));
  EXPECT_EQ(other.amax_history().shape(), (Shape{3, 2}));
  EXPECT_EQ(to_doubles(other.scale_inv()), (std::vector<double>{0.5, 0.25, 0.125}));
  // margin 1: half of 448 / amax.
  const Tensor x = tensor_of(std::vector<double>(16 * 16, 2.0), {16, 16}, DType::Float32);
  const Tensor w = tensor_of(std::vector<double>(16 * 16, 4.0), {16, 16}, DType::Float32);
  nn::fp8_linear(x, w, Tensor(), state);
  nn::fp8_linear(x, w, Tensor(), state);
  EXPECT_EQ(to_doubles(state.scale()), (std::vector<double>{112, 56, 1}));
  EXPECT_NE(error_message([] {
              nn::Fp8LinearState(Device(), {0, 0});
            }).find("amax_history_len must be at least 1"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              other.load(Tensor::empty({2, 2}, DType::Float32), Tensor::empty({3}, DType::Float32));
            }).find("expected amax_history [3, H] and scale [3]"),
            std::string::npos);
}

TEST(Fp8Linear, ErrorsNameTheArgument) {
  nn::Fp8LinearState state{Device()};
  const Tensor x = random_tensor({16, 32}, DType::Float32);
  const Tensor w = random_tensor({32, 32}, DType::Float32);
  EXPECT_NE(error_message([&] {
              nn::fp8_linear(x, random_tensor({24, 32}, DType::Float32), Tensor(), state);
            }).find("in_features and out_features must be multiples of 16"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              nn::fp8_linear(to(x, DType::Float64), w, Tensor(), state);
            }).find("fp8_linear: input must be float32, float16 or bfloat16, got float64"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              nn::fp8_linear(random_tensor({16, 48}, DType::Float32), w, Tensor(), state);
            }).find("has 48 features in its last dim"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              nn::fp8_linear(x, w, random_tensor({16}, DType::Float32), state);
            }).find("bias must have shape [out_features] = [32]"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              nn::fp8_linear(x, random_tensor({32}, DType::Float32), Tensor(), state);
            }).find("weight must be 2-D"),
            std::string::npos);
}

}  // namespace
}  // namespace rcuda::test
