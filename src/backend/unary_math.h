// The scalar formulas of every UnaryOp and of its derivative, written once for the CPU and CUDA
// backends (host and device alike), so that the two cannot drift apart.
//
// Note [Unary formulas]
// - unary_float: the op on a floating compute type (float for the half types, Note [Compute
//   types]); unary_integral: the op on an integral or bool type, for the ops defined there
//   (unary_defined_for_integers). NaN propagates through relu, clamp and the activations, as
//   torch.
// - unary_grad_float: grad_out * f'(x), reading the forward input x or the forward output,
//   whichever torch's formula reads (rcuda::ops::unary_grad_saves names which; the other
//   argument is not read). Piecewise functions take torch's side at the kinks: relu and the
//   rounding ops give 0, clamp passes the gradient where min <= x <= max, hardtanh only
//   strictly inside (min, max).
// - The math functions are std:: ones on the host and CUDA's float or double ones on the
//   device (math:: below), as each backend called before they shared this file.
#pragma once

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "backend/dispatch.h"
#include "backend/scalar_math.h"
#include "rcuda/backend/backend.h"
#include "rcuda/core/macros.h"

namespace rcuda::backend {
namespace math {

#if defined(__CUDA_ARCH__)
#define RCUDA_UNARY_MATH(name)                                   \
  __device__ inline float name(float x) { return ::name##f(x); } \
  __device__ inline double name(double x) { return ::name(x); }
#else
#define RCUDA_UNARY_MATH(name)                        \
  inline float name(float x) { return std::name(x); } \
  inline double name(double x) { return std::name(x); }
#endif
RCUDA_UNARY_MATH(exp)
RCUDA_UNARY_MATH(expm1)
RCUDA_UNARY_MATH(log)
RCUDA_UNARY_MATH(log1p)
RCUDA_UNARY_MATH(sqrt)
RCUDA_UNARY_MATH(sin)
RCUDA_UNARY_MATH(cos)
RCUDA_UNARY_MATH(tanh)
RCUDA_UNARY_MATH(erf)
RCUDA_UNARY_MATH(floor)
RCUDA_UNARY_MATH(ceil)
RCUDA_UNARY_MATH(nearbyint)  // the default rounding mode: half to even
RCUDA_UNARY_MATH(fabs)
RCUDA_UNARY_MATH(tan)
RCUDA_UNARY_MATH(asin)
RCUDA_UNARY_MATH(acos)
RCUDA_UNARY_MATH(atan)
RCUDA_UNARY_MATH(sinh)
RCUDA_UNARY_MATH(cosh)
RCUDA_UNARY_MATH(asinh)
RCUDA_UNARY_MATH(acosh)
RCUDA_UNARY_MATH(atanh)
RCUDA_UNARY_MATH(trunc)
RCUDA_UNARY_MATH(erfc)
RCUDA_UNARY_MATH(lgamma)
RCUDA_UNARY_MATH(log2)
RCUDA_UNARY_MATH(log10)
RCUDA_UNARY_MATH(exp2)
#undef RCUDA_UNARY_MATH

#if defined(__CUDA_ARCH__)
__device__ inline float pow(float x, float y) { return ::powf(x, y); }
__device__ inline double pow(double x, double y) { return ::pow(x, y); }
#else
inline float pow(float x, float y) { return std::pow(x, y); }
inline double pow(double x, double y) { return std::pow(x, y); }
#endif

}  // namespace math

// The special functions C++ lacks, as torch computes them (aten/src/ATen/native/Math.h), in the
// compute type C: digamma and trigamma by recurrence to x >= 10 (trigamma: 6 steps) and an
// asymptotic series, with the reflection formula below 0; erfinv by a rational first guess and
// two Newton steps on the host, CUDA's erfinv on the device.
constexpr double kPi = 3.14159265358979323846;

template <typename C>
RCUDA_HOST_DEVICE inline C digamma(C x) {
  if (x == C(0)) return (C(1) / x < C(0)) ? C(INFINITY) : -C(INFINITY);  // -0 gives +inf
  C result = C(0);
  if (x < C(0)) {
    if (x == math::trunc(x)) return C(NAN);  // the poles
    // tan(pi r) of the fractional part r is more accurate than tan(pi x).
    const C r = x - math::trunc(x);
    result = -C(kPi) / math::tan(C(kPi) * r);
    x = C(1) - x;
  }
  while (x < C(10)) {
    result -= C(1) / x;
    x += C(1);
  }
  if (x == C(10)) return result + C(2.25175258906672110764);
  C y = C(0);
  if (x < C(1.0e17)) {
    const C z = C(1) / (x * x);
    const C a[] = {C(8.33333333333333333333E-2), C(-2.10927960927960927961E-2),
                   C(7.57575757575757575758E-3), C(-4.16666666666666666667E-3),
                   C(3.96825396825396825397E-3), C(-8.33333333333333333333E-3),
                   C(8.33333333333333333333E-2)};
    C p = a[0];
    for (int i = 1; i < 7; ++i) p = p * z + a[i];
    y = z * p;
  }
  return result + math::log(x) - C(0.5) / x - y;
}

template <typename C>
RCUDA_HOST_DEVICE inline C trigamma(C x) {
  C sign = C(1), result = C(0);
  if (x < C(0.5)) {
    sign = C(-1);
    const C s = math::sin(C(kPi) * x);
    result -= C(kPi * kPi) / (s * s);
    x = C(1) - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += C(1) / (x * x);
    x += C(1);
  }
  const C ixx = C(1) / (x * x);
  result += (C(1) + C(1) / (C(2) * x) +
             ixx * (C(1) / C(6) - ixx * (C(1) / C(30) - ixx * (C(1) / C(42))))) /
            x;
  return sign * result;
}

template <typename C>
RCUDA_HOST_DEVICE inline C erfinv(C y) {
#if defined(__CUDA_ARCH__)
  return ::erfinv(y);
#else
  const C y_abs = std::fabs(y);
  if (y_abs > C(1) || y != y) return C(NAN);
  if (y_abs == C(1)) return std::copysign(C(INFINITY), y);
  C x;
  if (y_abs <= C(0.7)) {
    const C z = y * y;
    const C num =
        ((C(-0.140543331) * z + C(0.914624893)) * z + C(-1.645349621)) * z + C(0.886226899);
    const C dem =
        (((C(0.012229801) * z + C(-0.329097515)) * z + C(1.442710462)) * z + C(-2.118377725)) * z +
        C(1);
    x = y * num / dem;
  } else {
    const C z = std::sqrt(-std::log((C(1) - y_abs) / C(2)));
    const C num =
        ((C(1.641345311) * z + C(3.429567803)) * z + C(-1.624906493)) * z + C(-1.970840454);
    const C dem = (C(1.637067800) * z + C(3.543889200)) * z + C(1);
    x = std::copysign(num, y) / dem;
  }
  const C two_over_sqrt_pi = C(1.12837916709551257390);
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
#endif
}

#if defined(__CUDA_ARCH__)
__device__ inline float erfinv(float y) { return ::erfinvf(y); }
#endif

// LogicalNot is the last UnaryOp: tables indexed by the op have this many entries.
constexpr size_t kUnaryOpCount = static_cast<size_t>(UnaryOp::LogicalNot) + 1;

constexpr double kSqrtHalf = 0.70710678118654752440;      // 1 / sqrt(2)
constexpr double kSqrtTwoOverPi = 0.7978845608028654;     // sqrt(2 / pi)
constexpr double kInvSqrtTwoPi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kGeluTanhCubic = 0.044715;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // erf's derivative at 0

// Whether op has an integral (and bool) version; the others are floating only (ops convert
// integral input to float32 first, Note [Type promotion]).
constexpr bool unary_defined_for_integers(UnaryOp op, bool is_bool) {
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sign:
    case UnaryOp::Relu:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Clamp:
    case UnaryOp::Hardtanh:
    case UnaryOp::Trunc:
    case UnaryOp::LogicalNot:
      return true;
    case UnaryOp::PowScalar:
      return !is_bool;
    default:
      return false;
  }
}

template <typename C>
RCUDA_HOST_DEVICE inline C sigmoid(C x) {
  return C(1) / (C(1) + math::exp(-x));
}

// Always inlined on the host: the CPU loops pass `op` as a constant, and the switch folds into
// the one formula, which then vectorises (Note in src/backend/cpu/elementwise.cpp).
template <typename C>
RCUDA_HOST_DEVICE RCUDA_ALWAYS_INLINE C unary_float(UnaryOp op, C x, const UnaryArgs& a) {
  switch (op) {
    case UnaryOp::Neg:
      return -x;
    case UnaryOp::Abs:
      return math::fabs(x);
    case UnaryOp::Sign:
      return static_cast<C>((C(0) < x) - (x < C(0)));
    case UnaryOp::Exp:
      return math::exp(x);
    case UnaryOp::Expm1:
      return math::expm1(x);
    case UnaryOp::Log:
      return math::log(x);
    case UnaryOp::Log1p:
      return math::log1p(x);
    case UnaryOp::Sqrt:
      return math::sqrt(x);
    case UnaryOp::Rsqrt:
      return C(1) / math::sqrt(x);
    case UnaryOp::Sin:
      return math::sin(x);
    case UnaryOp::Cos:
      return math::cos(x);
    case UnaryOp::Tanh:
      return math::tanh(x);
    case UnaryOp::Sigmoid:
      return sigmoid(x);
    case UnaryOp::Relu:
      return (x != x || x > C(0)) ? x : C(0);  // `x != x`: NaN propagates
    case UnaryOp::Gelu:
      return C(0.5) * x * (C(1) + math::erf(x * C(kSqrtHalf)));
    case UnaryOp::GeluTanh:
      return C(0.5) * x *
             (C(1) + math::tanh(C(kSqrtTwoOverPi) * (x + C(kGeluTanhCubic) * x * x * x)));
    case UnaryOp::Silu:
      return x / (C(1) + math::exp(-x));
    case UnaryOp::Floor:
      return math::floor(x);
    case UnaryOp::Ceil:
      return math::ceil(x);
    case UnaryOp::Round:
      return math::nearbyint(x);
    case UnaryOp::PowScalar:
      return math::pow(x, static_cast<C>(a.exponent));
    case UnaryOp::Clamp: {
      const C lo = static_cast<C>(a.min), hi = static_cast<C>(a.max);
      if (a.has_min && (lo != lo || x < lo)) x = lo;  // a NaN bound makes every result NaN
      if (a.has_max && (hi != hi || x > hi)) x = hi;
      return x;
    }
    case UnaryOp::LeakyRelu:
      return x > C(0) ? x : x * static_cast<C>(a.negative_slope);
    case UnaryOp::Elu:
      return x > C(0) ? x : static_cast<C>(a.alpha) * math::expm1(x);
    case UnaryOp::Softplus: {
      // As torch: linear above the threshold, where log1p(exp) would overflow.
      const C beta = static_cast<C>(a.beta), bx = x * beta;
      return bx > static_cast<C>(a.threshold) ? x : math::log1p(math::exp(bx)) / beta;
    }
    case UnaryOp::Hardtanh: {
      const C lo = static_cast<C>(a.min), hi = static_cast<C>(a.max);
      return x < lo ? lo : (x > hi ? hi : x);
    }
    case UnaryOp::Tan:
      return math::tan(x);
    case UnaryOp::Asin:
      return math::asin(x);
    case UnaryOp::Acos:
      return math::acos(x);
    case UnaryOp::Atan:
      return math::atan(x);
    case UnaryOp::Sinh:
      return math::sinh(x);
    case UnaryOp::Cosh:
      return math::cosh(x);
    case UnaryOp::Asinh:
      return math::asinh(x);
    case UnaryOp::Acosh:
      return math::acosh(x);
    case UnaryOp::Atanh:
      return math::atanh(x);
    case UnaryOp::Trunc:
      return math::trunc(x);
    case UnaryOp::Erf:
      return math::erf(x);
    case UnaryOp::Erfc:
      return math::erfc(x);
    case UnaryOp::Erfinv:
      return erfinv(x);
    case UnaryOp::Lgamma:
      return math::lgamma(x);
    case UnaryOp::Digamma:
      return digamma(x);
    case UnaryOp::Log2:
      return math::log2(x);
    case UnaryOp::Log10:
      return math::log10(x);
    case UnaryOp::Exp2:
      return math::exp2(x);
    case UnaryOp::Reciprocal:
      return C(1) / x;
    case UnaryOp::LogicalNot:
      return static_cast<C>(x == C(0));
  }
  return x;
}

// Integral and bool types, for the ops unary_defined_for_integers admits; wrapping arithmetic.
template <typename C>
RCUDA_HOST_DEVICE inline C unary_integral(UnaryOp op, C x, const UnaryArgs& a) {
  switch (op) {
    case UnaryOp::Neg:
      return wrapping_sub(C(0), x);
    case UnaryOp::Abs:
      if constexpr (std::is_signed_v<C>)
        return x < 0 ? wrapping_sub(C(0), x) : x;
      else
        return x;
    case UnaryOp::Sign:
      if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>)
        return static_cast<C>(x != 0);
      else
        return static_cast<C>((C(0) < x) - (x < C(0)));
    case UnaryOp::Relu:
      return x > C(0) ? x : C(0);
    case UnaryOp::Clamp:
    case UnaryOp::Hardtanh:  // bounds truncated to the integer type, as torch
      if ((op == UnaryOp::Hardtanh || a.has_min) && x < static_cast<C>(a.min))
        x = static_cast<C>(a.min);
      if ((op == UnaryOp::Hardtanh || a.has_max) && x > static_cast<C>(a.max))
        x = static_cast<C>(a.max);
      return x;
    case UnaryOp::PowScalar:
      if constexpr (std::is_same_v<C, bool>)
        return x;
      else
        return integer_pow<C, int64_t>(x, static_cast<int64_t>(a.exponent));
    case UnaryOp::LogicalNot:
      return static_cast<C>(x == C(0));
    default:
      return x;  // floor, ceil, round: the identity on integers
  }
}

