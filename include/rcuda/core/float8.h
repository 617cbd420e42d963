// 8-bit floats for scaled matrix products on Hopper, as torch.float8_e4m3fn and float8_e5m2
// (the OCP FP8 formats): conversion to and from float32, round to nearest even.
//   e4m3fn: 4 exponent bits (bias 7), 3 mantissa bits, no infinities, one NaN pattern per sign
//           (S.1111.111); largest finite 448. Like torch's conversion, values past 448 and
//           infinities saturate to ±448 (the formats are used with scales, where a clipped
//           outlier does less harm than a NaN that poisons a whole product).
//   e5m2:   5 exponent bits (bias 15), 2 mantissa bits, IEEE-like with infinities; largest
//           finite 57344; larger values round to infinity.
#pragma once

#include <cstdint>

#include "rcuda/core/half.h"
#include "rcuda/core/macros.h"

namespace rcuda {

// e5m2 is the top byte of an IEEE binary16: round float -> half -> e5m2 would round twice, so
// round from the float's bits directly.
RCUDA_HOST_DEVICE inline uint8_t float_to_float8_e5m2_bits(float f) {
  const uint32_t x = detail::float_as_bits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7Fu);  // NaN
  // Work in units of 2^-16 (the smallest e5m2 subnormal is 2^-16): below 2^-14 the value is
  // subnormal and rounds on that fixed grid; above, the float's own exponent is kept.
  const int exponent = static_cast<int>(abs >> 23) - 127;
  if (exponent < -14) {
    const float scaled = detail::bits_as_float(abs) * 65536.0f;  // exact: a power-of-two scaling
    // Round half to even on the integer grid: 2^23 trick keeps it branch-free and exact.
    const float rounded = (scaled + 8388608.0f) - 8388608.0f;
    return static_cast<uint8_t>(sign | static_cast<uint32_t>(rounded));  // 4 -> 2^-14 (normal)
  }
  // Normal: keep 2 mantissa bits, round to nearest even on the dropped 21 bits.
  uint32_t m = abs + 0x000FFFFFu + ((abs >> 21) & 1u);
  m >>= 21;  // now (exponent + 127) << 2 | mantissa, with carry into the exponent
  const int e5 = static_cast<int>(m >> 2) - 127 + 15;
  if (e5 >= 31) return static_cast<uint8_t>(sign | 0x7Cu);  // infinity
  return static_cast<uint8_t>(sign | (static_cast<uint32_t>(e5) << 2) | (m & 3u));
}

RCUDA_HOST_DEVICE inline float float8_e5m2_bits_to_float(uint8_t b) {
  return half_bits_to_float(static_cast<uint16_t>(b) << 8);  // exact: e5m2 is half's top byte
}

RCUDA_HOST_DEVICE inline uint8_t float_to_float8_e4m3fn_bits(float f) {
  const uint32_t x = detail::float_as_bits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7Fu);   // NaN
  if (abs == 0x7F800000u) return static_cast<uint8_t>(sign | 0x7Eu);  // inf saturates
  const int exponent = static_cast<int>(abs >> 23) - 127;
  if (exponent < -6) {
    // Subnormal grid of 2^-9.
    const float scaled = detail::bits_as_float(abs) * 512.0f;
    const float rounded = (scaled + 8388608.0f) - 8388608.0f;
    return static_cast<uint8_t>(sign | static_cast<uint32_t>(rounded));  // 8 -> 2^-6 (normal)
  }
  uint32_t m = abs + 0x0007FFFFu + ((abs >> 20) & 1u);
  m >>= 20;
  const int e4 = static_cast<int>(m >> 3) - 127 + 7;
  const uint32_t mantissa = m & 7u;
  // 448 = 1.75 * 2^8 is the largest finite (S.1111.110); S.1111.111 is NaN.
  if (e4 > 15 || (e4 == 15 && mantissa == 7u)) return static_cast<uint8_t>(sign | 0x7Eu);
  return static_cast<uint8_t>(sign | (static_cast<uint32_t>(e4) << 3) | mantissa);
}

RCUDA_HOST_DEVICE inline float float8_e4m3fn_bits_to_float(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t e = (b >> 3) & 0xFu, m = b & 7u;
  if (e == 15 && m == 7) return detail::bits_as_float(sign | 0x7FC00000u);
  if (e == 0) {  // subnormal: m * 2^-9
    const float v = static_cast<float>(m) * (1.0f / 512.0f);
    return detail::bits_as_float(detail::float_as_bits(v) | sign);
  }
  return detail::bits_as_float(sign | ((e - 7 + 127) << 23) | (m << 20));
}

struct Float8E4M3FN {
  uint8_t bits;
  Float8E4M3FN() = default;
  RCUDA_HOST_DEVICE explicit Float8E4M3FN(float f) : bits(float_to_float8_e4m3fn_bits(f)) {}
  RCUDA_HOST_DEVICE operator float() const { return float8_e4m3fn_bits_to_float(bits); }
};

struct Float8E5M2 {
  uint8_t bits;
  Float8E5M2() = default;
  RCUDA_HOST_DEVICE explicit Float8E5M2(float f) : bits(float_to_float8_e5m2_bits(f)) {}
  RCUDA_HOST_DEVICE operator float() const { return float8_e5m2_bits_to_float(bits); }
};

}  // namespace rcuda
