// Tests for rcuda/core/half.h against independent references:
//  - binary16: GCC's _Float16 (x86-64), whose conversions are done by the compiler/libgcc.
//  - bfloat16: a double-precision nearest-even reference written here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "rcuda/core/half.h"

namespace {

using rcuda::BFloat16;
using rcuda::Half;

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

bool half_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// ---------------------------------------------------------------------------------------------
// binary16 reference: _Float16.

float ref_half_to_float(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, sizeof(v));
  return static_cast<float>(v);
}

uint16_t ref_float_to_half(float f) {
  const _Float16 v = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &v, sizeof(h));
  return h;
}

// Returns true on match; NaN inputs must produce a NaN, otherwise bits must be identical.
::testing::AssertionResult HalfMatchesRef(float f) {
  const uint16_t got = rcuda::float_to_half_bits(f);
  const uint16_t want = ref_float_to_half(f);
  if (std::isnan(f) ? half_is_nan(got) && half_is_nan(want) : got == want) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << std::hex << "float bits 0x" << bits_of(f) << ": got 0x" << got << ", want 0x" << want;
}

TEST(HalfTest, AllHalfToFloatMatchReference) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float got = rcuda::half_bits_to_float(h);
    const float want = ref_half_to_float(h);
    if (half_is_nan(h)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << "half 0x" << i;
      ASSERT_TRUE(std::isnan(want));
    } else {
      ASSERT_EQ(bits_of(got), bits_of(want)) << std::hex << "half 0x" << i;
    }
  }
}

TEST(HalfTest, FloatToHalfStrideMatchesReference) {
  // 4099 is odd and prime, so the stride visits all exponents and varied mantissa bits.
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    ASSERT_TRUE(HalfMatchesRef(float_of(static_cast<uint32_t>(u))));
  }
}

TEST(HalfTest, FloatToHalfRoundingBoundariesMatchReference) {
  // For every finite half, the exact midpoint to its upper neighbour (representable in float:
  // 12 significant bits) and one float ulp either side of it. Above 65504 the "neighbour" is
  // 2^16, so the midpoint is the overflow threshold 65520.
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const double lo = ref_half_to_float(static_cast<uint16_t>(h));
    const double hi =
        (h + 1 == 0x7c00u) ? 65536.0 : ref_half_to_float(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const float cases[] = {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)};
    for (float c : cases) {
      ASSERT_TRUE(HalfMatchesRef(c));
      ASSERT_TRUE(HalfMatchesRef(-c));
    }
  }
}

TEST(HalfTest, FloatToHalfExplicitCases) {
  using rcuda::float_to_half_bits;
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even
  EXPECT_EQ(float_to_half_bits(2.0f - std::ldexp(1.0f, -11)), 0x4000);      // carry into exp
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);                          // max finite
  EXPECT_EQ(float_to_half_bits(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // tie with odd max -> inf
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (zero)
  EXPECT_EQ(float_to_half_bits(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half_bits(3 * std::ldexp(1.0f, -26)), 0x0001);  // 0.75 ulp -> 1
  EXPECT_EQ(float_to_half_bits(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 ulp tie -> even 2
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half_bits(1023 * std::ldexp(1.0f, -24)), 0x03ff);  // largest subnormal
  // Midpoint between the largest subnormal and the smallest normal: tie -> even (0x400).
  EXPECT_EQ(float_to_half_bits(1023.5f * std::ldexp(1.0f, -24)), 0x0400);
  EXPECT_EQ(float_to_half_bits(std::nextafter(std::ldexp(1.0f, -14), 0.0f)), 0x0400);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xfc00);

  const uint16_t qnan = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(half_is_nan(qnan));
  EXPECT_TRUE(qnan & 0x0200u);  // quiet
  // Signalling NaN whose payload sits only in the bits that get dropped: must stay NaN.
  const uint16_t snan = float_to_half_bits(float_of(0x7f800001u));
  EXPECT_TRUE(half_is_nan(snan));
  EXPECT_TRUE(snan & 0x0200u);
  const uint16_t neg_nan = float_to_half_bits(float_of(0xffc00000u));
  EXPECT_TRUE(half_is_nan(neg_nan));
  EXPECT_TRUE(neg_nan & 0x8000u);  // sign kept
}

// ---------------------------------------------------------------------------------------------
// bfloat16 reference: pick the nearer of the two truncation candidates in double precision.

double bf16_magnitude(uint32_t bf) {  // bf: non-negative bfloat16 bits, may be the inf encoding
  if (bf == 0x7f80u) return std::ldexp(1.0, 128);  // value the next exponent step would have
  return static_cast<double>(float_of(bf << 16));
}

uint16_t ref_float_to_bf16(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t down = (x & 0x7fffffffu) >> 16;  // truncation toward zero
  const uint32_t up = down + 1;                   // next magnitude (may be inf)
  const double d = std::fabs(static_cast<double>(f));
  const double dist_down = d - bf16_magnitude(down);
  const double dist_up = bf16_magnitude(up) - d;
  uint32_t pick;
  if (dist_down < dist_up) {
    pick = down;
  } else if (dist_up < dist_down) {
    pick = up;
  } else {
    pick = (down & 1u) == 0 ? down : up;
  }
  return static_cast<uint16_t>(sign | pick);
}

::testing::AssertionResult BFloat16MatchesRef(float f) {
  const uint16_t got = rcuda::float_to_bfloat16_bits(f);
  bool ok;
  uint16_t want = 0;
  if (std::isnan(f)) {
    ok = bf16_is_nan(got) && ((got & 0x8000u) == ((bits_of(f) >> 16) & 0x8000u));
  } else if (std::isinf(f)) {
    want = static_cast<uint16_t>(bits_of(f) >> 16);
    ok = got == want;
  } else {
    want = ref_float_to_bf16(f);
    ok = got == want;
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << std::hex << "float bits 0x" << bits_of(f) << ": got 0x" << got << ", want 0x" << want;
}

TEST(BFloat16Test, StrideMatchesReference) {
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    ASSERT_TRUE(BFloat16MatchesRef(float_of(static_cast<uint32_t>(u))));
  }
}

TEST(BFloat16Test, MidpointsMatchReference) {
  // For every bfloat16 pattern, the exact midpoint to its upper neighbour and one float ulp
  // either side (covers ties, carries into the next exponent and overflow into inf).
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint32_t mid = (b << 16) | 0x8000u;
    const uint32_t cases[] = {mid - 1, mid, mid + 1};
    for (uint32_t c : cases) ASSERT_TRUE(BFloat16MatchesRef(float_of(c)));
  }
}

TEST(BFloat16Test, AllBFloat16ToFloatExact) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = rcuda::bfloat16_bits_to_float(static_cast<uint16_t>(b));
    ASSERT_EQ(bits_of(f), b << 16);
  }
}

