// Elementwise math with PyTorch's broadcasting and type promotion
// (Note [Type promotion] in src/ops/promotion.h).
#pragma once

#include <optional>
#include <string>

#include "rcuda/backend/backend.h"
#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// Unary. Floating functions of integral or bool input return float32, as torch.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor floor(const Tensor& x);  // identity on integral dtypes
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor pow(const Tensor& x, const Scalar& exponent);
Tensor logical_not(const Tensor& x);
// The Math group, as torch: floating results (trunc keeps integral dtypes), NaN outside the
// domain (asin of 2, lgamma's and digamma's poles give inf or NaN as torch).
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor erfinv(const Tensor& x);
Tensor lgamma(const Tensor& x);
Tensor digamma(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor reciprocal(const Tensor& x);

// Binary with broadcasting; a Scalar operand takes part in promotion only by category.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give float32
Tensor div(const Tensor& a, const Scalar& b);
Tensor remainder(const Tensor& a, const Tensor& b);  // sign of the divisor, as Python
Tensor remainder(const Tensor& a, const Scalar& b);
// Rounded toward minus infinity, as torch.floor_divide (a == floor_divide(a, b) * b +
// remainder(a, b)); integer division by zero is a ValueError; integers exact below 2^53.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Scalar& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// atan2(a, b): the angle of the point (b, a), floating (integral operands give float32).
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
// condition (bool) ? a : b, all three broadcast together.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);

// In place: the result must fit self's dtype and shape (DTypeError / ShapeError otherwise).
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& other);

// The dtype `a (op) b` gives, by torch's rules (torch.result_type; Note [Type promotion] in
// src/ops/ops_util.h): for bindings that build a number's tensor or compose ops.
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);

// The general entry points the named functions use, for bindings that map names to ops.
Tensor unary_op(const char* name, const Tensor& x);
Tensor binary_op(const char* name, const Tensor& a, const Tensor& b);
Tensor binary_op(const char* name, const Tensor& a, const Scalar& b);
Tensor binary_op(const char* name, const Scalar& a, const Tensor& b);
// The same for an op already looked up (binary_op_from_name), without a second lookup.
Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor binary_op(BinaryOp op, const Tensor& a, const Scalar& b);
Tensor binary_op(BinaryOp op, const Scalar& a, const Tensor& b);
// The enum of a named op (the one table of names); ValueError for an unknown name.
// "floor_divide" has no enum (it is composed): binary_op_from_name refuses it.
UnaryOp unary_op_from_name(const char* name);
BinaryOp binary_op_from_name(const char* name);

}  // namespace rcuda::ops
