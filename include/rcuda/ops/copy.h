// Copies and conversions: dtype and device changes, contiguity, reshaping, reading values.
#pragma once

#include "rcuda/core/scalar.h"
#include "rcuda/tensor/memory_format.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// dst <- src (broadcast to dst's shape), converting dtype and crossing devices; returns dst.
const Tensor& copy_(const Tensor& dst, const Tensor& src);
// The same tensor when nothing changes (as torch), else a converted copy.
Tensor to(const Tensor& t, DType dtype);
Tensor to(const Tensor& t, Device device);
Tensor to(const Tensor& t, Device device, DType dtype);
Tensor contiguous(const Tensor& t);  // t itself when already contiguous
// t densely in memory format f (as torch's contiguous(memory_format=)): t itself when it already
// has exactly f's strides, else a copy; ChannelsLast needs a 4-D tensor (ShapeError otherwise).
Tensor contiguous(const Tensor& t, MemoryFormat f);
Tensor clone(const Tensor& t);  // always a new contiguous copy
// A view when strides allow, else a copy; one -1 is inferred.
Tensor reshape(const Tensor& t, const Shape& shape);
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
// The value of a one-element tensor (ValueError otherwise), as double/int64/bool per dtype.
Scalar item(const Tensor& t);

}  // namespace rcuda::ops
