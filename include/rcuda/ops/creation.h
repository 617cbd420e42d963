// Creating tensors: filled, ranges, identity, and from host data.
#pragma once

#include <optional>

#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda {

struct TensorOptions {
  DType dtype = default_float_dtype();  // Note [Default floating dtype] in rcuda/core/dtype.h
  Device device;
  TensorOptions() = default;
  TensorOptions(DType d, Device dev = Device()) : dtype(d), device(dev) {}  // NOLINT
};

}  // namespace rcuda

// The no-grad layer (Note [Two layers of ops] in docs/autograd.md): rcuda::ops::* never
// records; the public rcuda::* functions (rcuda/autograd/api.h) record, then call these.
namespace rcuda::ops {

Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, const Scalar& value, TensorOptions options = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, const Scalar& value);

// Values start, start+step, ... strictly below end (above, for negative step), as torch.arange.
// With no dtype: int64 when start, end and step are all integers, else float32.
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<DType> dtype = std::nullopt, Device device = Device());
// `steps` points from start to end inclusive.
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {});
// n x m identity (m = n when negative).
Tensor eye(int64_t n, int64_t m = -1, TensorOptions options = {});

// Copies `numel(shape)` contiguous row-major elements of `dtype` from host memory.
Tensor from_data(const void* data, const Shape& shape, DType dtype, Device device = Device());
// 0-dim tensor holding value, in `dtype`.
Tensor scalar_tensor(const Scalar& value, DType dtype, Device device = Device());

// Writes value into every element of t (a view is filled in place); returns t.
const Tensor& fill_(const Tensor& t, const Scalar& value);

}  // namespace rcuda::ops
