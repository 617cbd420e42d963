// float8 conversions checked against an independent reference: every one of the 256 codes is
// decoded from the format's definition, and encoding is a nearest-value search over those codes
// (ties to the even code), with the overflow rules torch uses (e4m3fn saturates to ±448, e5m2
// overflows to infinity).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "rcuda/core/float8.h"
#include "support/reference.h"

namespace rcuda {
namespace {

// Value of a code from the definition: sign, exponent field, mantissa field, bias.
double decode(uint8_t code, int exponent_bits, int mantissa_bits, bool has_infinity) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int e = (code >> mantissa_bits) & ((1 << exponent_bits) - 1);
  const int m = code & ((1 << mantissa_bits) - 1);
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  const int max_e = (1 << exponent_bits) - 1;
  if (has_infinity && e == max_e) return m == 0 ? sign * INFINITY : NAN;
  if (!has_infinity && e == max_e && m == (1 << mantissa_bits) - 1) return NAN;
  if (e == 0) return sign * std::ldexp(m, 1 - bias - mantissa_bits);
  return sign * std::ldexp((1 << mantissa_bits) + m, e - bias - mantissa_bits);
}

double decode_e4m3(uint8_t c) { return decode(c, 4, 3, false); }
double decode_e5m2(uint8_t c) { return decode(c, 5, 2, true); }

// Nearest finite code by search; ties go to the code with an even mantissa.
uint8_t nearest(double v, double (*dec)(uint8_t)) {
  int best = -1;
  double best_err = INFINITY;
  for (int c = 0; c < 256; ++c) {
    const double d = dec(static_cast<uint8_t>(c));
    if (!std::isfinite(d) || std::signbit(d) != std::signbit(v)) continue;
    const double err = std::fabs(d - v);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(best);
}

TEST(Float8Test, DecodeEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const double e4 = decode_e4m3(code), e5 = decode_e5m2(code);
    const float g4 = float8_e4m3fn_bits_to_float(code), g5 = float8_e5m2_bits_to_float(code);
    if (std::isnan(e4))
      EXPECT_TRUE(std::isnan(g4)) << c;
    else
      EXPECT_EQ(static_cast<double>(g4), e4) << c;
    if (std::isnan(e5))
      EXPECT_TRUE(std::isnan(g5)) << c;
    else
      EXPECT_EQ(static_cast<double>(g5), e5) << c;
  }
  EXPECT_EQ(float8_e4m3fn_bits_to_float(0x7E), 448.0f);
  EXPECT_EQ(float8_e5m2_bits_to_float(0x7B), 57344.0f);
}

TEST(Float8Test, EncodeMatchesNearestSearch) {
  // Every code's value, the midpoints between neighbours (ties), and values just around them.
  std::vector<float> probes;
  for (int c = 0; c < 256; ++c) {
    for (double (*dec)(uint8_t) : {decode_e4m3, decode_e5m2}) {
      const double d = dec(static_cast<uint8_t>(c));
      if (!std::isfinite(d)) continue;
      const double next = dec(static_cast<uint8_t>(c + 1 < 256 ? c + 1 : c));
      probes.push_back(static_cast<float>(d));
      if (std::isfinite(next) && std::signbit(next) == std::signbit(d)) {
        const float mid = static_cast<float>((d + next) / 2);
        probes.push_back(mid);
        probes.push_back(std::nextafter(mid, INFINITY));
        probes.push_back(std::nextafter(mid, -INFINITY));
      }
    }
  }
  std::uniform_real_distribution<float> any(-600.0f, 600.0f);
  for (int i = 0; i < 20000; ++i) probes.push_back(any(test::rng()));
  for (float v : probes) {
    const double limit4 = 448.0;
    const uint8_t want4 = std::fabs(v) > limit4 ? (v < 0 ? 0xFE : 0x7E) : nearest(v, decode_e4m3);
    EXPECT_EQ(float_to_float8_e4m3fn_bits(v), want4) << v;
    // e5m2 rounds past the largest finite to infinity when nearer to 2^16 than to 57344.
    const bool e5_overflow = std::fabs(v) >= 61440.0;
    const uint8_t want5 = e5_overflow ? (v < 0 ? 0xFC : 0x7C) : nearest(v, decode_e5m2);
    EXPECT_EQ(float_to_float8_e5m2_bits(v), want5) << v;
  }
  EXPECT_EQ(float_to_float8_e4m3fn_bits(NAN) & 0x7F, 0x7F);
  EXPECT_EQ(float_to_float8_e4m3fn_bits(INFINITY), 0x7E);  // saturates, as torch
  EXPECT_EQ(float_to_float8_e5m2_bits(-INFINITY), 0xFC);
  EXPECT_EQ(float_to_float8_e5m2_bits(1e6f), 0x7C);
  EXPECT_EQ(float_to_float8_e4m3fn_bits(1e-9f), 0x00);
  EXPECT_EQ(float_to_float8_e4m3fn_bits(-1e-9f), 0x80);
}

TEST(Float8Test, TensorsConvertButRefuseArithmetic) {
  const Tensor x = test::random_tensor({64}, DType::Float32, -100, 100);
  for (DType f8 : {DType::Float8E4M3FN, DType::Float8E5M2}) {
    const Tensor q = to(x, f8);
    EXPECT_EQ(q.element_size(), 1u);
    const std::vector<double> back = test::to_doubles(to(q, DType::Float64));
    const std::vector<double> src = test::to_doubles(x);
    for (size_t i = 0; i < src.size(); ++i) {
      const double want = f8 == DType::Float8E4M3FN ? decode_e4m3(nearest(src[i], decode_e4m3))
                                                    : decode_e5m2(nearest(src[i], decode_e5m2));
      EXPECT_EQ(back[i], want) << src[i];
    }
    EXPECT_EQ(test::to_doubles(to(zeros({3}, f8), DType::Float32)), std::vector<double>(3, 0.0));
    try {
      add(q, q);
      FAIL() << "expected DTypeError";
    } catch (const DTypeError& e) {
      EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
    }
    EXPECT_THROW(exp(q), DTypeError);
    EXPECT_THROW(add(q, x), DTypeError);  // no promotion with float8
    EXPECT_THROW(matmul(q.view({8, 8}), q.view({8, 8})), DTypeError);
    EXPECT_EQ(dtype_from_name(dtype_name(f8)), f8);
  }
  EXPECT_THROW(promote_types(DType::Float8E4M3FN, DType::Float8E5M2), DTypeError);
}

}  // namespace
}  // namespace rcuda
