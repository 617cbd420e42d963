// trunc_normal_: N(mean, std^2) restricted to [a, b].
//
// Note [Truncated normal by rejection]
// torch draws U(2 Phi(alpha) - 1, 2 Phi(beta) - 1) and applies erfinv. rcuda has no erfinv
// primitive, and a polynomial erfinv composed from elementwise ops would be a home-made special
// function; so values are drawn by rejection instead, which is exact for any interval and needs
// only uniform draws, exp and log on t's device. In standard units (alpha = (a - mean) / std,
// beta likewise) each element draws from a proposal until one is accepted (Robert 1995,
// "Simulation of truncated normal variables"):
//   normal       z ~ N(0, 1), accepted when alpha <= z <= beta;
//   uniform      z ~ U(alpha, beta), accepted with probability exp((m^2 - z^2) / 2), m the
//                point of [alpha, beta] nearest 0 (good for narrow intervals);
//   exponential  for a one-sided tail [lo, hi] with lo > 0 (an interval below 0 is mirrored):
//                z = lo + Exp(lambda), lambda = (lo + sqrt(lo^2 + 4)) / 2, accepted when z <= hi
//                and with probability exp(-(z - lambda)^2 / 2) (good far in a tail).
// The proposal with the highest acceptance rate, computed on the host from the bounds, is used
// for the whole call; that rate is above 0.49 for every interval (the worst is near [0, 2.55]),
// so the rounds needed grow only with log(numel). Each round draws a full tensor, keeps the new
// values of elements still pending that were accepted, and asks the device whether any is pending
// (one synchronisation per round: an initialiser is not on a training step's path).
#include <cmath>
#include <utility>

#include "nn_util.h"
#include "rcuda/nn/init.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::nn::init {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2Pi = 2.5066282746310002;
constexpr int kMaxRounds = 10000;

double upper_tail(double z) { return 0.5 * std::erfc(z / kSqrt2); }  // 1 - Phi(z)
double density(double z) { return std::exp(-0.5 * z * z) / kSqrt2Pi; }

enum class Proposal { Normal, Uniform, Exponential };

struct Plan {
  Proposal proposal = Proposal::Normal;
  double low = 0, high = 0;  // the standardised interval (mirrored for a tail below 0)
  bool mirrored = false;
  double lambda = 0;
};

// Probability mass of N(0, 1) in [alpha, beta], from the tail on the interval's side so that
// it keeps its digits far out.
double mass_between(double alpha, double beta) {
  if (alpha > 0) return upper_tail(alpha) - upper_tail(beta);
  if (beta < 0) return upper_tail(-beta) - upper_tail(-alpha);
  return 1.0 - upper_tail(beta) - upper_tail(-alpha);
}

Plan choose_plan(double alpha, double beta) {
  const double mass = mass_between(alpha, beta);
  const double nearest = alpha > 0 ? alpha : beta < 0 ? beta : 0.0;
  const bool one_sided = alpha > 0 || beta < 0;
  const double lo = beta < 0 ? -beta : alpha, hi = beta < 0 ? -alpha : beta;
  const double lambda = (lo + std::sqrt(lo * lo + 4.0)) / 2.0;
  const double normal_rate = mass;
  const double uniform_rate =
      std::isfinite(beta - alpha) ? mass / ((beta - alpha) * density(nearest)) : 0.0;
  // The integral of the proposal density times the acceptance over [lo, hi].
  const double exponential_rate =
      one_sided ? lambda * std::exp(lambda * lo - 0.5 * lambda * lambda) * kSqrt2Pi * mass : 0.0;
  Plan plan;
  plan.low = alpha;
  plan.high = beta;
  double best = normal_rate;
  if (uniform_rate > best) {
    plan.proposal = Proposal::Uniform;
    best = uniform_rate;
  }
  if (exponential_rate > best) {
    plan = {Proposal::Exponential, lo, hi, beta < 0, lambda};
    best = exponential_rate;
  }
  if (!(best > 0) && one_sided) {
    // So far out that the rates underflow: a wide tail takes the exponential, a narrow one the
    // uniform proposal (each then accepts nearly always).
    if ((hi - lo) * lo > 1.0)
      plan = {Proposal::Exponential, lo, hi, beta < 0, lambda};
    else
      plan.proposal = Proposal::Uniform;
  }
  return plan;
}

