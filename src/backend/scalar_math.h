// Scalar arithmetic that the CPU and CUDA backends share, so both give the same answers:
// integer powers (wrapping, with torch's rule for negative exponents) and Python-style
// integer and floating remainders; a number converted to an element type.
#pragma once

#include <cmath>
#include <type_traits>

#include "backend/dispatch.h"
#include "rcuda/core/macros.h"
#include "rcuda/core/scalar.h"

namespace rcuda::backend {

// A number as a T, as fill() and a number operand convert it on either backend (host only).
template <typename T>
T scalar_as(const Scalar& value) {
  if constexpr (std::is_same_v<T, bool>)
    return value.to_bool();
  else if constexpr (std::is_integral_v<T>)
    return value.is_floating() ? convert<T>(value.to_double()) : static_cast<T>(value.to_int());
  else
    return convert<T>(value.to_double());
}

// The exponent may be wider than T: a scalar exponent stays int64, since 200 is no int8.
template <typename T, typename E = T>
RCUDA_HOST_DEVICE inline T integer_pow(T base, E exponent) {
  if constexpr (std::is_signed_v<T>) {
    // As torch with a tensor exponent: 1/base^n truncates to 0 except for bases 1 and -1. (A
    // negative *scalar* exponent is refused by the op, as torch does.)
    if (exponent < 0) {
      if (base == 1) return T(1);
      if (base == -1) return (exponent & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  T result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = wrapping_mul(result, base);
    base = wrapping_mul(base, base);
    exponent >>= 1;
  }
  return result;
}

// Integer remainder with the divisor's sign, for b != 0: each backend decides what a zero
// divisor means (the CPU throws; a GPU kernel cannot, and gives 0).
template <typename T>
RCUDA_HOST_DEVICE inline T integer_remainder_nonzero(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;  // avoids INT_MIN % -1, which traps
    T mod = a % b;
    if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
    return mod;
  } else {
    return a % b;
  }
}

// The divisor's sign, as Python and torch: fmod, then shifted by b when the signs differ.
template <typename C>
RCUDA_HOST_DEVICE inline C float_remainder(C a, C b) {
  using std::fmod;
  C mod = fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
  return mod;
}

}  // namespace rcuda::backend
