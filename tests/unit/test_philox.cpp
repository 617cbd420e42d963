// Tests for rcuda/core/philox.h: the Philox4x32-10 block function against Random123's published
// known answers and an independent reimplementation, the element mapping of Note [Philox stream],
// and the statistics of the resulting uniform and normal streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "rcuda/core/philox.h"

namespace {

using rcuda::philox::philox4x32_10;
using rcuda::philox::Uint4;

// ---------------------------------------------------------------------------------------------
// Block function.

struct Kat {
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t expected[4];
};

// The first three are the complete "philox4x32 10" entries of Random123's tests/kat_vectors
// (DEShawResearch/random123, tag v1.14.0); the rest come from tests/old_kat_vectors in the same
// release, which exercise single counter and key bits.
const Kat kKats[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    {{0x00000001, 0x00000000, 0x00000000, 0x00000000},
     {0x00000001, 0x00000000},
     {0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0x00000001, 0x00000000},
     {0x38527b8f, 0xfad9a48c, 0x20e675c0, 0xf2fea26a}},
    {{0x00000001, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000001},
     {0xccf3076a, 0x6306f434, 0xbea71965, 0xd96fe48a}},
    {{0x00000001, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x80000000},
     {0xe29b9f84, 0x2903d316, 0x42a1f56f, 0x1ad02eab}},
};

TEST(Philox, KnownAnswerVectors) {
  for (const Kat& k : kKats) {
    const Uint4 out =
        philox4x32_10(Uint4{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}, k.key[0], k.key[1]);
    EXPECT_EQ(out.x, k.expected[0]);
    EXPECT_EQ(out.y, k.expected[1]);
    EXPECT_EQ(out.z, k.expected[2]);
    EXPECT_EQ(out.w, k.expected[3]);
  }
}

// Independent reference written from the paper's description: the full key schedule is
// precomputed, state lives in an array, and each product is taken whole in 64 bits.
void reference_philox(const uint32_t in[4], const uint32_t key[2], uint32_t out[4]) {
  uint64_t k0[10], k1[10];
  for (int r = 0; r < 10; ++r) {
    k0[r] = (key[0] + uint64_t{0x9E3779B9} * r) & 0xffffffffu;
    k1[r] = (key[1] + uint64_t{0xBB67AE85} * r) & 0xffffffffu;
  }
  uint64_t s[4] = {in[0], in[1], in[2], in[3]};
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53} * s[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * s[2];
    const uint64_t next[4] = {(p1 >> 32) ^ s[1] ^ k0[r], p1 & 0xffffffffu,
                              (p0 >> 32) ^ s[3] ^ k1[r], p0 & 0xffffffffu};
    std::copy(next, next + 4, s);
  }
  for (int j = 0; j < 4; ++j) out[j] = static_cast<uint32_t>(s[j]);
}

TEST(Philox, ReferenceMatchesKatsAndRandomInputs) {
  for (const Kat& k : kKats) {
    uint32_t out[4];
    reference_philox(k.ctr, k.key, out);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(out[j], k.expected[j]);
  }
  std::mt19937 gen(12345);
  auto next = [&gen] { return static_cast<uint32_t>(gen()); };
  for (int t = 0; t < 100000; ++t) {
    const uint32_t ctr[4] = {next(), next(), next(), next()};
    const uint32_t key[2] = {next(), next()};
    uint32_t want[4];
    reference_philox(ctr, key, want);
    const Uint4 got = philox4x32_10(Uint4{ctr[0], ctr[1], ctr[2], ctr[3]}, key[0], key[1]);
    ASSERT_EQ(got.x, want[0]);
    ASSERT_EQ(got.y, want[1]);
    ASSERT_EQ(got.z, want[2]);
    ASSERT_EQ(got.w, want[3]);
  }
}

// ---------------------------------------------------------------------------------------------
// Element mapping (Note [Philox stream]), recomputed here from the block function.

std::vector<uint32_t> lanes(uint64_t seed, uint64_t offset, uint64_t b) {
  const Uint4 r =
      philox4x32_10(Uint4{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                          static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)},
                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return {r.x, r.y, r.z, r.w};
}

uint64_t join(uint32_t lo, uint32_t hi) { return uint64_t{hi} << 32 | lo; }

