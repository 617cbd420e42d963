// IEEE binary16 (Half) and bfloat16 (BFloat16) storage types with bit-exact conversions.
//
// Everything here is integer bit manipulation so that the CPU backend and CUDA kernels
// produce identical bits regardless of FPU modes (FTZ, fast-math) or F16C availability.
#pragma once

#include <cstdint>
#include <cstring>

#include "rcuda/core/macros.h"

namespace rcuda {
namespace detail {

RCUDA_HOST_DEVICE inline uint32_t float_as_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

RCUDA_HOST_DEVICE inline float bits_as_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

}  // namespace detail

// float32 -> binary16 bits, round to nearest, ties to even.
RCUDA_HOST_DEVICE inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = detail::float_as_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;

  if (ax >= 0x7f800000u) {
    if (ax == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    // NaN: keep the top payload bits and force the quiet bit, so a payload that lives only
    // in the low 13 bits cannot turn into infinity.
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  // 65520 = 65504 + half an ulp; the tie goes to the even neighbour, which is infinity.
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);

  if (ax >= 0x38800000u) {  // |f| >= 2^-14: result is a normal half.
    // Adding 0xfff (just under half an ulp) plus the kept LSB rounds to nearest-even in the
    // integer domain: a carry out of the mantissa bumps the exponent, which is exactly the
    // correct result (mantissa becomes 0, exponent + 1) because the fields are adjacent.
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
    r -= (127u - 15u) << 23;  // rebias the exponent
    return static_cast<uint16_t>(sign | (r >> 13));
  }

  // Below half the smallest subnormal (2^-25), or exactly it (tie to even = 0): signed zero.
  if (ax <= 0x33000000u) return sign;

  // Subnormal half: value = m * 2^(e - 150) and the half ulp is 2^-24, so the result is
  // m >> (126 - e) rounded. shift is in [14, 24]. The same nearest-even trick applies; a
  // carry out of the largest subnormal gives 0x400, which is the smallest normal's encoding.
  const uint32_t e = ax >> 23;
  const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;
  const uint32_t q = (m + ((1u << (shift - 1)) - 1u) + ((m >> shift) & 1u)) >> shift;
  return static_cast<uint16_t>(sign | q);
}

// binary16 bits -> float32. Exact: every half is representable as a float.
RCUDA_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  uint32_t bits;
  if (e == 0x1fu) {
    bits = sign | 0x7f800000u | (m << 13);  // inf, or NaN with its payload kept
  } else if (e != 0) {
    bits = sign | ((e + (127u - 15u)) << 23) | (m << 13);
  } else if (m == 0) {
    bits = sign;
  } else {
    // Subnormal half (m * 2^-24) is a normal float: shift the leading 1 into the implicit
    // bit position, lowering the exponent once per shift. At most 10 iterations.
    e = 127u - 14u;
    while ((m & 0x400u) == 0) {
      m <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((m & 0x3ffu) << 13);
  }
  return detail::bits_as_float(bits);
}

// float32 -> bfloat16 bits (the top 16 bits of a float), round to nearest, ties to even.
RCUDA_HOST_DEVICE inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = detail::float_as_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncate and set the quiet bit; rounding could carry a payload into inf (or flip
    // the sign of an all-ones NaN).
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  }
  // Same nearest-even trick as for half; a carry past the largest finite value produces the
  // infinity encoding, and the sign bit is never reached (max finite + 0x8000 < 2^31).
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// bfloat16 bits -> float32. Exact: bfloat16 is a truncated float.
RCUDA_HOST_DEVICE inline float bfloat16_bits_to_float(uint16_t b) {
  return detail::bits_as_float(static_cast<uint32_t>(b) << 16);
}

// Storage-only types: convert to float to compute. Trivially copyable, 2 bytes, so they can
// live in tensor buffers and be memcpy'd to and from the device.
struct Half {
  uint16_t bits;

  Half() = default;
  RCUDA_HOST_DEVICE explicit Half(float f) : bits(float_to_half_bits(f)) {}
  RCUDA_HOST_DEVICE operator float() const { return half_bits_to_float(bits); }

  RCUDA_HOST_DEVICE static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits;

  BFloat16() = default;
  RCUDA_HOST_DEVICE explicit BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  RCUDA_HOST_DEVICE operator float() const { return bfloat16_bits_to_float(bits); }

  RCUDA_HOST_DEVICE static BFloat16 from_bits(uint16_t b) {
    BFloat16 v;
    v.bits = b;
    return v;
  }
};

}  // namespace rcuda
