// Memory formats of the pooling and normalisation layers' inputs.
//
// Note [Channels-last layers]
// Layers take NCHW-shaped inputs (N, C, spatial...). A channels-last input (its strides those of
// the tensor permuted to (N, spatial..., C) and made contiguous) stays channels-last: outputs,
// indices and input gradients are allocated channels-last too, as PyTorch's
// suggest_memory_format does. Any other non-contiguous input is copied to a contiguous one
// first. A tensor that is both contiguous and channels-last (C == 1, or one spatial element)
// counts as contiguous, and then both layouts give every element the same offset, so a kernel
// may read the format from any tensor of the call.
#pragma once

#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// Strides of `shape` (at least 3 dims) laid out channels-last.
Strides channels_last_strides(const Shape& shape);
// Not contiguous, and channels-last-dense (size-1 dims' strides ignored).
bool is_channels_last(const Tensor& t);
// t itself when it is already in the format, else a copy in it (never a view, never recorded).
Tensor in_format(const Tensor& t, bool channels_last);
// A new uninitialised tensor of `shape` in the format (not a view).
Tensor empty_in_format(const Shape& shape, DType dtype, Device device, bool channels_last);
// A second handle on t's storage without its size-1 dims `dims` (ascending), not marked as a
// view: the layers compute on a 4-D or 3-D form of an output and return the user's shape.
Tensor without_unit_dims(const Tensor& t, const std::vector<int64_t>& dims);

}  // namespace rcuda::ops