// Indices near 0 and around block numbers where the high counter word changes.
std::vector<uint64_t> test_indices() {
  std::vector<uint64_t> idx;
  for (uint64_t i = 0; i < 64; ++i) idx.push_back(i);
  for (uint64_t base : {uint64_t{1} << 33, uint64_t{1} << 34, uint64_t{1} << 35}) {
    for (uint64_t d = 0; d < 16; ++d) idx.push_back(base - 8 + d);
  }
  idx.push_back(~uint64_t{0});
  return idx;
}

const uint64_t kSeed = 0x0123456789abcdefULL;
const uint64_t kOffset = 0xfedcba9876543210ULL;

TEST(PhiloxMapping, UniformFloatUsesLaneIMod4) {
  for (uint64_t i : test_indices()) {
    const auto l = lanes(kSeed, kOffset, i / 4);
    const float want = static_cast<float>(l[i % 4] >> 8) / 16777216.0f;
    const float got = rcuda::philox::uniform_float(kSeed, kOffset, i);
    EXPECT_EQ(got, want) << "i=" << i;
    EXPECT_GE(got, 0.0f);
    EXPECT_LT(got, 1.0f);
  }
}

TEST(PhiloxMapping, UniformDoubleAndBits64UseLanePairs) {
  for (uint64_t i : test_indices()) {
    const auto l = lanes(kSeed, kOffset, i / 2);
    const uint64_t bits = join(l[2 * (i % 2)], l[2 * (i % 2) + 1]);
    EXPECT_EQ(rcuda::philox::random_bits64(kSeed, kOffset, i), bits) << "i=" << i;
    const double got = rcuda::philox::uniform_double(kSeed, kOffset, i);
    EXPECT_EQ(got, std::ldexp(static_cast<double>(bits >> 11), -53)) << "i=" << i;
    EXPECT_GE(got, 0.0);
    EXPECT_LT(got, 1.0);
  }
}

TEST(PhiloxMapping, NormalFloatIsBoxMullerOfTheRightLanes) {
  const double two_pi = 2.0 * std::acos(-1.0);
  for (uint64_t i : test_indices()) {
    const auto l = lanes(kSeed, kOffset, i / 4);
    const uint32_t a = l[(i % 4) < 2 ? 0 : 2], b = l[(i % 4) < 2 ? 1 : 3];
    const double u1 = ((a >> 8) + 1) / 16777216.0, u2 = (b >> 8) / 16777216.0;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double want = (i % 2 == 0) ? r * std::cos(two_pi * u2) : r * std::sin(two_pi * u2);
    const float got = rcuda::philox::normal_float(kSeed, kOffset, i);
    // Relative 1e-5, floored at 1 so values near a zero of sin/cos are not held to an
    // impossible relative bound.
    EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::fabs(want))) << "i=" << i;
  }
}

TEST(PhiloxMapping, NormalDoubleIsBoxMullerOfAllFourLanes) {
  const double two_pi = 2.0 * std::acos(-1.0);
  for (uint64_t i : test_indices()) {
    const auto l = lanes(kSeed, kOffset, i / 2);
    const double u1 = std::ldexp(static_cast<double>((join(l[0], l[1]) >> 11) + 1), -53);
    const double u2 = std::ldexp(static_cast<double>(join(l[2], l[3]) >> 11), -53);
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double want = (i % 2 == 0) ? r * std::cos(two_pi * u2) : r * std::sin(two_pi * u2);
    EXPECT_NEAR(rcuda::philox::normal_double(kSeed, kOffset, i), want,
                1e-12 * std::max(1.0, std::fabs(want)))
        << "i=" << i;
  }
}

