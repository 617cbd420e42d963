// The Math group's unary ops (tan ... reciprocal) and atan2 against double-precision references:
// std:: math in double where C++ has the function, and for the special functions C++ lacks,
// references written independently of the engine's (digamma by recurrence and a longer
// asymptotic series, erfinv by bisection on std::erf, lgamma as log|tgamma|). Every floating
// dtype, integral input (float32 results), transposed views, empty tensors, and the domain edges.
#include <cmath>
#include <functional>
#include <limits>

#include "support/reference.h"

namespace rcuda::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

double digamma_reference(double x) {
  if (x == 0) return std::signbit(x) ? kInf : -kInf;
  if (x < 0 && x == std::floor(x)) return kNaN;
  double shift = 0;
  if (x < 0) {  // reflection: psi(1 - x) - psi(x) = pi cot(pi x)
    shift = -M_PI / std::tan(M_PI * x);
    x = 1 - x;
  }
  while (x < 20) {
    shift -= 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  return shift + std::log(x) - 0.5 / x -
         z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z / 132))));
}

double erfinv_reference(double y) {
  if (std::isnan(y) || std::fabs(y) > 1) return kNaN;
  if (std::fabs(y) == 1) return std::copysign(kInf, y);
  double lo = -7, hi = 7;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// log|gamma(x)|, +inf at the poles (0 and the negative integers), as torch and C's lgamma.
double lgamma_reference(double x) {
  if (x <= 0 && x == std::floor(x)) return kInf;
  return std::log(std::fabs(std::tgamma(x)));
}

struct MathCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> reference;
  double low, high;
  double tolerance_factor = 1;  // times the dtype's tolerance, for the special functions
};

std::vector<MathCase> math_cases() {
  return {
      {"tan", [](const Tensor& x) { return tan(x); }, [](double v) { return std::tan(v); }, -1.2,
       1.2, 4},
      {"asin", [](const Tensor& x) { return asin(x); }, [](double v) { return std::asin(v); },
       -0.99, 0.99},
      {"acos", [](const Tensor& x) { return acos(x); }, [](double v) { return std::acos(v); },
       -0.99, 0.99},
      {"atan", [](const Tensor& x) { return atan(x); }, [](double v) { return std::atan(v); }, -5,
       5},
      {"sinh", [](const Tensor& x) { return sinh(x); }, [](double v) { return std::sinh(v); }, -3,
       3},
      {"cosh", [](const Tensor& x) { return cosh(x); }, [](double v) { return std::cosh(v); }, -3,
       3},
      {"asinh", [](const Tensor& x) { return asinh(x); }, [](double v) { return std::asinh(v); },
       -5, 5},
      {"acosh", [](const Tensor& x) { return acosh(x); }, [](double v) { return std::acosh(v); },
       1.01, 6},
      {"atanh", [](const Tensor& x) { return atanh(x); }, [](double v) { return std::atanh(v); },
       -0.95, 0.95, 2},
      {"trunc", [](const Tensor& x) { return trunc(x); }, [](double v) { return std::trunc(v); },
       -5, 5},
      {"erf", [](const Tensor& x) { return erf(x); }, [](double v) { return std::erf(v); }, -3, 3},
      {"erfc", [](const Tensor& x) { return erfc(x); }, [](double v) { return std::erfc(v); }, -3,
       3, 2},
      {"erfinv", [](const Tensor& x) { return erfinv(x); }, erfinv_reference, -0.999, 0.999, 8},
      {"lgamma", [](const Tensor& x) { return lgamma(x); }, lgamma_reference, 0.1, 12, 4},
      {"lgamma negative", [](const Tensor& x) { return lgamma(x); }, lgamma_reference, -3.9, -0.1,
       64},
      {"digamma", [](const Tensor& x) { return digamma(x); }, digamma_reference, 0.1, 25, 8},
      {"digamma negative", [](const Tensor& x) { return digamma(x); }, digamma_reference, -3.9,
       -0.1, 512},
      {"log2", [](const Tensor& x) { return log2(x); }, [](double v) { return std::log2(v); }, 0.01,
       50},
      {"log10", [](const Tensor& x) { return log10(x); }, [](double v) { return std::log10(v); },
       0.01, 50},
      {"exp2", [](const Tensor& x) { return exp2(x); }, [](double v) { return std::exp2(v); }, -8,
       8},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](double v) { return 1 / v; },
       0.1, 4},
  };
}

std::vector<double> map_values(const std::function<double(double)>& f,
                               const std::vector<double>& in) {
  std::vector<double> out;
  for (double v : in) out.push_back(f(v));
  return out;
}

TEST(UnaryMath, EveryFloatingDtypeAgainstDoubleReferences) {
  for (const MathCase& c : math_cases()) {
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dtype));
      const Tensor x = random_tensor({5, 7}, dtype, c.low, c.high);
      const Tensor out = c.op(x);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_EQ(out.shape(), x.shape());
      // The half types compute in float32: the reference is rounded only once, at the end.
      const double tol = tolerance(dtype) * (is_reduced_float(dtype) ? 2 : c.tolerance_factor);
      EXPECT_TRUE(all_close(to_doubles(out), map_values(c.reference, to_doubles(x)), tol));
    }
  }
}

