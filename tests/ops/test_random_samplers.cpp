// Poisson and Gamma draws (ops::poisson, ops::standard_gamma) against their distributions: means
// and variances within a few standard errors, frequencies against the probability mass function
// and distribution functions written out here in double precision, the pathwise gradient against
// identities of the Gamma family; seeds repeat draws; bad parameters are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/reference.h"

namespace rcuda {
namespace {

using test::to_doubles;

struct Moments {
  double mean = 0, variance = 0;
};

Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= static_cast<double>(v.size() - 1);
  return m;
}

// The sample mean and variance of n draws against the distribution's, to `z` standard errors:
// Var(mean) = var / n and Var(sample variance) ~ (mu4 - var^2) / n.
void expect_moments(const std::vector<double>& draws, double mean, double var, double mu4,
                    double z = 5) {
  const double n = static_cast<double>(draws.size());
  const Moments m = moments(draws);
  EXPECT_NEAR(m.mean, mean, z * std::sqrt(var / n)) << "mean";
  EXPECT_NEAR(m.variance, var, z * std::sqrt((mu4 - var * var) / n)) << "variance";
}

double poisson_pmf(double k, double rate) {
  return std::exp(k * std::log(rate) - rate - std::lgamma(k + 1));
}

TEST(PoissonTest, MomentsAndFrequenciesMatchTheDistribution) {
  manual_seed(11);
  const int64_t n = 200000;
  // Both sides of the sampler's switch at 10, and a large rate.
  for (double rate : {0.3, 4.0, 9.99, 10.0, 60.0, 2500.0}) {
    SCOPED_TRACE(rate);
    const std::vector<double> draws = to_doubles(poisson(full({n}, rate, DType::Float64)));
    for (double x : draws) ASSERT_TRUE(x >= 0 && x == std::floor(x)) << x;
    // The fourth central moment of Poisson(r) is r + 3 r^2.
    expect_moments(draws, rate, rate, rate + 3 * rate * rate);
    if (rate > 100) continue;
    // Each likely count's frequency against the pmf.
    for (double k = std::floor(std::max(0.0, rate - 2 * std::sqrt(rate)));
         k <= rate + 2 * std::sqrt(rate); ++k) {
      const double p = poisson_pmf(k, rate);
      double count = 0;
      for (double x : draws) count += x == k;
      EXPECT_NEAR(count / n, p, 5 * std::sqrt(p * (1 - p) / n)) << "k = " << k;
    }
  }
}

TEST(PoissonTest, EveryFloatingDtypeShapeAndLayout) {
  manual_seed(3);
  // Rates of every size in one tensor, transposed (not contiguous): each element its own rate.
  const std::vector<double> rates = {0, 1, 7, 12, 40, 0.5};
  const Tensor r = test::tensor_of(rates, {2, 3}, DType::Float64).t();
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor out = poisson(to(r.expand({5000, 3, 2}), dtype));
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_EQ(out.shape(), (Shape{5000, 3, 2}));
    const std::vector<double> draws = to_doubles(out);
    const std::vector<double> rate = to_doubles(r);
    for (size_t j = 0; j < 6; ++j) {
      std::vector<double> column;
      for (size_t i = j; i < draws.size(); i += 6) column.push_back(draws[i]);
      expect_moments(column, rate[j], rate[j], rate[j] + 3 * rate[j] * rate[j]);
      if (rate[j] == 0) {
        EXPECT_EQ(moments(column).mean, 0);
      }
    }
  }
  EXPECT_EQ(poisson(zeros({0, 4})).shape(), (Shape{0, 4}));
}

TEST(PoissonTest, SeedRepeatsAndCallsDiffer) {
  const Tensor rates = full({1000}, 20.0);
  manual_seed(8);
  const std::vector<double> a = to_doubles(poisson(rates)), b = to_doubles(poisson(rates));
  manual_seed(8);
  EXPECT_EQ(to_doubles(poisson(rates)), a);
  EXPECT_EQ(to_doubles(poisson(rates)), b);
  EXPECT_NE(a, b);
}

