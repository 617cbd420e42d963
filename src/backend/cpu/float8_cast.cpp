// fp8 casts with amax and the delayed-scaling update on the CPU: the reference the CUDA kernels
// are tested against, through the shared scalar rules of backend/float8_scaling.h.
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/dispatch.h"
#include "backend/float8_scaling.h"
#include "cpu_backend.h"

namespace rcuda::cpu {
namespace {

using backend::ComputeType;
using backend::convert;

template <typename T, typename F8>
void cast_typed(const Tensor& out, const Tensor& out_t, const Tensor& amax, const Tensor& in,
                float scale) {
  const int64_t m = in.size(0), k = in.size(1);
  const T* x = in.data<T>();
  uint8_t* row = out.defined() ? static_cast<uint8_t*>(out.data_ptr()) : nullptr;
  uint8_t* col = out_t.defined() ? static_cast<uint8_t*>(out_t.data_ptr()) : nullptr;
  float seen = 0.0f;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const float v = static_cast<float>(convert<ComputeType<T>>(x[i * k + j]));
      seen = backend::nan_winning_max(seen, v < 0 ? -v : v);
      const uint8_t bits = backend::saturating_float8_bits<F8>(v, scale);
      if (row) row[i * k + j] = bits;
      if (col) col[j * m + i] = bits;
    }
  float* a = amax.data<float>();
  *a = backend::nan_winning_max(*a, seen);
}

}  // namespace

void CpuBackend::float8_cast(const Tensor& out, const Tensor& out_t, const Tensor& amax,
                             const Tensor& in, const Tensor& scale) {
  const float s = *scale.data<float>();
  const DType f8 = out.defined() ? out.dtype() : out_t.dtype();
  backend::dispatch_floating(in.dtype(), "float8_cast", [&](auto tag) {
    using T = decltype(tag);
    if (f8 == DType::Float8E4M3FN)
      cast_typed<T, Float8E4M3FN>(out, out_t, amax, in, s);
    else
      cast_typed<T, Float8E5M2>(out, out_t, amax, in, s);
  });
}

void CpuBackend::float8_update_scales(const Tensor& amax_history, const Tensor& scale,
                                      const Tensor& new_scale, const Tensor& new_scale_inv,
                                      const std::vector<double>& fp8_max, double margin) {
  const int64_t rows = amax_history.size(0), length = amax_history.size(1);
  float* history = amax_history.data<float>();
  const float margin_factor = static_cast<float>(std::exp2(margin));
  for (int64_t r = 0; r < rows; ++r) {
    float* h = history + r * length;
    float amax = 0.0f;
    for (int64_t i = 0; i < length; ++i) amax = backend::nan_winning_max(amax, h[i]);
    const float s =
        backend::delayed_scale(amax, scale.data<float>()[r * scale.stride(0)],
                               static_cast<float>(fp8_max[static_cast<size_t>(r)]), margin_factor);
    new_scale.data<float>()[r * new_scale.stride(0)] = s;
    new_scale_inv.data<float>()[r * new_scale_inv.stride(0)] = 1.0f / s;
    for (int64_t i = length - 1; i > 0; --i) h[i] = h[i - 1];
    h[0] = 0.0f;
  }
}

}  // namespace rcuda::cpu
