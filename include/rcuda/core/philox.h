// Philox4x32-10 counter-based RNG and the element mapping shared by the CPU and CUDA backends.
//
// Note [Philox stream]
// ~~~~~~~~~~~~~~~~~~~~
// A generator's state is (seed: uint64, offset: uint64). One call that fills a tensor of n
// elements uses a single `offset` value (the generator advances it once per call). Element i of
// that call draws from Philox block b (b depends on the distribution, see below) with
//   counter = {lo32(b), hi32(b), lo32(offset), hi32(offset)},  key = {lo32(seed), hi32(seed)}.
// Each element is thus a pure function of (seed, offset, i): a CPU loop split across threads and a
// CUDA grid of any shape produce the same tensor, and no sequential state has to be carried.
//
// Per distribution (lane k = word k of the block's output {x, y, z, w}):
//   uniform_float   b = i/4, lane i%4; (bits >> 8) * 2^-24, in [0, 1).
//   uniform_double  b = i/2, lanes (2*(i%2), 2*(i%2)+1) -> 64 bits (first lane is the low word);
//                   top 53 bits * 2^-53, in [0, 1).
//   normal_float    b = i/4; Box-Muller on lanes (0,1) for i%4 in {0,1}, lanes (2,3) for {2,3};
//                   u1 = ((a >> 8) + 1) * 2^-24 in (0, 1] so log(u1) is finite,
//                   u2 = (b >> 8) * 2^-24; r = sqrt(-2 log u1); even i -> r cos(2 pi u2),
//                   odd i -> r sin(2 pi u2). Both members of a pair are used, so no bits are
//                   wasted.
//   normal_double   b = i/2; u1 from lanes (0,1) and u2 from lanes (2,3) as 53-bit values, u1 made
//                   (0, 1] the same way; i%2 picks cos or sin.
//   random_bits64   b = i/2, same two lanes as uniform_double.
// The integer paths (uniform_*, random_bits64) are bit-identical on host and device. The normal
// paths go through libm (logf/sinf/...) whose last-ulp rounding differs between glibc and CUDA,
// so they agree only to a few ulp; the GPU's float normals use the special-function unit's sine,
// cosine and log2 and agree to 5e-6 * std (Note [Box-Muller on the GPU] in the CUDA random
// kernels).
#pragma once

#include <cmath>
#include <cstdint>

#include "rcuda/core/macros.h"

namespace rcuda {
namespace philox {

struct Uint4 {
  uint32_t x, y, z, w;
};

namespace detail {

constexpr uint32_t kM0 = 0xD2511F53u;  // Round multipliers (Salmon et al., SC'11).
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;  // Weyl key increments: golden ratio, sqrt(3) - 1.
constexpr uint32_t kW1 = 0xBB67AE85u;

RCUDA_HOST_DEVICE inline uint32_t mulhi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);  // One instruction; the 64-bit product would need two.
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// One Philox S-box round, exactly as Random123's _philox4x32round.
RCUDA_HOST_DEVICE inline Uint4 sbox_round(Uint4 c, uint32_t k0, uint32_t k1) {
  const uint32_t hi0 = mulhi(kM0, c.x), lo0 = kM0 * c.x;
  const uint32_t hi1 = mulhi(kM1, c.z), lo1 = kM1 * c.z;
  return Uint4{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
}

}  // namespace detail

// The key of each of the 10 rounds (the key is bumped before every round but the first).
// Computed once per fill and handed to a GPU kernel as a parameter, the schedule costs the
// kernel no instructions: the round's XOR reads its key from the constant bank.
struct RoundKeys {
  uint32_t k0[10], k1[10];
};

RCUDA_HOST_DEVICE inline RoundKeys round_keys(uint32_t key0, uint32_t key1) {
  RoundKeys keys{};
  for (int r = 0; r < 10; ++r) {
    keys.k0[r] = key0;
    keys.k1[r] = key1;
    key0 += detail::kW0;
    key1 += detail::kW1;
  }
  return keys;
}

RCUDA_HOST_DEVICE inline Uint4 philox4x32_10(Uint4 counter, const RoundKeys& keys) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < 10; ++r) counter = detail::sbox_round(counter, keys.k0[r], keys.k1[r]);
  return counter;
}

// Philox4x32 with 10 rounds; matches Random123's philox4x32(ctr, key) and its kat_vectors.
RCUDA_HOST_DEVICE inline Uint4 philox4x32_10(Uint4 counter, uint32_t key0, uint32_t key1) {
  return philox4x32_10(counter, round_keys(key0, key1));
}

