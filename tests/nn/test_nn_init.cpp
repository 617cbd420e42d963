// Initialisers: gains and fans against hand-computed values, sample statistics of large tensors
// within sampling error of their distributions, trunc_normal_ by a Kolmogorov-Smirnov test,
// in-place behaviour on leaves and views, and errors.
#include <algorithm>
#include <cmath>

#include "nn/nn_test_util.h"

namespace rcuda::test {
namespace {

namespace init = nn::init;

struct Stats {
  double mean = 0, std = 0, min = INFINITY, max = -INFINITY;
  int64_t n = 0;
};

Stats stats_of(const Tensor& t) {
  const std::vector<double> v = to_doubles(t);
  Stats s;
  s.n = static_cast<int64_t>(v.size());
  for (double x : v) s.mean += x / s.n, s.min = std::fmin(s.min, x), s.max = std::fmax(s.max, x);
  for (double x : v) s.std += (x - s.mean) * (x - s.mean) / (s.n - 1);
  s.std = std::sqrt(s.std);
  return s;
}

// Mean within 6 standard errors; std within 2% (about 10 standard errors of a sample std for
// the sizes used here, for uniform and normal samples alike).
void expect_moments(const Tensor& t, double mean, double std) {
  const Stats s = stats_of(t);
  EXPECT_NEAR(s.mean, mean, 6 * std / std::sqrt(static_cast<double>(s.n)));
  EXPECT_NEAR(s.std, std, 0.02 * std);
}

TEST(NnInit, CalculateGainTable) {
  for (const char* linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                             "conv_transpose2d", "conv_transpose3d", "sigmoid"})
    EXPECT_EQ(init::calculate_gain(linear), 1.0) << linear;
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3);
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / 1.0001));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.0), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  EXPECT_THROW(init::calculate_gain("swish"), ValueError);
  EXPECT_TRUE(mentions(error_message([] { init::calculate_gain("swish"); }),
                       {"calculate_gain", "\"swish\"", "leaky_relu"}));
}

TEST(NnInit, FansAsTorch) {
  auto fans = [](const Shape& s) {
    return init::calculate_fan_in_and_fan_out(Tensor::empty(s, DType::Float32));
  };
  EXPECT_EQ(fans({3, 4}).fan_in, 4);
  EXPECT_EQ(fans({3, 4}).fan_out, 3);
  EXPECT_EQ(fans({16, 8, 3, 3}).fan_in, 72);
  EXPECT_EQ(fans({16, 8, 3, 3}).fan_out, 144);
  EXPECT_EQ(fans({5, 2, 7}).fan_in, 14);
  EXPECT_EQ(fans({5, 2, 7}).fan_out, 35);
  EXPECT_THROW(fans({5}), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { fans({5}); }),
                       {"calculate_fan_in_and_fan_out", "fewer than 2 dims", "[5]"}));
}

TEST(NnInit, UniformAndNormalMatchTheirMoments) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor t = Tensor::empty({400, 500}, dtype);
    EXPECT_TRUE(init::uniform_(t, -1, 3).is_same(t));
    const Stats s = stats_of(t);
    EXPECT_GE(s.min, -1);
    EXPECT_LT(s.max, 3);
    expect_moments(t, 1, 4 / std::sqrt(12.0));
    init::normal_(t, 2, 0.5);
    expect_moments(t, 2, 0.5);
  }
}

