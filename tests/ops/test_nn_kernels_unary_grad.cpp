// Tests for ops::unary_grad (the backward of every floating UnaryOp) on the CPU backend:
//  - float64 against central finite differences of the forward primitive itself;
//  - every floating dtype against hand-written double derivatives evaluated on the stored
//    inputs (and, where the formula reads it, the stored forward output), rounded once to the
//    dtype, so half types differ by one rounding at most (tolerance(dtype));
//  - the tensor unary_grad_saves does not name is never read (filled with NaN);
//  - non-contiguous, expanded, 0-dim, empty and large inputs; torch's values at the kinks;
//    the argument checks.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "rcuda/ops/nn.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

double stored(double v, DType dtype) {
  char buf[8];
  write_element(buf, dtype, v);
  return read_element(buf, dtype);
}

// d/dx f at x, given out = f(x); the derivative as torch writes it.
using Derivative = std::function<double(double x, double out)>;

struct GradCase {
  std::string name;
  UnaryOp op;
  UnaryArgs args;
  double low, high;  // inside the op's domain
  Derivative derivative;
};

UnaryArgs pow_args(double e) {
  UnaryArgs a;
  a.exponent = e;
  return a;
}
UnaryArgs clamp_args(bool has_min, double min, bool has_max, double max) {
  UnaryArgs a;
  a.has_min = has_min;
  a.has_max = has_max;
  a.min = min;
  a.max = max;
  return a;
}
UnaryArgs activation_args(double negative_slope, double alpha, double beta, double threshold) {
  UnaryArgs a;
  a.negative_slope = negative_slope;
  a.alpha = alpha;
  a.beta = beta;
  a.threshold = threshold;
  return a;
}

double normal_cdf(double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }
double normal_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * kPi); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

double gelu_tanh_derivative(double x) {
  const double k = std::sqrt(2 / kPi), c = 0.044715;
  const double t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
}