namespace detail {

RCUDA_HOST_DEVICE inline RoundKeys seed_keys(uint64_t seed) {
  return round_keys(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// The Philox output block b for the call identified by (seed, offset), with the seed's round
// keys (seed_keys) computed once per fill; see Note [Philox stream].
RCUDA_HOST_DEVICE inline Uint4 block(const RoundKeys& keys, uint64_t offset, uint64_t b) {
  const Uint4 ctr{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                  static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)};
  return philox4x32_10(ctr, keys);
}

RCUDA_HOST_DEVICE inline Uint4 block(uint64_t seed, uint64_t offset, uint64_t b) {
  return block(seed_keys(seed), offset, b);
}

// Selects without indexing, so nvcc keeps the block in registers instead of local memory.
RCUDA_HOST_DEVICE inline uint32_t lane(const Uint4& r, unsigned k) {
  return (k & 2u) ? ((k & 1u) ? r.w : r.z) : ((k & 1u) ? r.y : r.x);
}

// Lanes (0,1) when hi_pair is false, (2,3) otherwise; the first lane is the low word.
RCUDA_HOST_DEVICE inline uint64_t pair64(const Uint4& r, bool hi_pair) {
  return hi_pair ? (static_cast<uint64_t>(r.w) << 32 | r.z)
                 : (static_cast<uint64_t>(r.y) << 32 | r.x);
}

constexpr float kTwo24Inv = 1.0f / 16777216.0f;         // 2^-24
constexpr double kTwo53Inv = 1.0 / 9007199254740992.0;  // 2^-53
constexpr float kTwoPiF = 6.28318530717958647692f;
constexpr double kTwoPi = 6.28318530717958647692;

}  // namespace detail

// Uniform in [0, 1): 24 bits fill a float mantissa exactly, so every value is representable and
// 1.0 can never be produced by rounding.
RCUDA_HOST_DEVICE inline float uniform_float(uint64_t seed, uint64_t offset, uint64_t i) {
  const Uint4 r = detail::block(seed, offset, i / 4);
  return static_cast<float>(detail::lane(r, static_cast<unsigned>(i % 4)) >> 8) * detail::kTwo24Inv;
}

// Uniform in [0, 1) with the full 53-bit double resolution (a single lane would give only 32).
RCUDA_HOST_DEVICE inline double uniform_double(uint64_t seed, uint64_t offset, uint64_t i) {
  const Uint4 r = detail::block(seed, offset, i / 2);
  return static_cast<double>(detail::pair64(r, i % 2 != 0) >> 11) * detail::kTwo53Inv;
}

RCUDA_HOST_DEVICE inline float normal_float(uint64_t seed, uint64_t offset, uint64_t i) {
  const Uint4 r = detail::block(seed, offset, i / 4);
  const bool hi_pair = (i % 4) >= 2;
  const uint32_t a = hi_pair ? r.z : r.x;
  const uint32_t b = hi_pair ? r.w : r.y;
  const float u1 = static_cast<float>((a >> 8) + 1) * detail::kTwo24Inv;  // (0, 1]
  const float u2 = static_cast<float>(b >> 8) * detail::kTwo24Inv;        // [0, 1)
  const float radius = sqrtf(-2.0f * logf(u1));
  const float theta = detail::kTwoPiF * u2;
  return (i % 2 == 0) ? radius * cosf(theta) : radius * sinf(theta);
}

RCUDA_HOST_DEVICE inline double normal_double(uint64_t seed, uint64_t offset, uint64_t i) {
  const Uint4 r = detail::block(seed, offset, i / 2);
  const double u1 = static_cast<double>((detail::pair64(r, false) >> 11) + 1) * detail::kTwo53Inv;
  const double u2 = static_cast<double>(detail::pair64(r, true) >> 11) * detail::kTwo53Inv;
  const double radius = sqrt(-2.0 * log(u1));
  const double theta = detail::kTwoPi * u2;
  return (i % 2 == 0) ? radius * cos(theta) : radius * sin(theta);
}

// 64 raw bits for integer distributions. randint maps them with `bits % range`; the modulo bias
// is below range / 2^64 (< 2^-32 for any range up to 2^32), far under any test's resolution, so
// we avoid rejection loops whose data-dependent trip count would diverge across GPU threads.
RCUDA_HOST_DEVICE inline uint64_t random_bits64(uint64_t seed, uint64_t offset, uint64_t i) {
  const Uint4 r = detail::block(seed, offset, i / 2);
  return detail::pair64(r, i % 2 != 0);
}

}  // namespace philox
}  // namespace rcuda
