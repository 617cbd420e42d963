// The scalar rules of fp8 scaling, shared by the CPU and CUDA backends so that both cast every
// element to the same bits and compute the same scales (Note [Float8 casts with amax] in
// rcuda/backend/backend.h; Note [Delayed scaling] in src/nn/fp8_linear.cpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "rcuda/core/float8.h"
#include "rcuda/core/macros.h"

namespace rcuda::backend {

// The largest finite value of each float8 format.
constexpr float kFloat8E4M3Max = 448.0f;
constexpr float kFloat8E5M2Max = 57344.0f;

template <typename F8>
RCUDA_HOST_DEVICE constexpr float float8_max() {
  return std::is_same_v<F8, Float8E4M3FN> ? kFloat8E4M3Max : kFloat8E5M2Max;
}

// v * scale clamped to the format's finite range, then rounded to nearest even. Saturating
// rather than overflowing to infinity (e5m2) keeps one outlier above a stale delayed scale from
// turning a whole product into inf or NaN, as Transformer Engine's casts do; NaN stays NaN (the
// comparisons are false for it).
template <typename F8>
RCUDA_HOST_DEVICE inline uint8_t saturating_float8_bits(float v, float scale) {
  constexpr float kMax = float8_max<F8>();
  float s = v * scale;
  s = s > kMax ? kMax : (s < -kMax ? -kMax : s);
  return F8(s).bits;
}

// max for amax: NaN wins, so that a NaN input reaches the scale update, which then keeps the
// old scale (a NaN scale would poison every later step).
RCUDA_HOST_DEVICE inline float nan_winning_max(float a, float b) {
  return (a > b || a != a) ? a : b;
}

// The scale that maps amax to the format's largest value, divided by 2^margin; the old scale
// where amax is zero (nothing seen yet), infinite or NaN. Float32 arithmetic, as Transformer
// Engine's default scaling function.
RCUDA_HOST_DEVICE inline float delayed_scale(float amax, float old_scale, float fp8_max,
                                             float margin_factor) {
  const bool usable = amax > 0.0f && amax <= 3.402823466e38f;  // false for NaN and inf
  return usable ? (fp8_max / amax) / margin_factor : old_scale;
}

}  // namespace rcuda::backend