std::vector<GradCase> grad_cases() {
  const UnaryArgs none;
  UnaryArgs hardtanh;
  hardtanh.min = -0.8;
  hardtanh.max = 1.2;
  return {
      {"neg", UnaryOp::Neg, none, -3, 3, [](double, double) { return -1.0; }},
      {"abs", UnaryOp::Abs, none, -3, 3,
       [](double x, double) { return double((x > 0) - (x < 0)); }},
      {"sign", UnaryOp::Sign, none, -3, 3, [](double, double) { return 0.0; }},
      {"exp", UnaryOp::Exp, none, -3, 3, [](double, double y) { return y; }},
      {"expm1", UnaryOp::Expm1, none, -2, 2, [](double, double y) { return y + 1; }},
      {"log", UnaryOp::Log, none, 0.1, 4, [](double x, double) { return 1 / x; }},
      {"log1p", UnaryOp::Log1p, none, -0.8, 3, [](double x, double) { return 1 / (1 + x); }},
      {"sqrt", UnaryOp::Sqrt, none, 0.1, 4, [](double, double y) { return 0.5 / y; }},
      {"rsqrt", UnaryOp::Rsqrt, none, 0.2, 4, [](double, double y) { return -0.5 * y * y * y; }},
      {"sin", UnaryOp::Sin, none, -3, 3, [](double x, double) { return std::cos(x); }},
      {"cos", UnaryOp::Cos, none, -3, 3, [](double x, double) { return -std::sin(x); }},
      {"tanh", UnaryOp::Tanh, none, -3, 3, [](double, double y) { return 1 - y * y; }},
      {"sigmoid", UnaryOp::Sigmoid, none, -5, 5, [](double, double y) { return y * (1 - y); }},
      {"relu", UnaryOp::Relu, none, -2, 2, [](double, double y) { return y > 0 ? 1.0 : 0.0; }},
      {"gelu", UnaryOp::Gelu, none, -3, 3,
       [](double x, double) { return normal_cdf(x) + x * normal_pdf(x); }},
      {"gelu_tanh", UnaryOp::GeluTanh, none, -3, 3,
       [](double x, double) { return gelu_tanh_derivative(x); }},
      {"silu", UnaryOp::Silu, none, -4, 4,
       [](double x, double) { return sigmoid(x) * (1 + x * (1 - sigmoid(x))); }},
      {"floor", UnaryOp::Floor, none, -3, 3, [](double, double) { return 0.0; }},
      {"ceil", UnaryOp::Ceil, none, -3, 3, [](double, double) { return 0.0; }},
      {"round", UnaryOp::Round, none, -3, 3, [](double, double) { return 0.0; }},
      {"pow(2.5)", UnaryOp::PowScalar, pow_args(2.5), 0.1, 3,
       [](double x, double) { return 2.5 * std::pow(x, 1.5); }},
      {"pow(3)", UnaryOp::PowScalar, pow_args(3), -2, 2,
       [](double x, double) { return 3 * x * x; }},
      {"pow(-1.5)", UnaryOp::PowScalar, pow_args(-1.5), 0.2, 3,
       [](double x, double) { return -1.5 * std::pow(x, -2.5); }},
      {"pow(0)", UnaryOp::PowScalar, pow_args(0), -2, 2, [](double, double) { return 0.0; }},
      {"clamp(-0.5, 0.7)", UnaryOp::Clamp, clamp_args(true, -0.5, true, 0.7), -2, 2,
       [](double x, double) { return x >= -0.5 && x <= 0.7 ? 1.0 : 0.0; }},
      {"clamp(min 0.3)", UnaryOp::Clamp, clamp_args(true, 0.3, false, 0), -2, 2,
       [](double x, double) { return x >= 0.3 ? 1.0 : 0.0; }},
      {"clamp(max -0.2)", UnaryOp::Clamp, clamp_args(false, 0, true, -0.2), -2, 2,
       [](double x, double) { return x <= -0.2 ? 1.0 : 0.0; }},
      {"leaky_relu(0.2)", UnaryOp::LeakyRelu, activation_args(0.2, 1, 1, 20), -2, 2,
       [](double x, double) { return x > 0 ? 1.0 : 0.2; }},
      {"elu(0.7)", UnaryOp::Elu, activation_args(0.01, 0.7, 1, 20), -3, 2,
       [](double x, double) { return x > 0 ? 1.0 : 0.7 * std::exp(x); }},
      {"softplus", UnaryOp::Softplus, activation_args(0.01, 1, 1, 20), -4, 4,
       [](double x, double) { return sigmoid(x); }},
      {"softplus(2, 3)", UnaryOp::Softplus, activation_args(0.01, 1, 2, 3), -3, 3,
       [](double x, double) { return 2 * x > 3 ? 1.0 : sigmoid(2 * x); }},
      {"hardtanh(-0.8, 1.2)", UnaryOp::Hardtanh, hardtanh, -2, 2,
       [](double x, double) { return x > -0.8 && x < 1.2 ? 1.0 : 0.0; }},
  };
}

Tensor forward(const GradCase& c, const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).unary(c.op, out, x, c.args);
  return out;
}

Tensor grad_of(const GradCase& c, const Tensor& g, const Tensor& x) {
  return ops::unary_grad(c.op, g, x, forward(c, x), c.args);
}

// g * f'(x) from the stored values of g, x and the forward output, rounded to the dtype.
std::vector<double> expected_grad(const GradCase& c, const Tensor& g, const Tensor& x) {
  const std::vector<double> gv = to_doubles(g), xv = to_doubles(x), yv = to_doubles(forward(c, x));
  std::vector<double> e(gv.size());
  for (size_t i = 0; i < e.size(); ++i)
    e[i] = stored(gv[i] * c.derivative(xv[i], yv[i]), g.dtype());
  return e;
}