TEST(NnInit, ConstantZerosOnesAndEyeFillViewsInPlace) {
  const Tensor base = zeros({4, 6}, TensorOptions(DType::Float32));
  init::constant_(base.slice(1, 0, 6, 2), 2.5);
  std::vector<double> expected(24, 0.0);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 6; c += 2) expected[r * 6 + c] = 2.5;
  EXPECT_TRUE(all_close(to_doubles(base), expected, 0));
  const Tensor ints = Tensor::empty({3}, DType::Int64);
  EXPECT_TRUE(all_close(to_doubles(init::ones_(ints)), {1, 1, 1}, 0));
  EXPECT_TRUE(all_close(to_doubles(init::zeros_(ints)), {0, 0, 0}, 0));
  const Tensor wide = Tensor::empty({3, 5}, DType::Float64);
  EXPECT_TRUE(
      all_close(to_doubles(init::eye_(wide)), {1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0}, 0));
  const Tensor tall = Tensor::empty({3, 2}, DType::Float32).t();  // [2, 3], non-contiguous
  EXPECT_TRUE(all_close(to_doubles(init::eye_(tall)), {1, 0, 0, 0, 1, 0}, 0));
  EXPECT_THROW(init::eye_(Tensor::empty({3}, DType::Float32)), ValueError);
  EXPECT_TRUE(mentions(error_message([] {
                         init::eye_(Tensor::empty({2, 2, 2}, DType::Float32));
                       }),
                       {"eye_", "2-D", "[2, 2, 2]"}));
}

TEST(NnInit, KaimingAndXavierTakeTheirScaleFromFansAndGains) {
  const Tensor w = Tensor::empty({256, 512}, DType::Float32);
  auto expect_uniform_bound = [&](double bound) {
    const Stats s = stats_of(w);
    EXPECT_GE(s.min, -bound);
    EXPECT_LE(s.max, bound);
    EXPECT_GT(s.max, 0.99 * bound);
    expect_moments(w, 0, bound / std::sqrt(3.0));
  };
  init::kaiming_uniform_(w);  // leaky_relu with a = 0: gain sqrt(2), fan_in 512
  expect_uniform_bound(std::sqrt(2.0) * std::sqrt(3.0 / 512));
  init::kaiming_uniform_(w, std::sqrt(5.0));  // torch's Linear default: bound 1 / sqrt(fan_in)
  expect_uniform_bound(1 / std::sqrt(512.0));
  init::kaiming_uniform_(w, 0, "fan_out", "tanh");
  expect_uniform_bound(5.0 / 3 * std::sqrt(3.0 / 256));
  init::kaiming_normal_(w, 0, "fan_out", "relu");
  expect_moments(w, 0, std::sqrt(2.0) / 16);
  init::xavier_uniform_(w, 2.0);
  expect_uniform_bound(2.0 * std::sqrt(6.0 / 768));
  init::xavier_normal_(w);
  expect_moments(w, 0, std::sqrt(2.0 / 768));
  const Tensor conv = Tensor::empty({64, 32, 3, 3}, DType::Float64);
  init::kaiming_normal_(conv, 0, "fan_in", "relu");
  expect_moments(conv, 0, std::sqrt(2.0 / 288));
  // Zero elements: nothing to fill, whatever the dims.
  EXPECT_NO_THROW(init::kaiming_uniform_(Tensor::empty({0, 5}, DType::Float32)));
  EXPECT_NO_THROW(init::kaiming_normal_(Tensor::empty({0}, DType::Float32)));
  EXPECT_THROW(init::kaiming_uniform_(Tensor::empty({5}, DType::Float32)), ValueError);
  EXPECT_TRUE(
      mentions(error_message([] { init::kaiming_uniform_(Tensor::empty({5}, DType::Float32)); }),
               {"kaiming_uniform_", "[5]"}));
  EXPECT_THROW(init::kaiming_normal_(w, 0, "fan_avg"), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { init::kaiming_normal_(w, 0, "fan_avg"); }),
                       {"kaiming_normal_", "mode", "\"fan_avg\""}));
  EXPECT_THROW(init::kaiming_normal_(w, 0, "fan_in", "swish"), ValueError);
  EXPECT_THROW(init::xavier_normal_(Tensor::empty({5}, DType::Float32)), ValueError);
}

// ---- trunc_normal_ -----------------------------------------------------------------------

