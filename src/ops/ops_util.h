// Shared plumbing of the op front ends: type promotion, device checks, backend lookup.
//
// Note [Type promotion]
// As torch.result_type: operands fall in three priority groups, tensors with dims, 0-dim
// tensors, and plain numbers (Scalar). Within a group dtypes promote (promote_types). A lower
// group changes the result only when its category is higher (bool < integral < floating <
// complex):
// int32 tensor + int64 0-dim tensor -> int32, int32 tensor + 2.5 -> float32, float16 tensor
// + 2.5 -> float16, bool tensor + 1 -> int64. A floating number counts as the default floating
// dtype (float32 unless changed: Note [Default floating dtype] in rcuda/core/dtype.h), an
// integral one as int64.
#pragma once

#include <functional>
#include <initializer_list>
#include <utility>

#include "rcuda/backend/backend.h"
#include "rcuda/core/error.h"
#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// The operands of a check or a promotion, by reference: `{a, b}` copies no Tensor (each copy
// is two atomic reference-count updates, and a tiny op makes a dozen such lists).
using TensorRefs = std::initializer_list<std::reference_wrapper<const Tensor>>;

DType result_type(TensorRefs tensors, std::initializer_list<Scalar> scalars = {});
// Whether a value of dtype `from` may be written into `to` by an in-place op (torch's canCast:
// no floating into integral, no non-bool into bool).
bool can_cast(DType from, DType to);

// DeviceError naming op and both devices when the tensors are not all on one device.
void check_same_device(const char* op, TensorRefs tensors);
// DTypeError naming op unless t is floating / integral.
void check_floating(const char* op, const char* arg, const Tensor& t);
// DTypeError naming op for float8 tensors, which only convert and feed scaled_mm.
void check_not_float8(const char* op, const Tensor& t);
// DTypeError naming op for complex tensors, which have a few composed ops (rcuda/ops/complex.h).
void check_not_complex(const char* op, const Tensor& t);

inline Backend& backend_of(const Tensor& t) { return backend_for(t.device()); }
inline Tensor new_empty(Shape shape, DType dtype, Device device) {
  return Tensor::empty(std::move(shape), dtype, device);
}
// Note [Elementwise outputs keep channels-last]
// An elementwise result (unary, binary, where, activations and their gradients, dropout) is
// allocated channels-last when an operand of the result's full shape is a channels-last 4-D
// tensor, as PyTorch's TensorIterator keeps the inputs' layout: a ResNet block's relu and
// residual add then hand the next convolution the layout it runs in, instead of a copy back
// to NCHW and another to NHWC. Otherwise the result is contiguous.
Tensor empty_like_operands(Shape shape, DType dtype, Device device, TensorRefs operands);

// t converted to dtype (t itself when it already is).
Tensor cast(const Tensor& t, DType dtype);

// `value` clipped to the range of the integral dtype (for int64, to doubles just inside it). An
// op's bound past the range bounds nothing there, and converting it unclipped to the element
// type would be undefined behaviour (int8 clamp with max 1000 must not become max -24).
double clip_to_integer_range(double value, DType dtype);

}  // namespace rcuda::ops
