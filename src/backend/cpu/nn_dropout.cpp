// dropout and its backward (masked_scale) on the CPU. The mask follows Note [Dropout mask]
// (backend/dropout_mask.h): one Philox block per 4 consecutive elements, as uniform_float, so
// the GPU draws the same mask from the same (seed, offset).
#include "backend/dropout_mask.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"
#include "rcuda/core/philox.h"

namespace rcuda::cpu {
namespace {

template <typename T>
void dropout_typed(const Tensor& out, const Tensor& mask, const Tensor& in, double p, uint64_t seed,
                   uint64_t offset) {
  using C = ComputeType<T>;
  const int64_t n = in.numel();
  const T* x = in.data<T>();
  T* y = out.data<T>();
  bool* keep = mask.data<bool>();
  const uint32_t threshold = backend::dropout_threshold(p);
  const C scale = static_cast<C>(1.0 / (1.0 - p));
  const philox::RoundKeys keys = philox::detail::seed_keys(seed);
  parallel_units((n + 3) / 4, 4, [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      const philox::Uint4 r = philox::detail::block(keys, offset, static_cast<uint64_t>(b));
      for (unsigned k = 0; k < 4; ++k) {
        const int64_t i = b * 4 + k;
        if (i >= n) break;
        const bool kept = backend::dropout_keeps(philox::detail::lane(r, k), threshold);
        keep[i] = kept;
        // x * 0 for a dropped element, as torch: a NaN input stays NaN.
        y[i] = convert<T>(convert<C>(x[i]) * (kept ? scale : C(0)));
      }
    }
  });
}

template <typename T>
void masked_scale_typed(const Tensor& out, const Tensor& in, const Tensor& mask, double scale) {
  using C = ComputeType<T>;
  const T* x = in.data<T>();
  const bool* keep = mask.data<bool>();
  T* y = out.data<T>();
  const C s = static_cast<C>(scale);
  parallel_range(in.numel(), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
      y[i] = convert<T>(convert<C>(x[i]) * (keep[i] ? s : C(0)));
  });
}

}  // namespace

void CpuBackend::dropout(const Tensor& out, const Tensor& mask, const Tensor& in, double p,
                         uint64_t seed, uint64_t offset) {
  dispatch_floating(in.dtype(), "dropout", [&](auto tag) {
    dropout_typed<decltype(tag)>(out, mask, in, p, seed, offset);
  });
}

void CpuBackend::masked_scale(const Tensor& out, const Tensor& in, const Tensor& mask,
                              double scale) {
  dispatch_floating(in.dtype(), "dropout_backward",
                    [&](auto tag) { masked_scale_typed<decltype(tag)>(out, in, mask, scale); });
}

}  // namespace rcuda::cpu