double upper_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }
// P(alpha <= Z <= z) for standard normal Z, from the side that keeps digits in a far tail.
double mass(double alpha, double z) {
  if (alpha > 0) return upper_tail(alpha) - upper_tail(z);
  if (z < 0) return upper_tail(-z) - upper_tail(-alpha);
  return 1 - upper_tail(z) - upper_tail(-alpha);
}

// Kolmogorov-Smirnov statistic of samples against the truncated normal's CDF, times sqrt(n).
double ks_statistic(std::vector<double> v, double mean, double std, double a, double b) {
  std::sort(v.begin(), v.end());
  const double alpha = (a - mean) / std, beta = (b - mean) / std, total = mass(alpha, beta);
  const double n = static_cast<double>(v.size());
  double d = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double cdf = mass(alpha, (v[i] - mean) / std) / total;
    d = std::fmax(d, std::fmax(std::fabs(cdf - i / n), std::fabs((i + 1) / n - cdf)));
  }
  return d * std::sqrt(n);
}

TEST(NnInit, TruncNormalMatchesTheTruncatedDistributionForEveryKindOfInterval) {
  struct Case {
    double mean, std, a, b;
    const char* proposal;
  };
  const std::vector<Case> cases = {{0, 1, -2, 2, "normal"},
                                   {0.5, 2, -1, 7, "normal"},
                                   {0, 1, 0.1, 0.3, "uniform"},
                                   {0, 1, -0.2, 0.4, "uniform"},
                                   {0, 1, 3, 6, "exponential"},
                                   {1, 2, -9, -5, "mirrored exponential"},
                                   {0, 1, 8, 30, "far tail"},
                                   {0, 0.02, -2, 2, "no truncation in effect"},
                                   {0, 1, -INFINITY, INFINITY, "no bounds"}};
  for (DType dtype : {DType::Float64, DType::Float32}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + c.proposal);
      const Tensor t = Tensor::empty({50000}, dtype);
      EXPECT_TRUE(init::trunc_normal_(t, c.mean, c.std, c.a, c.b).is_same(t));
      const std::vector<double> v = to_doubles(t);
      EXPECT_GE(*std::min_element(v.begin(), v.end()), c.a);
      EXPECT_LE(*std::max_element(v.begin(), v.end()), c.b);
      // 1.95 is the 0.1% critical value of sqrt(n) * D.
      EXPECT_LT(ks_statistic(v, c.mean, c.std, c.a, c.b), 1.95);
    }
  }
  // A non-contiguous half tensor is filled through the same draws.
  const Tensor half = Tensor::empty({300, 200}, DType::Float16).t();
  init::trunc_normal_(half, 0, 1, -1, 1);
  const Stats s = stats_of(half);
  EXPECT_GE(s.min, -1);
  EXPECT_LE(s.max, 1);
  // Var of N(0, 1) truncated to [-1, 1]: 1 - 2 phi(1) / (2 Phi(1) - 1).
  const double phi1 = std::exp(-0.5) / std::sqrt(2 * M_PI), mass1 = 1 - 2 * upper_tail(1);
  expect_moments(half, 0, std::sqrt(1 - 2 * phi1 / mass1));
}

// So far out that every acceptance rate underflows in double: the sampler still picks a
// proposal that accepts (exponential for a wide tail, uniform for a narrow one).
TEST(NnInit, TruncNormalFarBeyondDoublePrecisionTails) {
  const Tensor wide = Tensor::empty({50000}, DType::Float64);
  init::trunc_normal_(wide, 0, 1, 40, 50);
  const Stats s = stats_of(wide);
  EXPECT_GE(s.min, 40);
  EXPECT_LE(s.max, 50);
  // E[Z | Z > a] = phi(a) / Q(a) = a + 1/a - 2/a^3 + ..., and sd about 1/a.
  EXPECT_NEAR(s.mean, 40 + 1 / 40.0 - 2 / (40.0 * 40 * 40), 6 * (1 / 40.0) / std::sqrt(50000.0));
  const Tensor narrow = Tensor::empty({1000}, DType::Float64);
  init::trunc_normal_(narrow, 0, 1, -40.001, -40);
  const Stats n = stats_of(narrow);
  EXPECT_GE(n.min, -40.001);
  EXPECT_LE(n.max, -40);
}