TEST(BFloat16Test, ExplicitCases) {
  using rcuda::float_to_bfloat16_bits;
  EXPECT_EQ(float_to_bfloat16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_bfloat16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3f808000u)), 0x3f80);  // tie -> even (down)
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3fffffffu)), 0x4000);  // into next exponent
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x3fff8000u)), 0x4000);  // tie, odd -> next exp
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7f7f0000u)), 0x7f7f);  // max bfloat16
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::max()), 0x7f80);  // -> inf
  EXPECT_EQ(float_to_bfloat16_bits(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bfloat16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x00008000u)), 0x0000);  // subnormal tie -> 0
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x00018000u)), 0x0002);
  EXPECT_EQ(float_to_bfloat16_bits(float_of(0x007fffffu)), 0x0080);  // subnormal -> normal

  const uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0xffffffffu, 0xff800001u};
  for (uint32_t n : nans) {
    const uint16_t b = float_to_bfloat16_bits(float_of(n));
    EXPECT_TRUE(bf16_is_nan(b)) << std::hex << n;
    EXPECT_TRUE(b & 0x40u) << std::hex << n;  // quiet
    EXPECT_EQ(b & 0x8000u, (n >> 16) & 0x8000u) << std::hex << n;
  }
}

// ---------------------------------------------------------------------------------------------
// Structs.

static_assert(sizeof(Half) == 2, "Half must be 2 bytes");
static_assert(sizeof(BFloat16) == 2, "BFloat16 must be 2 bytes");
static_assert(std::is_trivially_copyable<Half>::value, "Half must be trivially copyable");
static_assert(std::is_trivially_copyable<BFloat16>::value, "BFloat16 must be trivially copyable");
static_assert(std::is_standard_layout<Half>::value, "Half must be standard layout");
static_assert(std::is_standard_layout<BFloat16>::value, "BFloat16 must be standard layout");

TEST(HalfStructTest, RoundTrip) {
  EXPECT_EQ(static_cast<float>(Half(1.5f)), 1.5f);
  EXPECT_EQ(static_cast<float>(Half(-65504.0f)), -65504.0f);
  EXPECT_EQ(Half(0.1f).bits, rcuda::float_to_half_bits(0.1f));
  EXPECT_EQ(Half::from_bits(0x3c00).bits, 0x3c00);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x3c00)), 1.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    if (half_is_nan(b)) continue;
    ASSERT_EQ(Half(static_cast<float>(Half::from_bits(b))).bits, b) << std::hex << i;
  }
}

TEST(BFloat16StructTest, RoundTrip) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.5f)), 1.5f);
  EXPECT_EQ(static_cast<float>(BFloat16(-256.0f)), -256.0f);
  EXPECT_EQ(BFloat16(0.1f).bits, rcuda::float_to_bfloat16_bits(0.1f));
  EXPECT_EQ(BFloat16::from_bits(0x3f80).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(BFloat16::from_bits(0x3f80)), 1.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    if (bf16_is_nan(b)) continue;
    ASSERT_EQ(BFloat16(static_cast<float>(BFloat16::from_bits(b))).bits, b) << std::hex << i;
  }
}

}  // namespace
