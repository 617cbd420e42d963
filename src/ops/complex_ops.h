// The complex arithmetic the real ops' entry points route to when an operand is complex
// (src/ops/elementwise.cpp; Note [Complex tensors] in rcuda/ops/complex.h). Internal to ops.
#pragma once

#include "rcuda/backend/backend.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// a op b for op Add, Sub, Mul, Div, Eq or Ne (DTypeError naming `name` for any other), in the
// promoted complex `dtype`.
Tensor complex_binary(BinaryOp op, const char* name, const Tensor& a, const Tensor& b, DType dtype);
Tensor complex_neg(const Tensor& z);

}  // namespace rcuda::ops
