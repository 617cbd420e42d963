// Pooling without autograd (rcuda::max_pool2d and friends record; docs/pooling-normalization.md).
// Arguments and errors are torch.nn.functional's:
// - 2-D pools take (C, H, W) or (N, C, H, W) input, 1-D pools (C, L) or (N, C, L); N may be 0,
//   the other dims may not. Floating dtypes.
// - kernel_size, stride, padding, dilation: one value for every spatial dim or one per dim;
//   an empty stride means kernel_size. kernel_size, stride and dilation > 0, padding >= 0 and
//   at most half the kernel (as torch refuses more), and the dilated kernel no larger than the
//   padded input. ceil_mode rounds the output size up, but a last window must start inside the
//   input or its left padding.
// - Outputs keep the input's memory format (Note [Channels-last layers] in
//   src/ops/layer_layout.h). Max pools' indices are int64 flat offsets in each (n, c) plane,
//   h * W + w (the position for 1-D), PyTorch's; ties keep the first maximum, NaN wins.
// Errors are ShapeError (sizes), ValueError (kernel, stride, padding, dilation, divisor values)
// and DTypeError, each naming the op, the argument and the values.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "rcuda/backend/backend.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// One pooling call in resolved form: what every function below reduces to, and what the
// autograd layer keeps for the backward. Built by the *_options functions, which check the
// arguments that do not depend on the input.
struct PoolOptions {
  const char* name = "max_pool2d";  // the user's op, for messages
  int spatial_dims = 2;             // 1 or 2
  PoolOp op = PoolOp::Max;
  bool adaptive = false;
  std::vector<int64_t> kernel, stride, padding, dilation;  // one per spatial dim
  std::vector<int64_t> output_size;                        // adaptive pools
  bool ceil_mode = false, count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

PoolOptions max_pool_options(int spatial_dims, const std::vector<int64_t>& kernel_size,
                             const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, bool ceil_mode);
PoolOptions avg_pool_options(int spatial_dims, const std::vector<int64_t>& kernel_size,
                             const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& padding, bool ceil_mode,
                             bool count_include_pad, std::optional<int64_t> divisor_override);
PoolOptions adaptive_pool_options(PoolOp op, const std::vector<int64_t>& output_size);

// The output's spatial sizes for an input's (ShapeError / ValueError when the call does not fit).
std::vector<int64_t> pool_output_size(const PoolOptions& options, const Shape& input_shape);

struct PoolForward {
  Tensor out, indices;         // indices: max pools asked for them, else undefined
  bool channels_last = false;  // the memory format the call ran in
};
PoolForward pool_forward(const Tensor& x, const PoolOptions& options, bool with_indices);
// The input gradient (input_shape, in the forward's memory format) from grad_out (the output's
// shape, any strides) and, for max pools, the forward's indices.
Tensor pool_backward(const Tensor& grad_out, const Shape& input_shape, bool channels_last,
                     const Tensor& indices, const PoolOptions& options);

// ---- the torch.nn.functional forms ----------------------------------------------------------
struct PoolWithIndices {
  Tensor out, indices;
};
PoolWithIndices max_pool2d_with_indices(const Tensor& x, const std::vector<int64_t>& kernel_size,
                                        const std::vector<int64_t>& stride = {},
                                        const std::vector<int64_t>& padding = {0},
                                        const std::vector<int64_t>& dilation = {1},
                                        bool ceil_mode = false);
Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0},
                  const std::vector<int64_t>& dilation = {1}, bool ceil_mode = false);
PoolWithIndices max_pool1d_with_indices(const Tensor& x, int64_t kernel_size,
                                        std::optional<int64_t> stride = std::nullopt,
                                        int64_t padding = 0, int64_t dilation = 1,
                                        bool ceil_mode = false);
Tensor max_pool1d(const Tensor& x, int64_t kernel_size,
                  std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                  int64_t dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0}, bool ceil_mode = false,
                  bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool1d(const Tensor& x, int64_t kernel_size,
                  std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
// output_size: one value for both dims or (OH, OW), each >= 1. Window i of a dim covers
// [floor(i * in / out), ceil((i + 1) * in / out)).
Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size);
PoolWithIndices adaptive_max_pool2d(const Tensor& x, const std::vector<int64_t>& output_size);

}  // namespace rcuda::ops
