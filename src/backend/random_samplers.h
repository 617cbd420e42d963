// Samplers that take a variable number of uniforms per element (Poisson, Gamma) and the
// reparameterised gradient of a Gamma draw, written once for the CPU and CUDA backends
// (RCUDA_HOST_DEVICE): both run this code for each element, so a seed gives the same draws on
// either, up to the last-ulp differences of log, exp and lgamma between glibc and CUDA (which
// can flip an acceptance test that lands within an ulp of its bound).
//
// Note [A Philox stream per element]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The fills of rcuda/core/philox.h give element i a fixed block. A rejection sampler needs as
// many uniforms as its trials take, so here element i reads blocks b = i * 2^20 + j, j = 0, 1,
// ..., two 53-bit uniforms per block, with the call's offset as usual: elements never share a
// block, a call never shares one with another call, and a draw is a pure function of (seed,
// offset, i), however the CPU's threads or the GPU's grid split the elements. 2^20 blocks are
// two million uniforms, which no trial loop below comes near (an accepted draw takes 2.6
// uniforms on average for Gamma, at most about 1 + rate + 8 sqrt(rate) for Poisson below 10);
// ops refuse tensors of 2^43 elements or more, so that b stays below 2^63.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "rcuda/core/half.h"
#include "rcuda/core/macros.h"
#include "rcuda/core/philox.h"

namespace rcuda::backend {

constexpr int kDrawsPerElementBits = 20;

class ElementStream {
 public:
  RCUDA_HOST_DEVICE ElementStream(const philox::RoundKeys& keys, uint64_t offset, uint64_t element)
      : keys_(keys), offset_(offset), block_(element << kDrawsPerElementBits) {}

  // Uniform in [0, 1) with 53 bits.
  RCUDA_HOST_DEVICE double uniform() {
    if (!has_second_) {
      draws_ = philox::detail::block(keys_, offset_, block_++);
      has_second_ = true;
      return static_cast<double>(philox::detail::pair64(draws_, false) >> 11) *
             philox::detail::kTwo53Inv;
    }
    has_second_ = false;
    return static_cast<double>(philox::detail::pair64(draws_, true) >> 11) *
           philox::detail::kTwo53Inv;
  }

  // Uniform in (0, 1], for logarithms.
  RCUDA_HOST_DEVICE double uniform_open_zero() { return 1.0 - uniform(); }

  // A standard normal by Box-Muller; the sine half is dropped, so that the stream's position
  // depends only on how many draws were asked for.
  RCUDA_HOST_DEVICE double normal() {
    const double u1 = uniform_open_zero();
    const double u2 = uniform();
    return sqrt(-2.0 * log(u1)) * cos(philox::detail::kTwoPi * u2);
  }

 private:
  philox::RoundKeys keys_;
  uint64_t offset_;
  uint64_t block_;
  philox::Uint4 draws_{};
  bool has_second_ = false;
};

// A Poisson draw of `rate` (finite, >= 0). Below 10: the product of uniforms until it falls
// under e^-rate (Knuth), rate + 1 uniforms on average. From 10: Hoermann's transformed rejection
// with squeeze, PTRS (W. Hoermann, "The transformed rejection method for generating Poisson
// random variables", 1993), two uniforms a trial and about 1.15 trials, as NumPy and PyTorch.
RCUDA_HOST_DEVICE inline double sample_poisson(ElementStream& stream, double rate) {
  if (!(rate > 0)) return 0;
  if (rate < 10) {
    const double limit = exp(-rate);
    double count = 0, product = stream.uniform();
    while (product > limit) {
      count += 1;
      product *= stream.uniform();
    }
    return count;
  }
  const double slam = sqrt(rate), log_rate = log(rate);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = stream.uniform() - 0.5;
    const double v = stream.uniform();
    const double us = 0.5 - fabs(u);
    const double k = floor((2 * a / us + b) * u + rate + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -rate + k * log_rate - lgamma(k + 1))
      return k;
  }
}

