// Philox random fills (Note [Philox stream] in rcuda/core/philox.h). Each Philox block feeds
// 4 (float) or 2 (double, 64-bit) consecutive elements, so the CPU computes a block once and
// writes all of its elements, with exactly the per-element formulas of philox.h.
#include <algorithm>
#include <cmath>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"
#include "normal_simd.h"
#include "rcuda/core/philox.h"

namespace rcuda::cpu {
namespace {

namespace px = philox::detail;

// Calls write(i, value) for elements [begin, end) of a per-block distribution: `per_block`
// elements come from one block, computed by make(block, lane).
template <int PerBlock, typename Make, typename Write>
void for_blocks(int64_t numel, uint64_t seed, uint64_t offset, Make make, Write write) {
  const int64_t blocks = (numel + PerBlock - 1) / PerBlock;
  const philox::RoundKeys keys = px::seed_keys(seed);
  parallel_range(blocks * 64, [&](int64_t b64, int64_t e64) {
    // The range is scaled by 64 so that parallel_range's grain counts work, not blocks.
    for (int64_t b = (b64 + 63) / 64; b < (e64 + 63) / 64; ++b) {
      const philox::Uint4 r = px::block(keys, offset, static_cast<uint64_t>(b));
      for (int k = 0; k < PerBlock; ++k) {
        const int64_t i = b * PerBlock + k;
        if (i < numel) write(i, make(r, k));
      }
    }
  });
}

double normal_double_from_block(const philox::Uint4& r, int k) {
  const double u1 = static_cast<double>((px::pair64(r, false) >> 11) + 1) * px::kTwo53Inv;
  const double u2 = static_cast<double>(px::pair64(r, true) >> 11) * px::kTwo53Inv;
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double theta = px::kTwoPi * u2;
  return (k % 2 == 0) ? radius * std::cos(theta) : radius * std::sin(theta);
}

}  // namespace

void CpuBackend::random_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low,
                                double high) {
  const int64_t n = out.numel();
  dispatch_floating(out.dtype(), "rand", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    if constexpr (std::is_same_v<T, double>) {
      for_blocks<2>(
          n, seed, offset,
          [](const philox::Uint4& r, int k) {
            return static_cast<double>(px::pair64(r, k != 0) >> 11) * px::kTwo53Inv;
          },
          [&](int64_t i, double u) { o[i] = low + (high - low) * u; });
    } else {
      const float lo = static_cast<float>(low), span = static_cast<float>(high - low);
      for_blocks<4>(
          n, seed, offset,
          [](const philox::Uint4& r, int k) {
            return static_cast<float>(px::lane(r, static_cast<unsigned>(k)) >> 8) * px::kTwo24Inv;
          },
          [&](int64_t i, float u) { o[i] = convert<T>(lo + span * u); });
    }
  });
}

void CpuBackend::random_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean,
                               double std) {
  const int64_t n = out.numel();
  dispatch_floating(out.dtype(), "randn", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    if constexpr (std::is_same_v<T, double>) {
      for_blocks<2>(n, seed, offset, normal_double_from_block,
                    [&](int64_t i, double z) { o[i] = mean + std * z; });
    } else {
      // Chunks of kNormalChunkBlocks Philox blocks through the vectorised Box-Muller.
      const float m = static_cast<float>(mean), s = static_cast<float>(std);
      const int64_t blocks = (n + 3) / 4;
      const int64_t chunks = (blocks + kNormalChunkBlocks - 1) / kNormalChunkBlocks;
      parallel_range(chunks * kNormalChunkBlocks * 4, [&](int64_t b, int64_t e) {
        const int64_t per_chunk = int64_t{kNormalChunkBlocks} * 4;
        float z[kNormalChunkBlocks * 4];
        for (int64_t c = (b + per_chunk - 1) / per_chunk; c < (e + per_chunk - 1) / per_chunk;
             ++c) {
          const int64_t first_block = c * kNormalChunkBlocks;
          const int count =
              static_cast<int>(std::min<int64_t>(kNormalChunkBlocks, blocks - first_block));
          normal_float_blocks(seed, offset, static_cast<uint64_t>(first_block), count, z);
          const int64_t first = first_block * 4, last = std::min<int64_t>(n, first + count * 4);
          for (int64_t i = first; i < last; ++i) o[i] = convert<T>(m + s * z[i - first]);
        }
      });
    }
  });
}

void CpuBackend::random_int(const Tensor& out, uint64_t seed, uint64_t offset, int64_t low,
                            int64_t high) {
  const int64_t n = out.numel();
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    for_blocks<2>(
        n, seed, offset, [](const philox::Uint4& r, int k) { return px::pair64(r, k != 0); },
        [&](int64_t i, uint64_t bits) {
          const int64_t v = static_cast<int64_t>(static_cast<uint64_t>(low) + bits % range);
          if constexpr (std::is_integral_v<T>)
            o[i] = static_cast<T>(v);
          else
            o[i] = convert<T>(static_cast<double>(v));
        });
  });
}

}  // namespace rcuda::cpu