TEST(PhiloxMapping, SameInputsSameValueDifferentOffsetOrSeedDifferentStream) {
  using rcuda::philox::uniform_float;
  int same_offset = 0, same_offset_hi = 0, same_seed_hi = 0;
  for (uint64_t i = 0; i < 4096; ++i) {
    const float v = uniform_float(kSeed, 7, i);
    EXPECT_EQ(v, uniform_float(kSeed, 7, i));
    EXPECT_EQ(rcuda::philox::normal_float(kSeed, 7, i), rcuda::philox::normal_float(kSeed, 7, i));
    same_offset += v == uniform_float(kSeed, 8, i);
    same_offset_hi += v == uniform_float(kSeed, 7 + (uint64_t{1} << 32), i);
    same_seed_hi += v == uniform_float(kSeed ^ (uint64_t{1} << 40), 7, i);
  }
  // 24-bit values: two independent streams of 4096 collide ~4096 / 2^24 times in expectation.
  EXPECT_LE(same_offset, 2);
  EXPECT_LE(same_offset_hi, 2);
  EXPECT_LE(same_seed_hi, 2);
}

// ---------------------------------------------------------------------------------------------
// Statistics on 1e6 draws.

constexpr uint64_t kN = 1000000;

double ks_statistic(std::vector<double> x, double (*cdf)(double)) {
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double d = 0.0;
  for (size_t j = 0; j < x.size(); ++j) {
    const double f = cdf(x[j]);
    d = std::max(d, std::max(f - j / n, (j + 1) / n - f));
  }
  return d;
}

double uniform_cdf(double x) { return std::min(1.0, std::max(0.0, x)); }
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

void mean_var(const std::vector<double>& x, double* mean, double* var) {
  double s = 0.0;
  for (double v : x) s += v;
  *mean = s / x.size();
  double ss = 0.0;
  for (double v : x) ss += (v - *mean) * (v - *mean);
  *var = ss / (x.size() - 1);
}

const double kKsBound = 1.63 / std::sqrt(static_cast<double>(kN));  // 1% level.

TEST(PhiloxStats, UniformFloat) {
  std::vector<double> x(kN);
  for (uint64_t i = 0; i < kN; ++i) x[i] = rcuda::philox::uniform_float(42, 3, i);
  double mean, var;
  mean_var(x, &mean, &var);
  EXPECT_NEAR(mean, 0.5, 0.002);
  EXPECT_NEAR(var, 1.0 / 12.0, 0.001);
  EXPECT_LT(ks_statistic(x, uniform_cdf), kKsBound);
}

TEST(PhiloxStats, UniformDoubleHasMoreThan24Bits) {
  std::vector<double> x(kN);
  bool fine_bits = false;
  for (uint64_t i = 0; i < kN; ++i) {
    x[i] = rcuda::philox::uniform_double(42, 3, i);
    // A float-resolution value is a multiple of 2^-24; a 53-bit one almost never is.
    const double scaled = std::ldexp(x[i], 24);
    fine_bits |= scaled != std::floor(scaled);
  }
  EXPECT_TRUE(fine_bits);
  double mean, var;
  mean_var(x, &mean, &var);
  EXPECT_NEAR(mean, 0.5, 0.002);
  EXPECT_NEAR(var, 1.0 / 12.0, 0.001);
  EXPECT_LT(ks_statistic(x, uniform_cdf), kKsBound);
}

TEST(PhiloxStats, NormalFloat) {
  std::vector<double> x(kN);
  for (uint64_t i = 0; i < kN; ++i) {
    const float v = rcuda::philox::normal_float(42, 5, i);
    ASSERT_TRUE(std::isfinite(v)) << "i=" << i;
    x[i] = v;
  }
  double mean, var;
  mean_var(x, &mean, &var);
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(var, 1.0, 0.005);
  EXPECT_LT(ks_statistic(x, normal_cdf), kKsBound);
}

TEST(PhiloxStats, NormalDouble) {
  std::vector<double> x(kN);
  for (uint64_t i = 0; i < kN; ++i) x[i] = rcuda::philox::normal_double(42, 5, i);
  double mean, var;
  mean_var(x, &mean, &var);
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(var, 1.0, 0.005);
  EXPECT_LT(ks_statistic(x, normal_cdf), kKsBound);
}

TEST(PhiloxStats, Bits64CoverAllBits) {
  uint64_t any = 0, all = ~uint64_t{0};
  for (uint64_t i = 0; i < 1000; ++i) {
    const uint64_t v = rcuda::philox::random_bits64(42, 9, i);
    any |= v;
    all &= v;
  }
  EXPECT_EQ(any, ~uint64_t{0});
  EXPECT_EQ(all, uint64_t{0});
}

}  // namespace