// A Gamma(alpha, 1) draw, alpha > 0 and finite: Marsaglia and Tsang's squeeze and rejection ("A
// simple method for generating gamma variables", 2000) for alpha >= 1; below 1, a draw of
// alpha + 1 times U^(1/alpha) (the same paper's boost). The caller clamps 0 (U^(1/alpha)
// underflows for alpha below about 0.003) to the dtype's smallest normal, as PyTorch does, so
// that log_prob stays finite.
RCUDA_HOST_DEVICE inline double sample_gamma(ElementStream& stream, double alpha) {
  double boost = 1;
  if (alpha < 1) {
    boost = pow(stream.uniform_open_zero(), 1.0 / alpha);
    alpha += 1;
  }
  const double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = stream.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = stream.uniform_open_zero();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return boost * d * v;
    if (log(u) < 0.5 * x2 + d * (1.0 - v + log(v))) return boost * d * v;
  }
}

// The smallest positive normal number of T, exact in every floating dtype: a Gamma draw is
// clamped to it (PyTorch's choice), so that a draw that underflowed keeps log_prob finite.
template <typename T>
RCUDA_HOST_DEVICE constexpr double smallest_normal() {
  if constexpr (std::is_same_v<T, double>) {
    return 2.2250738585072014e-308;  // 2^-1022
  } else if constexpr (std::is_same_v<T, Half>) {
    return 6.103515625e-05;  // 2^-14
  } else {
    return 1.1754943508222875e-38;  // 2^-126: float32 and bfloat16
  }
}

namespace detail {

// The regularized lower incomplete gamma P(a, x) for a > 0, x > 0: its series below a + 1, one
// minus the continued fraction of Q (modified Lentz) above (Numerical Recipes' gser and gcf).
// Both converge in O(sqrt(a)) terms near x = a; the caps are far above what a < 1e7 needs.
RCUDA_HOST_DEVICE inline double regularized_gamma_p(double a, double x) {
  const double log_front = a * log(x) - x - lgamma(a);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 100000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (fabs(term) < fabs(sum) * 1e-17) break;
    }
    return sum * exp(log_front);
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int n = 1; n < 100000; ++n) {
    const double an = -n * (n - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (fabs(delta - 1) < 1e-16) break;
  }
  return 1 - exp(log_front) * h;
}

}  // namespace detail

// d x / d alpha for a draw x of Gamma(alpha, 1), holding the draw's quantile u = P(alpha, x)
// fixed (implicit reparameterisation, Figurnov et al. 2018): -(dP/dalpha) / (dP/dx), with
// dP/dx = x^(alpha-1) e^-x / Gamma(alpha). dP/dalpha is a central difference of P in alpha,
// extrapolated (Richardson: (4 D(h/2) - D(h)) / 3, error O(h^4)), with h a hundredth of the
// scale on which P changes in alpha (alpha below 1, sqrt(alpha) above): about 1e-8 relative,
// where P's rounding (1e-16) over the step adds 1e-13. From alpha = 1e7, where the series and
// the continued fraction would take tens of thousands of terms, the Wilson-Hilferty form
// x = alpha (1 - 1/(9 alpha) + z / (3 sqrt(alpha)))^3, exact to about 1e-8 relative there, is
// differentiated at fixed z instead. 0 where x is 0; NaN where alpha is not a finite positive
// number (no draw has it: ops::standard_gamma refuses it), as torch's _standard_gamma_grad, so
// that the gradient needs no check read back from the device.
RCUDA_HOST_DEVICE inline double gamma_sample_grad(double alpha, double x) {
  if (!(alpha > 0) || alpha == HUGE_VAL) return NAN;
  if (!(x > 0)) return 0;
  if (alpha >= 1e7) {
    const double root = cbrt(x / alpha);
    const double z = (root - 1 + 1 / (9 * alpha)) * 3 * sqrt(alpha);
    // d/dalpha of alpha * w^3 with w = 1 - 1/(9 alpha) + z / (3 sqrt(alpha)).
    const double dw = 1 / (9 * alpha * alpha) - z / (6 * alpha * sqrt(alpha));
    return root * root * root + 3 * alpha * root * root * dw;
  }
  const double h = 1e-2 * (alpha < 1 ? alpha : sqrt(alpha));
  auto central = [&](double step) {
    return (detail::regularized_gamma_p(alpha + step, x) -
            detail::regularized_gamma_p(alpha - step, x)) /
           (2 * step);
  };
  const double dp_dalpha = (4 * central(h / 2) - central(h)) / 3;
  const double log_density = (alpha - 1) * log(x) - x - lgamma(alpha);
  return -dp_dalpha / exp(log_density);
}

}  // namespace rcuda::backend
