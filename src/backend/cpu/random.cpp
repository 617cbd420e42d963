// Philox random fills (Note [Philox stream] in rcuda/core/philox.h). Each Philox block feeds
// 4 (float) or 2 (double, 64-bit) consecutive elements, so the CPU computes a block once and
// writes all of its elements, with exactly the per-element formulas of philox.h.
#include <cmath>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"
#include "rcuda/core/philox.h"

namespace rcuda::cpu {
namespace {

namespace px = philox::detail;

// Calls write(i, value) for elements [begin, end) of a per-block distribution: `per_block`
// elements come from one block, computed by make(block, lane).
template <int PerBlock, typename Make, typename Write>
void for_blocks(int64_t numel, uint64_t seed, uint64_t offset, Make make, Write write) {
  const int64_t blocks = (numel + PerBlock - 1) / PerBlock;
  parallel_range(blocks * 64, [&](int64_t b64, int64_t e64) {
    // The range is scaled by 64 so that parallel_range's grain counts work, not blocks.
    for (int64_t b = (b64 + 63) / 64; b < (e64 + 63) / 64; ++b) {
      const philox::Uint4 r = px::block(seed, offset, static_cast<uint64_t>(b));
      for (int k = 0; k < PerBlock; ++k) {
        const int64_t i = b * PerBlock + k;
        if (i < numel) write(i, make(r, k));
      }
    }
  });
}

float normal_from_block(const philox::Uint4& r, int k) {
  // Same expressions as philox::normal_float, so results match it bit for bit.
  const bool hi_pair = k >= 2;
  const uint32_t a = hi_pair ? r.z : r.x;
  const uint32_t b = hi_pair ? r.w : r.y;
  const float u1 = static_cast<float>((a >> 8) + 1) * px::kTwo24Inv;
  const float u2 = static_cast<float>(b >> 8) * px::kTwo24Inv;
  const float radius = sqrtf(-2.0f * logf(u1));
  const float theta = px::kTwoPiF * u2;
  return (k % 2 == 0) ? radius * cosf(theta) : radius * sinf(theta);
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
      const float m = static_cast<float>(mean), s = static_cast<float>(std);
      for_blocks<4>(n, seed, offset, normal_from_block,
                    [&](int64_t i, float z) { o[i] = convert<T>(m + s * z); });
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
          if constexpr (std::is_integral_v<T>) o[i] = static_cast<T>(v);
          else o[i] = convert<T>(static_cast<double>(v));
        });
  });
}

}  // namespace rcuda::cpu