// One round: candidates z in standard units and whether each is accepted.
std::pair<Tensor, Tensor> propose(const Plan& plan, const Shape& shape, TensorOptions options) {
  switch (plan.proposal) {
    case Proposal::Normal: {
      const Tensor z = ops::randn(shape, options);
      return {z, ops::logical_and(ops::ge(z, plan.low), ops::le(z, plan.high))};
    }
    case Proposal::Uniform: {
      const double nearest = plan.low > 0 ? plan.low : plan.high < 0 ? plan.high : 0.0;
      const Tensor z =
          ops::add(ops::mul(ops::rand(shape, options), plan.high - plan.low), plan.low);
      const Tensor accept_prob =
          ops::exp(ops::mul(ops::sub(ops::mul(z, z), nearest * nearest), -0.5));
      return {z, ops::lt(ops::rand(shape, options), accept_prob)};
    }
    case Proposal::Exponential: {
      // -log(1 - u) for u in [0, 1) is Exp(1), finite everywhere.
      const Tensor exponential = ops::neg(ops::log1p(ops::neg(ops::rand(shape, options))));
      Tensor z = ops::add(ops::div(exponential, plan.lambda), plan.low);
      const Tensor gap = ops::sub(z, plan.lambda);
      const Tensor accept_prob = ops::exp(ops::mul(ops::mul(gap, gap), -0.5));
      const Tensor accepted =
          ops::logical_and(ops::le(z, plan.high), ops::lt(ops::rand(shape, options), accept_prob));
      if (plan.mirrored) z = ops::neg(z);
      return {z, accepted};
    }
  }
  throw InternalError("trunc_normal_: unknown proposal");
}

}  // namespace

const Tensor& trunc_normal_(const Tensor& t, double mean, double std, double a, double b) {
  detail::check_floating("trunc_normal_", "tensor", t);
  RCUDA_CHECK(a <= b, ValueError, "trunc_normal_: expects a <= b, got a ", a, ", b ", b);
  RCUDA_CHECK(std >= 0 && std::isfinite(std) && std::isfinite(mean), ValueError,
              "trunc_normal_: expects a finite mean and a finite std >= 0, got mean ", mean,
              ", std ", std);
  NoGradGuard no_grad;
  if (t.numel() == 0) return t;
  if (std == 0 || a == b) return rcuda::fill_(t, std::fmin(std::fmax(mean, a), b));
  const Plan plan = choose_plan((a - mean) / std, (b - mean) / std);
  // float16/bfloat16 are drawn in float32 and rounded once at the end.
  const TensorOptions options(t.dtype() == DType::Float64 ? DType::Float64 : DType::Float32,
                              t.device());
  Tensor z = ops::zeros(t.shape(), options);
  Tensor pending = ops::full(t.shape(), true, TensorOptions(DType::Bool, t.device()));
  for (int round = 0;; ++round) {
    RCUDA_CHECK(round < kMaxRounds, InternalError, "trunc_normal_: rejection sampling on [", a,
                ", ", b, "] did not finish in ", kMaxRounds, " rounds");
    const auto [candidate, accepted] = propose(plan, t.shape(), options);
    z = ops::where(ops::logical_and(pending, accepted), candidate, z);
    pending = ops::logical_and(pending, ops::logical_not(accepted));
    if (!ops::item(ops::any(pending)).to_bool()) break;
  }
  // mean + std * z can round just past a bound; the clamp keeps every value inside [a, b].
  return rcuda::copy_(t, ops::clamp(ops::add(ops::mul(z, std), mean), a, b));
}

}  // namespace rcuda::nn::init