TEST(NnUnaryGrad, MatchesCentralDifferencesInFloat64) {
  for (const GradCase& c : grad_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor({200}, DType::Float64, c.low, c.high);
    const Tensor g = random_tensor({200}, DType::Float64, -2, 2);
    const std::vector<double> xv = to_doubles(x), gv = to_doubles(g);
    std::vector<double> plus = xv, minus = xv;
    std::vector<double> h(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      h[i] = 1e-6 * std::max(1.0, std::fabs(xv[i]));
      plus[i] += h[i];
      minus[i] -= h[i];
    }
    const std::vector<double> fp = to_doubles(forward(c, tensor_of(plus, {200}, DType::Float64)));
    const std::vector<double> fm = to_doubles(forward(c, tensor_of(minus, {200}, DType::Float64)));
    const std::vector<double> f0 = to_doubles(forward(c, x));
    std::vector<double> expected(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) {
      // Where a kink (clamp, hardtanh, relu-like) or a jump (floor, round) lies inside
      // [x - h, x + h], the central difference mixes two slopes (a draw within 1e-6 of
      // hardtanh's -0.8 once gave 0.8 of the slope). The two one-sided differences then
      // disagree; there the reference is the case's double formula, which is torch's
      // convention at the kink (NnUnaryGrad.KinksFollowTorch checks those points).
      const double left = (f0[i] - fm[i]) / h[i], right = (fp[i] - f0[i]) / h[i];
      const bool smooth =
          std::fabs(left - right) <= 1e-3 * std::max({1.0, std::fabs(left), std::fabs(right)});
      expected[i] = smooth ? gv[i] * (fp[i] - fm[i]) / (2 * h[i])
                           : stored(gv[i] * c.derivative(xv[i], f0[i]), DType::Float64);
    }
    EXPECT_TRUE(all_close(to_doubles(grad_of(c, g, x)), expected, 2e-7));
  }
}

TEST(NnUnaryGrad, MatchesDoubleFormulasForEveryDtype) {
  for (const GradCase& c : grad_cases()) {
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(c.name + " " + dtype_name(dtype));
      const Tensor x = random_tensor({9, 11}, dtype, c.low, c.high);
      const Tensor g = random_tensor({9, 11}, dtype, -2, 2);
      const Tensor grad = grad_of(c, g, x);
      EXPECT_EQ(grad.dtype(), dtype);
      EXPECT_EQ(grad.shape(), x.shape());
      EXPECT_TRUE(all_close(to_doubles(grad), expected_grad(c, g, x), tolerance(dtype)));
    }
  }
}

TEST(NnUnaryGrad, ReadsOnlyTheSavedTensor) {
  for (const GradCase& c : grad_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor({64}, DType::Float32, c.low, c.high);
    const Tensor g = random_tensor({64}, DType::Float32, -2, 2);
    const Tensor poison = ops::full({64}, kNaN, TensorOptions(DType::Float32));
    const ops::UnaryGradSaves saves = ops::unary_grad_saves(c.op);
    const Tensor x_arg = saves == ops::UnaryGradSaves::Input ? x : poison;
    const Tensor out_arg = saves == ops::UnaryGradSaves::Output ? forward(c, x) : poison;
    EXPECT_TRUE(all_close(to_doubles(ops::unary_grad(c.op, g, x_arg, out_arg, c.args)),
                          expected_grad(c, g, x), tolerance(DType::Float32)));
    // The unread one may be left undefined.
    const Tensor undefined;
    const Tensor only =
        ops::unary_grad(c.op, g, saves == ops::UnaryGradSaves::Input ? x : undefined,
                        saves == ops::UnaryGradSaves::Output ? forward(c, x) : undefined, c.args);
    EXPECT_TRUE(all_close(to_doubles(only), expected_grad(c, g, x), tolerance(DType::Float32)));
  }
}

TEST(NnUnaryGrad, LayoutsEmptyAndLarge) {
  for (const GradCase& c : grad_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = transposed_copy(random_tensor({7, 5}, DType::Float32, c.low, c.high));
    const Tensor g = random_tensor({14, 5}, DType::Float32, -2, 2).slice(0, 0, 14, 2);
    ASSERT_FALSE(x.is_contiguous());
    ASSERT_FALSE(g.is_contiguous());
    EXPECT_TRUE(all_close(to_doubles(grad_of(c, g, x)), expected_grad(c, g, x), 2e-6));
    const Tensor gx = random_tensor({1, 5}, DType::Float64, -2, 2).expand({4, 5});
    const Tensor xx = random_tensor({4, 5}, DType::Float64, c.low, c.high);
    EXPECT_TRUE(all_close(to_doubles(grad_of(c, gx, xx)), expected_grad(c, gx, xx), 1e-12));
    const Tensor scalar = random_tensor({}, DType::Float64, c.low, c.high);
    const Tensor gs = random_tensor({}, DType::Float64, -2, 2);
    EXPECT_TRUE(all_close(to_doubles(grad_of(c, gs, scalar)), expected_grad(c, gs, scalar), 1e-12));
    const Tensor empty = random_tensor({0, 3}, DType::Float16);
    EXPECT_EQ(grad_of(c, empty, empty).shape(), (Shape{0, 3}));
    const Tensor big = random_tensor({320, 110}, DType::BFloat16, c.low, c.high);
    const Tensor gb = random_tensor({320, 110}, DType::BFloat16, -2, 2);
    EXPECT_TRUE(all_close(to_doubles(grad_of(c, gb, big)), expected_grad(c, gb, big),
                          tolerance(DType::BFloat16)));
  }
}

