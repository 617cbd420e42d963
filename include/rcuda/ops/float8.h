// fp8 casts with per-tensor scales and the delayed-scaling update, the pieces an fp8 linear
// layer is made of (rcuda/nn/fp8_linear.h; docs/mixed-precision.md). No gradients: the layer
// records its own node.
#pragma once

#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// in * scale rounded to `dtype` (float8_e4m3fn or float8_e5m2), saturating at the format's
// largest finite value, for a 2-D floating in [M,K] (copied contiguous when it is not). `data`
// is the [M,K] row-major result when `rowwise`, `data_t` its [K,M] transpose (also row-major)
// when `transposed`; both come from one pass, which also raises amax, a one-element float32
// tensor on in's device, to max(amax, max |in|) in place (NaN wins). scale: a one-element
// float32 tensor on in's device, read there (no synchronisation).
struct Float8Cast {
  Tensor data, data_t;
};
Float8Cast float8_cast(const Tensor& in, const Tensor& scale, const Tensor& amax, DType dtype,
                       bool rowwise = true, bool transposed = false);

// The largest finite value of a float8 dtype: 448 (e4m3fn), 57344 (e5m2).
double float8_max(DType dtype);

// Delayed scaling over amax_history [R,H] (float32, contiguous, R <= 8; row r for a tensor cast
// to formats[r]) and the current scales [R] (any stride): returns new scale and scale_inv
// tensors [R] (fresh, so that what an earlier step saved for its backward stays valid; each
// element 16-byte aligned, stride 4, as cuBLASLt reads scales), computed from each row's max
// as fp8_max / amax / 2^margin (the old scale where the row holds no finite positive value), and
// rolls each row one place, leaving column 0 zero for the casts that follow.
struct Float8Scales {
  Tensor scale, scale_inv;
};
Float8Scales float8_update_scales(const Tensor& amax_history, const Tensor& scale,
                                  const std::vector<DType>& formats, int margin = 0);

}  // namespace rcuda::ops