TEST(PoissonTest, BadRatesAreRefusedByName) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {-1.0, nan, inf}) {
    try {
      poisson(test::tensor_of({1, bad}, {2}, DType::Float32));
      FAIL() << bad;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("poisson: every element of rates must be finite"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(poisson(full({3}, 2, DType::Int64)), DTypeError);
}

// P(alpha, x) where it has a closed form: half-integer and integer alpha.
double gamma_cdf(double alpha, double x) {
  const double pi = 3.14159265358979323846;
  if (alpha == 0.5) return std::erf(std::sqrt(x));
  if (alpha == 1.5) return std::erf(std::sqrt(x)) - 2 * std::sqrt(x / pi) * std::exp(-x);
  // Integer alpha: 1 - e^-x sum_{k < alpha} x^k / k!.
  double term = 1, sum = 1;
  for (int k = 1; k < static_cast<int>(alpha); ++k) sum += term *= x / k;
  return 1 - std::exp(-x) * sum;
}

TEST(GammaTest, MomentsAndDistributionFunctionMatch) {
  manual_seed(21);
  const int64_t n = 200000;
  for (double alpha : {0.5, 1.0, 1.5, 3.0, 30.0}) {
    SCOPED_TRACE(alpha);
    const std::vector<double> draws = to_doubles(standard_gamma(full({n}, alpha, DType::Float64)));
    for (double x : draws) ASSERT_GT(x, 0);
    // Gamma(a, 1): mean and variance a, fourth central moment 3 a^2 + 6 a.
    expect_moments(draws, alpha, alpha, 3 * alpha * alpha + 6 * alpha);
    // The empirical distribution function at a few quantiles against P(alpha, x).
    for (double x : {0.25 * alpha, 0.7 * alpha, alpha, 1.6 * alpha, 3 * alpha}) {
      const double p = gamma_cdf(alpha, x);
      double below = 0;
      for (double d : draws) below += d <= x;
      EXPECT_NEAR(below / n, p, 5 * std::sqrt(p * (1 - p) / n) + 1e-12) << "x = " << x;
    }
  }
  // Small alpha (the boosted branch) and large alpha: the moments.
  for (double alpha : {0.05, 1000.0}) {
    const std::vector<double> draws = to_doubles(standard_gamma(full({n}, alpha, DType::Float64)));
    expect_moments(draws, alpha, alpha, 3 * alpha * alpha + 6 * alpha);
  }
}

TEST(GammaTest, TinyAlphaIsClampedToTheSmallestNormal) {
  manual_seed(5);
  // Gamma(0.001) draws are below 1e-38 more often than not: float32 gets its smallest normal.
  const std::vector<double> f = to_doubles(standard_gamma(full({2000}, 0.001, DType::Float32)));
  double clamped = 0;
  for (double x : f) {
    ASSERT_GE(x, std::numeric_limits<float>::min());
    clamped += x == std::numeric_limits<float>::min();
  }
  EXPECT_GT(clamped, 0);
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    const Tensor g = standard_gamma(full({3000, 2}, 2.0, dtype));
    EXPECT_EQ(g.dtype(), dtype);
    expect_moments(to_doubles(g), 2.0, 2.0, 3 * 4.0 + 12.0, 6);
  }
}

TEST(GammaTest, GradientSatisfiesThePathwiseIdentities) {
  // For x ~ Gamma(a, 1) with its pathwise derivative dx/da: E[dx/da] = dE[x]/da = 1 and
  // E[x dx/da] = dE[x^2]/da / 2 = (2a + 1) / 2.
  manual_seed(9);
  const int64_t n = 200000;
  for (double alpha : {0.3, 1.0, 4.5, 80.0}) {
    SCOPED_TRACE(alpha);
    const Tensor a = full({n}, alpha, DType::Float64);
    const Tensor x = standard_gamma(a);
    const std::vector<double> g = to_doubles(standard_gamma_grad(a, x));
    const std::vector<double> xs = to_doubles(x);
    std::vector<double> xg(g.size());
    for (size_t i = 0; i < g.size(); ++i) xg[i] = xs[i] * g[i];
    const Moments mg = moments(g), mxg = moments(xg);
    EXPECT_NEAR(mg.mean, 1.0, 5 * std::sqrt(mg.variance / n));
    EXPECT_NEAR(mxg.mean, alpha + 0.5, 5 * std::sqrt(mxg.variance / n));
  }
}

TEST(GammaTest, GradientMatchesTheImplicitDerivative) {
  // dx/da at a fixed quantile is -(dP/da) / (dP/dx). The reference takes dP/da as a central
  // difference of P(a, x) = e^-x sum_n x^(a+n) / Gamma(a + n + 1), summed in full here (all
  // terms positive, so no cancellation), where the sampler's gradient uses a continued fraction
  // above x = a + 1 and stops its series at convergence.
  auto lower_p = [](double a, double x) {
    double sum = 0;
    for (int n = 0; n < 400; ++n)
      sum += std::exp((a + n) * std::log(x) - x - std::lgamma(a + n + 1));
    return sum;
  };
  for (double alpha : {0.7, 1.0, 2.5, 6.0}) {
    for (double x : {0.3 * alpha, alpha, 2.2 * alpha}) {
      const double h = 1e-4;
      const double dp_da = (lower_p(alpha + h, x) - lower_p(alpha - h, x)) / (2 * h);
      const double density = std::exp((alpha - 1) * std::log(x) - x - std::lgamma(alpha));
      const double expected = -dp_da / density;
      const Tensor got =
          standard_gamma_grad(full({1}, alpha, DType::Float64), full({1}, x, DType::Float64));
      EXPECT_NEAR(to_doubles(got)[0], expected, 1e-5 * std::max(1.0, std::fabs(expected)))
          << "alpha " << alpha << ", x " << x;
    }
  }
}

TEST(GammaTest, BadArgumentsAreRefusedByName) {
  for (double bad : {0.0, -2.0, std::numeric_limits<double>::infinity()}) {
    EXPECT_THROW(standard_gamma(test::tensor_of({1, bad}, {2}, DType::Float64)), ValueError);
  }
  EXPECT_THROW(standard_gamma(full({2}, 1, DType::Int32)), DTypeError);
  const Tensor a = full({3}, 2.0);
  EXPECT_THROW(standard_gamma_grad(a, full({4}, 1.0)), ValueError);
  EXPECT_THROW(standard_gamma_grad(a, full({3}, 1.0, DType::Float64)), DTypeError);
  // The gradient checks no values (its alpha passed standard_gamma's check): a bad alpha gives NaN.
  const std::vector<double> grads = test::to_doubles(
      standard_gamma_grad(test::tensor_of({0, -2, std::numeric_limits<double>::infinity(), NAN, 2},
                                          {5}, DType::Float64),
                          full({5}, 1.5, DType::Float64)));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(grads[i])) << "element " << i;
  EXPECT_TRUE(std::isfinite(grads[4]));
  try {
    standard_gamma(full({2}, -1.0));
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("standard_gamma: every element of alpha"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rcuda