TEST(NnInit, TruncNormalDegenerateCasesAndErrors) {
  const Tensor t = Tensor::empty({5}, DType::Float32);
  EXPECT_TRUE(
      all_close(to_doubles(init::trunc_normal_(t, 3, 0, -2, 2)), std::vector<double>(5, 2), 0));
  EXPECT_TRUE(all_close(to_doubles(init::trunc_normal_(t, 0, 1, 0.5, 0.5)),
                        std::vector<double>(5, 0.5), 0));
  EXPECT_NO_THROW(init::trunc_normal_(Tensor::empty({0}, DType::Float32)));
  EXPECT_THROW(init::trunc_normal_(t, 0, 1, 2, -2), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { init::trunc_normal_(t, 0, 1, 2, -2); }),
                       {"trunc_normal_", "a 2", "b -2"}));
  EXPECT_THROW(init::trunc_normal_(t, 0, -1), ValueError);
  EXPECT_THROW(init::trunc_normal_(Tensor::empty({5}, DType::Int64)), DTypeError);
}

TEST(NnInit, InitialisingALeafThatRequiresGradKeepsItALeafAndBumpsItsVersion) {
  const Tensor w = zeros({8, 4}, TensorOptions(DType::Float32));
  w.requires_grad_();
  for (const auto& fill : std::vector<std::function<void()>>{
           [&] { init::kaiming_uniform_(w); }, [&] { init::xavier_normal_(w); },
           [&] { init::trunc_normal_(w, 0, 0.02); }, [&] { init::zeros_(w); },
           [&] { init::eye_(w); }, [&] { init::constant_(w, 0.5); }}) {
    const uint64_t before = w.storage()->version();
    fill();
    EXPECT_GT(w.storage()->version(), before);
    EXPECT_TRUE(w.requires_grad());
    EXPECT_TRUE(w.is_leaf());
    EXPECT_EQ(w.grad_fn(), nullptr);
  }
}

TEST(NnInit, ASeedReproducesEveryRandomInitialiser) {
  for (const auto& fill : std::vector<std::function<void(const Tensor&)>>{
           [](const Tensor& t) { init::uniform_(t, -2, 2); },
           [](const Tensor& t) { init::normal_(t); },
           [](const Tensor& t) { init::kaiming_normal_(t); },
           [](const Tensor& t) { init::xavier_uniform_(t); },
           [](const Tensor& t) { init::trunc_normal_(t, 0, 1, -0.5, 2); }}) {
    const Tensor a = Tensor::empty({30, 20}, DType::Float32),
                 b = Tensor::empty({30, 20}, DType::Float32);
    manual_seed(1234);
    fill(a);
    manual_seed(1234);
    fill(b);
    EXPECT_TRUE(all_close(to_doubles(a), to_doubles(b), 0));
  }
}

TEST(NnInit, Errors) {
  const Tensor t = Tensor::empty({3, 3}, DType::Float32);
  EXPECT_THROW(init::uniform_(Tensor::empty({3}, DType::Int64)), DTypeError);
  EXPECT_TRUE(mentions(error_message([] { init::uniform_(Tensor::empty({3}, DType::Int64)); }),
                       {"uniform_", "int64"}));
  EXPECT_THROW(init::uniform_(t, 2, 1), ValueError);
  EXPECT_TRUE(
      mentions(error_message([&] { init::uniform_(t, 2, 1); }), {"uniform_", "a 2", "b 1"}));
  EXPECT_THROW(init::normal_(t, 0, -1), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { init::normal_(t, 0, -1); }), {"normal_", "std", "-1"}));
}

}  // namespace
}  // namespace rcuda::test
