// Tests for the activations of rcuda/ops/nn.h (leaky_relu, elu, softplus, hardtanh) on the CPU
// backend, against plain double-precision formulas on the inputs' stored values; every floating
// dtype, non-contiguous, expanded, 0-dim and empty inputs, sizes past the OpenMP grain, NaN,
// and the argument checks. Tolerances as in test_elementwise.cpp: the reference is rounded to
// the output dtype, so the two differ by at most one rounding of the half types.
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

double stored(double v, DType dtype) {
  char buf[8];
  write_element(buf, dtype, v);
  return read_element(buf, dtype);
}

struct ActivationCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
};

std::vector<ActivationCase> activation_cases() {
  auto softplus_ref = [](double beta, double threshold) {
    return
        [=](double x) { return x * beta > threshold ? x : std::log1p(std::exp(beta * x)) / beta; };
  };
  return {
      {"leaky_relu", [](const Tensor& x) { return ops::leaky_relu(x); },
       [](double x) { return x > 0 ? x : 0.01 * x; }},
      {"leaky_relu(0.3)", [](const Tensor& x) { return ops::leaky_relu(x, 0.3); },
       [](double x) { return x > 0 ? x : 0.3 * x; }},
      {"elu", [](const Tensor& x) { return ops::elu(x); },
       [](double x) { return x > 0 ? x : std::expm1(x); }},
      {"elu(0.5)", [](const Tensor& x) { return ops::elu(x, 0.5); },
       [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }},
      {"softplus", [](const Tensor& x) { return ops::softplus(x); }, softplus_ref(1, 20)},
      {"softplus(2, 3)", [](const Tensor& x) { return ops::softplus(x, 2, 3); },
       softplus_ref(2, 3)},
      {"softplus(-1.5, 1)", [](const Tensor& x) { return ops::softplus(x, -1.5, 1); },
       softplus_ref(-1.5, 1)},
      {"hardtanh", [](const Tensor& x) { return ops::hardtanh(x); },
       [](double x) { return x < -1 ? -1 : (x > 1 ? 1 : x); }},
      {"hardtanh(-0.5, 2)", [](const Tensor& x) { return ops::hardtanh(x, -0.5, 2); },
       [](double x) { return x < -0.5 ? -0.5 : (x > 2 ? 2 : x); }},
  };
}

::testing::AssertionResult matches(const Tensor& out, const Tensor& x,
                                   const std::function<double(double)>& ref) {
  if (out.dtype() != x.dtype()) return ::testing::AssertionFailure() << "dtype changed";
  if (out.shape() != x.shape()) return ::testing::AssertionFailure() << "shape changed";
  std::vector<double> expected = to_doubles(x);
  for (double& v : expected) v = stored(ref(v), x.dtype());
  return all_close(to_doubles(out), expected, tolerance(x.dtype()));
}

TEST(NnActivation, EveryDtypeAndLayout) {
  for (const ActivationCase& c : activation_cases()) {
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(c.name + " " + dtype_name(dtype));
      const Tensor x = random_tensor({7, 9}, dtype, -4, 4);
      EXPECT_TRUE(matches(c.op(x), x, c.ref));
      const Tensor t = transposed_copy(random_tensor({6, 5}, dtype, -4, 4));
      EXPECT_TRUE(matches(c.op(t), t, c.ref));
      const Tensor stepped = random_tensor({4, 10}, dtype, -4, 4).slice(1, 1, 10, 3);
      EXPECT_TRUE(matches(c.op(stepped), stepped, c.ref));
      const Tensor expanded = random_tensor({1, 6}, dtype, -4, 4).expand({3, 6});
      EXPECT_TRUE(matches(c.op(expanded), expanded, c.ref));
      const Tensor scalar = random_tensor({}, dtype, -4, 4);
      EXPECT_TRUE(matches(c.op(scalar), scalar, c.ref));
      const Tensor empty = random_tensor({0, 4}, dtype);
      EXPECT_TRUE(matches(c.op(empty), empty, c.ref));
    }
    SCOPED_TRACE(c.name + " large");
    const Tensor big = random_tensor({300, 130}, DType::Float32, -30, 30);  // past the grain
    EXPECT_TRUE(matches(c.op(big), big, c.ref));
  }
}

TEST(NnActivation, NaNPropagatesAndSoftplusIsLinearPastTheThreshold) {
  for (const ActivationCase& c : activation_cases()) {
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(c.name + " " + dtype_name(dtype));
      const Tensor x = tensor_of({kNaN, -1e4, 1e4, 0.0}, {4}, dtype);
      EXPECT_TRUE(std::isnan(to_doubles(c.op(x))[0]));
      EXPECT_TRUE(matches(c.op(x), x, c.ref));
    }
  }
  // exp(100) overflows float32: past the threshold softplus is x itself.
  const Tensor big = tensor_of({100, 30, 19.5}, {3}, DType::Float32);
  const std::vector<double> y = to_doubles(ops::softplus(big));
  EXPECT_EQ(y[0], 100);
  EXPECT_EQ(y[1], 30);
  EXPECT_NEAR(y[2], std::log1p(std::exp(19.5)), 1e-5);
}

TEST(NnActivation, HardtanhOnIntegersTruncatesTheBounds) {
  for (DType dtype : {DType::Int32, DType::Int64, DType::UInt8}) {
    SCOPED_TRACE(dtype_name(dtype));
    const double low = dtype == DType::UInt8 ? 0 : -10;
    const Tensor x = random_tensor({50}, dtype, low, 10);
    const double lo = dtype == DType::UInt8 ? 2 : -3;
    const Tensor y = ops::hardtanh(x, lo + 0.7, 4.9);
    EXPECT_EQ(y.dtype(), dtype);
    std::vector<double> expected = to_doubles(x);
    const double truncated = std::trunc(lo + 0.7);  // toward zero, as torch's toLong()
    for (double& v : expected) v = std::fmin(4.0, std::fmax(truncated, v));
    EXPECT_EQ(to_doubles(y), expected);
  }
}

TEST(NnActivation, ArgumentChecks) {
  const Tensor i = random_tensor({3}, DType::Int64);
  const Tensor f = random_tensor({3}, DType::Float32);
  EXPECT_THROW(ops::leaky_relu(i), DTypeError);
  EXPECT_THROW(ops::elu(random_tensor({3}, DType::Bool)), DTypeError);
  EXPECT_THROW(ops::softplus(i), DTypeError);
  EXPECT_THROW(ops::hardtanh(random_tensor({3}, DType::Bool)), DTypeError);
  EXPECT_THROW(ops::leaky_relu(f, kNaN), ValueError);
  EXPECT_THROW(ops::elu(f, std::numeric_limits<double>::infinity()), ValueError);
  EXPECT_THROW(ops::softplus(f, 0), ValueError);
  EXPECT_THROW(ops::softplus(f, 1, kNaN), ValueError);
  EXPECT_THROW(ops::hardtanh(f, 2, 1), ValueError);
  EXPECT_THROW(ops::hardtanh(random_tensor({3}, DType::UInt8, 0, 5), -1, 1), ValueError);
  const std::string message = error_message([&] { ops::softplus(i); });
  EXPECT_NE(message.find("softplus"), std::string::npos) << message;
  EXPECT_NE(message.find("int64"), std::string::npos) << message;
  const std::string bounds = error_message([&] { ops::hardtanh(f, 2, 1); });
  EXPECT_NE(bounds.find("min_val 2"), std::string::npos) << bounds;
}

}  // namespace
}  // namespace rcuda::test