TEST(NnUnaryGrad, KinksFollowTorch) {
  const auto grad_at = [](UnaryOp op, const UnaryArgs& args, std::vector<double> xs) {
    const Tensor x = tensor_of(xs, {static_cast<int64_t>(xs.size())}, DType::Float32);
    Tensor out = Tensor::empty(x.shape(), x.dtype());
    backend_for(Device()).unary(op, out, x, args);
    return to_doubles(ops::unary_grad(op, ops::ones_like(x), x, out, args));
  };
  EXPECT_EQ(grad_at(UnaryOp::Relu, {}, {0.0, -0.0, 1.0}), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(grad_at(UnaryOp::Abs, {}, {0.0, -2.0}), (std::vector<double>{0, -1}));
  // clamp passes the gradient on its bounds, hardtanh does not (torch's clamp_backward and
  // hardtanh_backward).
  EXPECT_EQ(grad_at(UnaryOp::Clamp, clamp_args(true, -1, true, 1), {-1.0, 1.0, 1.5}),
            (std::vector<double>{1, 1, 0}));
  UnaryArgs hardtanh;
  hardtanh.min = -1;
  hardtanh.max = 1;
  EXPECT_EQ(grad_at(UnaryOp::Hardtanh, hardtanh, {-1.0, 1.0, 0.5}), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(grad_at(UnaryOp::LeakyRelu, activation_args(0.1, 1, 1, 20), {0.0})[0],
            static_cast<double>(0.1f));
  EXPECT_EQ(grad_at(UnaryOp::Elu, activation_args(0.01, 2, 1, 20), {0.0}),
            (std::vector<double>{2}));
  // NaN: relu passes the gradient through (torch's threshold_backward), clamp gives 0.
  EXPECT_EQ(grad_at(UnaryOp::Clamp, clamp_args(true, -1, true, 1), {kNaN}),
            (std::vector<double>{0}));
  EXPECT_EQ(grad_at(UnaryOp::Relu, {}, {kNaN}), (std::vector<double>{1}));
}

TEST(NnUnaryGrad, ArgumentChecks) {
  const Tensor x = random_tensor({4}, DType::Float32);
  const Tensor undefined;
  EXPECT_THROW(ops::unary_grad(UnaryOp::LogicalNot, x, x, x), ValueError);
  EXPECT_THROW(ops::unary_grad(UnaryOp::Sin, undefined, x, x), ValueError);
  EXPECT_THROW(ops::unary_grad(UnaryOp::Sin, x, undefined, x), ValueError);
  EXPECT_THROW(ops::unary_grad(UnaryOp::Exp, x, x, undefined), ValueError);
  EXPECT_THROW(ops::unary_grad(UnaryOp::Sin, x, random_tensor({4}, DType::Float64), x), DTypeError);
  EXPECT_THROW(ops::unary_grad(UnaryOp::Sin, x, random_tensor({5}, DType::Float32), x), ShapeError);
  const Tensor i = random_tensor({4}, DType::Int64);
  EXPECT_THROW(ops::unary_grad(UnaryOp::Neg, i, i, i), DTypeError);
  const std::string message = error_message(
      [&] { ops::unary_grad(UnaryOp::Exp, x, x, random_tensor({2}, DType::Float32)); });
  EXPECT_NE(message.find("unary_grad"), std::string::npos) << message;
  EXPECT_NE(message.find("out"), std::string::npos) << message;
  EXPECT_NE(message.find("[2]"), std::string::npos) << message;
}

}  // namespace
}  // namespace rcuda::test