TEST(UnaryMath, NonContiguousAndEmptyInputs) {
  for (const MathCase& c : math_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = transposed_copy(random_tensor({6, 4}, DType::Float64, c.low, c.high));
    ASSERT_FALSE(x.is_contiguous());
    EXPECT_TRUE(all_close(to_doubles(c.op(x)), map_values(c.reference, to_doubles(x)),
                          tolerance(DType::Float64) * c.tolerance_factor * 8));
    const Tensor stepped = random_tensor({12}, DType::Float32, c.low, c.high).slice(0, 1, 12, 3);
    EXPECT_TRUE(all_close(to_doubles(c.op(stepped)), map_values(c.reference, to_doubles(stepped)),
                          tolerance(DType::Float32) * c.tolerance_factor));
    const Tensor empty = c.op(Tensor::empty({0, 3}, DType::Float32));
    EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  }
}

TEST(UnaryMath, IntegralInputGivesFloat32ExceptTrunc) {
  const Tensor ints = tensor_of({1, 2, 3, 7}, {4}, DType::Int32);
  EXPECT_EQ(log2(ints).dtype(), DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(log2(ints)), {0, 1, std::log2(3.0), std::log2(7.0)}, 2e-6));
  EXPECT_TRUE(all_close(to_doubles(reciprocal(ints)), {1, 0.5, 1 / 3.0, 1 / 7.0}, 2e-6));
  EXPECT_TRUE(all_close(to_doubles(lgamma(ints)), {0, 0, std::log(2.0), std::log(720.0)}, 4e-6));
  const Tensor bools = tensor_of({0, 1}, {2}, DType::Bool);
  EXPECT_TRUE(all_close(to_doubles(exp2(bools)), {1, 2}, 0));
  for (DType dtype : {DType::UInt8, DType::Int32, DType::Int64}) {
    const Tensor x = random_tensor({9}, dtype, 0, 100);
    const Tensor t = trunc(x);
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(to_doubles(t), to_doubles(x));
  }
}

TEST(UnaryMath, DomainEdgesAsTorch) {
  const Tensor x = tensor_of({-2, -1, -0.0, 0, 1, 2, kInf, kNaN}, {8}, DType::Float64);
  EXPECT_TRUE(all_close(to_doubles(asin(x)),
                        map_values([](double v) { return std::asin(v); }, to_doubles(x)), 1e-15));
  EXPECT_TRUE(all_close(to_doubles(atanh(x)),
                        map_values([](double v) { return std::atanh(v); }, to_doubles(x)), 1e-15));
  EXPECT_TRUE(all_close(to_doubles(erfinv(x)), {kNaN, -kInf, 0, 0, kInf, kNaN, kNaN, kNaN}, 0));
  // digamma: -inf at +0, +inf at -0, NaN at the negative integers, as torch.
  EXPECT_TRUE(all_close(
      to_doubles(digamma(x)),
      {kNaN, kNaN, kInf, -kInf, -0.57721566490153286, 0.42278433509846714, kInf, kNaN}, 1e-13));
  EXPECT_TRUE(all_close(to_doubles(lgamma(x)), {kInf, kInf, kInf, kInf, 0, 0, kInf, kNaN}, 1e-15));
  EXPECT_TRUE(all_close(to_doubles(reciprocal(x)), {-0.5, -1, -kInf, kInf, 1, 0.5, 0, kNaN}, 0));
  EXPECT_TRUE(all_close(to_doubles(trunc(tensor_of({-2.7, -0.5, 0.5, 2.7}, {4}, DType::Float32))),
                        {-2, 0, 0, 2}, 0));
}

TEST(UnaryMath, Atan2AllQuadrantsBroadcastingAndPromotion) {
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor a = random_tensor({4, 1}, dtype, -3, 3), b = random_tensor({5}, dtype, -3, 3);
    const Tensor out = atan2(a, b);
    EXPECT_EQ(out.shape(), (Shape{4, 5}));
    EXPECT_EQ(out.dtype(), dtype);
    const std::vector<double> av = to_doubles(a), bv = to_doubles(b);
    std::vector<double> expected;
    for (double y : av)
      for (double x : bv) expected.push_back(std::atan2(y, x));
    EXPECT_TRUE(all_close(to_doubles(out), expected, tolerance(dtype) * 2));
  }
  const Tensor ints =
      atan2(tensor_of({1, -1, 0}, {3}, DType::Int64), tensor_of({0, 0, -1}, {3}, DType::Int32));
  EXPECT_EQ(ints.dtype(), DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(ints), {M_PI / 2, -M_PI / 2, M_PI}, 2e-6));
  const Tensor x = transposed_copy(random_tensor({3, 4}, DType::Float64));
  const Tensor y = random_tensor({3, 4}, DType::Float64);
  std::vector<double> expected;
  const std::vector<double> xv = to_doubles(x), yv = to_doubles(y);
  for (size_t i = 0; i < xv.size(); ++i) expected.push_back(std::atan2(xv[i], yv[i]));
  EXPECT_TRUE(all_close(to_doubles(atan2(x, y)), expected, 1e-15));
  EXPECT_THROW(atan2(x, random_tensor({5}, DType::Float64)), ShapeError);
}

TEST(UnaryMath, NamedThroughTheOpTable) {
  // unary_op(name) (what the R package calls) runs the same op as the named function.
  const Tensor x = random_tensor({6}, DType::Float64, 1.1, 1.9);
  for (const MathCase& c : math_cases()) {
    const std::string name = c.name;
    if (name.find(' ') != std::string::npos) continue;
    SCOPED_TRACE(name);
    EXPECT_TRUE(all_close(to_doubles(unary_op(name.c_str(), x)), to_doubles(c.op(x)), 0));
  }
  EXPECT_TRUE(
      all_close(to_doubles(binary_op("atan2", x, x)), std::vector<double>(6, M_PI / 4), 1e-15));
}

}  // namespace
}  // namespace rcuda::test