// grad_out * f'(x) (Note [Unary formulas]); x is the forward input, out the forward output.
template <typename C>
RCUDA_HOST_DEVICE inline C unary_grad_float(UnaryOp op, C g, C x, C out, const UnaryArgs& a) {
  switch (op) {
    case UnaryOp::Neg:
      return -g;
    case UnaryOp::Abs:
      return g * static_cast<C>((C(0) < x) - (x < C(0)));
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
    case UnaryOp::LogicalNot:
      return C(0);
    case UnaryOp::Exp:
      return g * out;
    case UnaryOp::Expm1:
      return g * (out + C(1));
    case UnaryOp::Log:
      return g / x;
    case UnaryOp::Log1p:
      return g / (x + C(1));
    case UnaryOp::Sqrt:
      return g / (C(2) * out);
    case UnaryOp::Rsqrt:
      return C(-0.5) * g * out * out * out;
    case UnaryOp::Sin:
      return g * math::cos(x);
    case UnaryOp::Cos:
      return -g * math::sin(x);
    case UnaryOp::Tanh:
      return g * (C(1) - out * out);
    case UnaryOp::Sigmoid:
      return g * (C(1) - out) * out;
    case UnaryOp::Relu:
      return out <= C(0) ? C(0) : g;  // torch's threshold_backward on the result
    case UnaryOp::Gelu: {
      const C cdf = C(0.5) * (C(1) + math::erf(x * C(kSqrtHalf)));
      const C pdf = C(kInvSqrtTwoPi) * math::exp(C(-0.5) * x * x);
      return g * (cdf + x * pdf);
    }
    case UnaryOp::GeluTanh: {
      const C x_sq = x * x;
      const C inner = C(kSqrtTwoOverPi) * (x + C(kGeluTanhCubic) * x_sq * x);
      const C t = math::tanh(inner);
      const C left = C(0.5) * x, right = C(1) + t;
      const C right_derivative =
          left * (C(1) - t * t) * C(kSqrtTwoOverPi) * (C(1) + C(3 * kGeluTanhCubic) * x_sq);
      return g * (C(0.5) * right + right_derivative);
    }
    case UnaryOp::Silu: {
      const C s = sigmoid(x);
      return g * s * (C(1) + x * (C(1) - s));
    }
    case UnaryOp::PowScalar: {
      const C e = static_cast<C>(a.exponent);
      return e == C(0) ? C(0) : g * e * math::pow(x, e - C(1));
    }
    case UnaryOp::Clamp: {
      const bool inside =
          (!a.has_min || x >= static_cast<C>(a.min)) && (!a.has_max || x <= static_cast<C>(a.max));
      return inside ? g : C(0);
    }
    case UnaryOp::LeakyRelu:
      return x > C(0) ? g : g * static_cast<C>(a.negative_slope);
    case UnaryOp::Elu:
      return x <= C(0) ? g * static_cast<C>(a.alpha) * math::exp(x) : g;
    case UnaryOp::Softplus: {
      const C bx = x * static_cast<C>(a.beta);
      const C z = math::exp(bx);
      return bx > static_cast<C>(a.threshold) ? g : g * z / (z + C(1));
    }
    case UnaryOp::Hardtanh:
      return (x <= static_cast<C>(a.min) || x >= static_cast<C>(a.max)) ? C(0) : g;
    case UnaryOp::Tan:
      return g * (C(1) + out * out);
    case UnaryOp::Asin:
      return g / math::sqrt(C(1) - x * x);
    case UnaryOp::Acos:
      return -g / math::sqrt(C(1) - x * x);
    case UnaryOp::Atan:
      return g / (C(1) + x * x);
    case UnaryOp::Sinh:
      return g * math::cosh(x);
    case UnaryOp::Cosh:
      return g * math::sinh(x);
    case UnaryOp::Asinh:
      return g / math::sqrt(x * x + C(1));
    case UnaryOp::Acosh:
      return g / math::sqrt(x * x - C(1));
    case UnaryOp::Atanh:
      return g / (C(1) - x * x);
    case UnaryOp::Erf:
      return g * C(kTwoOverSqrtPi) * math::exp(-x * x);
    case UnaryOp::Erfc:
      return -g * C(kTwoOverSqrtPi) * math::exp(-x * x);
    case UnaryOp::Erfinv:  // sqrt(pi) / 2 * exp(erfinv(x)^2)
      return g * C(0.88622692545275801365) * math::exp(out * out);
    case UnaryOp::Lgamma:
      return g * digamma(x);
    case UnaryOp::Digamma:
      return g * trigamma(x);
    case UnaryOp::Log2:
      return g / (x * C(0.69314718055994530942));
    case UnaryOp::Log10:
      return g / (x * C(2.30258509299404568402));
    case UnaryOp::Exp2:
      return g * out * C(0.69314718055994530942);
    case UnaryOp::Reciprocal:
      return -g * out * out;
  }
  return g;
}

}  // namespace rcuda::backend
