// Elementwise op front ends: promotion (Note [Type promotion] in ops_util.h), broadcasting,
// dtype checks, output allocation, then one backend primitive.
#include "rcuda/ops/elementwise.h"

#include <cstdint>

#include "complex_ops.h"
#include "ops_util.h"
#include "rcuda/core/op.h"
#include "rcuda/ops/complex.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"

namespace rcuda::ops {
namespace {

using ops::backend_of;
using ops::cast;

// The kernel of each named one-tensor op; names come from rcuda/core/op.h's one table.
struct UnaryInfo {
  OpId id;
  UnaryOp op;
  bool floating_result;  // integral input is converted to float32 first (exp, sin, ...)
};

constexpr UnaryInfo kUnary[] = {
    {OpId::Neg, UnaryOp::Neg, false},
    {OpId::Abs, UnaryOp::Abs, false},
    {OpId::Sign, UnaryOp::Sign, false},
    {OpId::Exp, UnaryOp::Exp, true},
    {OpId::Expm1, UnaryOp::Expm1, true},
    {OpId::Log, UnaryOp::Log, true},
    {OpId::Log1p, UnaryOp::Log1p, true},
    {OpId::Sqrt, UnaryOp::Sqrt, true},
    {OpId::Rsqrt, UnaryOp::Rsqrt, true},
    {OpId::Sin, UnaryOp::Sin, true},
    {OpId::Cos, UnaryOp::Cos, true},
    {OpId::Tanh, UnaryOp::Tanh, true},
    {OpId::Sigmoid, UnaryOp::Sigmoid, true},
    {OpId::Relu, UnaryOp::Relu, false},
    {OpId::Gelu, UnaryOp::Gelu, true},
    {OpId::Silu, UnaryOp::Silu, true},
    {OpId::Floor, UnaryOp::Floor, false},
    {OpId::Ceil, UnaryOp::Ceil, false},
    {OpId::Round, UnaryOp::Round, false},
    {OpId::LogicalNot, UnaryOp::LogicalNot, false},
    {OpId::Tan, UnaryOp::Tan, true},
    {OpId::Asin, UnaryOp::Asin, true},
    {OpId::Acos, UnaryOp::Acos, true},
    {OpId::Atan, UnaryOp::Atan, true},
    {OpId::Sinh, UnaryOp::Sinh, true},
    {OpId::Cosh, UnaryOp::Cosh, true},
    {OpId::Asinh, UnaryOp::Asinh, true},
    {OpId::Acosh, UnaryOp::Acosh, true},
    {OpId::Atanh, UnaryOp::Atanh, true},
    {OpId::Trunc, UnaryOp::Trunc, false},
    {OpId::Erf, UnaryOp::Erf, true},
    {OpId::Erfc, UnaryOp::Erfc, true},
    {OpId::Erfinv, UnaryOp::Erfinv, true},
    {OpId::Lgamma, UnaryOp::Lgamma, true},
    {OpId::Digamma, UnaryOp::Digamma, true},
    {OpId::Log2, UnaryOp::Log2, true},
    {OpId::Log10, UnaryOp::Log10, true},
    {OpId::Exp2, UnaryOp::Exp2, true},
    {OpId::Reciprocal, UnaryOp::Reciprocal, true},
};

const UnaryInfo& unary_info(const char* name) {
  const std::optional<OpId> id = op_from_name(name);
  if (id)
    for (const UnaryInfo& u : kUnary)
      if (u.id == *id) return u;
  throw ValueError(std::string("unary_op: unknown op '") + name + "'");
}

Tensor run_unary(const char* name, UnaryOp op, bool floating_result, const Tensor& x,
                 const UnaryArgs& args = {}) {
  ops::check_not_float8(name, x);
  ops::check_not_complex(name, x);
  if (op == UnaryOp::Neg)
    RCUDA_CHECK(x.dtype() != DType::Bool, DTypeError,
                "neg: negation of a bool tensor is not supported (use logical_not)");
  if (op == UnaryOp::Relu || op == UnaryOp::Abs)
    RCUDA_CHECK(x.dtype() != DType::Bool, DTypeError, name, ": not supported for bool tensors");
  const DType out_dtype = op == UnaryOp::LogicalNot                    ? DType::Bool
                          : floating_result && !is_floating(x.dtype()) ? default_float_dtype()
                                                                       : x.dtype();
  const Tensor in = op == UnaryOp::LogicalNot ? x : cast(x, out_dtype);
  Tensor out = ops::empty_like_operands(x.shape(), out_dtype, x.device(), {x});
  if (out.numel() > 0) backend_of(x).unary(op, out, in, args);
  return out;
}

// By op rather than by name: the public ops find their entry with integer compares.
const UnaryInfo& unary_info(UnaryOp op) {
  for (const UnaryInfo& u : kUnary)
    if (u.op == op) return u;
  throw InternalError("unary: an op missing from the name table");
}

Tensor unary(const UnaryInfo& u, const Tensor& x) {
  if (is_complex(x.dtype())) {  // the two unary ops composed for complex tensors
    if (u.op == UnaryOp::Abs) return complex_abs(x);
    if (u.op == UnaryOp::Neg) return complex_neg(x);
  }
  return run_unary(op_name(u.id), u.op, u.floating_result, x);
}
Tensor unary(UnaryOp op, const Tensor& x) { return unary(unary_info(op), x); }

// The kernel of each named two-operand op; names come from rcuda/core/op.h's one table.
struct BinaryInfo {
  OpId id;
  BinaryOp op;
};

constexpr BinaryInfo kBinary[] = {
    {OpId::Add, BinaryOp::Add},
    {OpId::Sub, BinaryOp::Sub},
    {OpId::Mul, BinaryOp::Mul},
    {OpId::Div, BinaryOp::Div},
    {OpId::Remainder, BinaryOp::Remainder},
    {OpId::Pow, BinaryOp::Pow},
    {OpId::Maximum, BinaryOp::Maximum},
    {OpId::Minimum, BinaryOp::Minimum},
    {OpId::Atan2, BinaryOp::Atan2},
    {OpId::Eq, BinaryOp::Eq},
    {OpId::Ne, BinaryOp::Ne},
    {OpId::Lt, BinaryOp::Lt},
    {OpId::Le, BinaryOp::Le},
    {OpId::Gt, BinaryOp::Gt},
    {OpId::Ge, BinaryOp::Ge},
    {OpId::LogicalAnd, BinaryOp::LogicalAnd},
    {OpId::LogicalOr, BinaryOp::LogicalOr},
    {OpId::LogicalXor, BinaryOp::LogicalXor},
};

const BinaryInfo& binary_info(const char* name) {
  const std::optional<OpId> id = op_from_name(name);
  if (id)
    for (const BinaryInfo& b : kBinary)
      if (b.id == *id) return b;
  throw ValueError(std::string("binary_op: unknown op '") + name + "'");
}

// The op's name, for messages.
const char* binary_name(BinaryOp op) {
  for (const BinaryInfo& b : kBinary)
    if (b.op == op) return op_name(b.id);
  throw InternalError("binary_op: an op without a name in kBinary");
}

// The dtype the primitive computes in, given the promoted dtype of the operands.
DType compute_dtype(BinaryOp op, const char* name, DType promoted) {
  if (op == BinaryOp::Div || op == BinaryOp::Atan2 ||
      (op == BinaryOp::Pow && promoted == DType::Bool))
    return is_floating(promoted) ? promoted : default_float_dtype();
  if (promoted == DType::Bool) {
    RCUDA_CHECK(op != BinaryOp::Sub, DTypeError,
                "sub: subtraction of bool tensors is not supported (use logical_xor)");
    RCUDA_CHECK(op != BinaryOp::Remainder, DTypeError, "remainder: not supported for bool tensors");
  }
  return promoted;
}

Tensor run_binary(BinaryOp op, const char* name, const Tensor& a, const Tensor& b, DType promoted) {
  if (is_complex(promoted)) return complex_binary(op, name, a, b, promoted);
  ops::check_same_device(name, {a, b});
  ops::check_not_float8(name, a);
  ops::check_not_float8(name, b);
  const DType compute = compute_dtype(op, name, promoted);
  const DType out_dtype = is_comparison_or_logical(op) ? DType::Bool : compute;
  Tensor out = ops::empty_like_operands(broadcast_shapes(a.shape(), b.shape(), name), out_dtype,
                                        a.device(), {a, b});
  if (out.numel() == 0) return out;
  const Shape& shape = out.shape();
  // Operands already in the compute dtype and the output's shape go to the backend as they are.
  const auto fit = [&](const Tensor& t) {
    const Tensor x = cast(t, compute);
    return x.shape() == shape ? x : x.expand(shape);
  };
  if (a.dtype() == compute && b.dtype() == compute && a.shape() == shape && b.shape() == shape)
    backend_of(a).binary(op, out, a, b);
  else
    backend_of(a).binary(op, out, fit(a), fit(b));
  return out;
}

Tensor binary(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  if (op == BinaryOp::Sub)
    RCUDA_CHECK(a.dtype() != DType::Bool && b.dtype() != DType::Bool, DTypeError,
                "sub: subtraction with a bool tensor is not supported (use logical_xor or "
                "convert with to())");
  return run_binary(op, name, a, b, ops::result_type({a, b}));
}

// Note [Numbers as operands]
// A number operand is a wrapped number in torch's terms: it does not decide the dtype unless its
// category is higher (ops::result_type). Its value is converted to the promoted dtype, as fill()
// converts, and the backend takes it by value (Backend::binary_number): on CUDA a 0-dim tensor
// would cost an allocation and a fill's launch besides the op's own, doubling the host time of
// `x * 0.5`. Where the op computes in another dtype than the promoted one (an integer tensor
// divided by an integer) the number keeps the 0-dim tensor, so that it converts exactly as the
// tensor operand does.
Tensor binary_with_number(BinaryOp op, const char* name, const Tensor& t, const Scalar& number,
                          bool number_first) {
  if (op == BinaryOp::Sub)  // on either side, as torch and as binary() of two tensors
    RCUDA_CHECK(t.dtype() != DType::Bool && number.kind() != Scalar::Kind::Bool, DTypeError,
                "sub: subtraction with a bool tensor is not supported (use logical_xor or "
                "convert with to())");
  const DType promoted = ops::result_type({t}, {number});
  const DType compute = is_complex(promoted) ? promoted : compute_dtype(op, name, promoted);
  if (compute != promoted || is_complex(promoted)) {
    const Tensor n = scalar_tensor(number, promoted, t.device());
    return number_first ? run_binary(op, name, n, t, promoted)
                        : run_binary(op, name, t, n, promoted);
  }
  ops::check_not_float8(name, t);
  const DType out_dtype = is_comparison_or_logical(op) ? DType::Bool : compute;
  Tensor out = ops::empty_like_operands(t.shape(), out_dtype, t.device(), {t});
  if (out.numel() == 0) return out;
  // The CPU's loops see a zero divisor as they go; a kernel cannot, but a number is known here
  // (as the kernel sees it: 256 is an int8 zero).
  if (!number_first && op == BinaryOp::Remainder && !is_floating(compute)) {
    const int bits = 8 * static_cast<int>(element_size(compute));
    const uint64_t v = static_cast<uint64_t>(number.to_int());
    RCUDA_CHECK((bits >= 64 ? v : v & ((uint64_t{1} << bits) - 1)) != 0, ValueError,
                "remainder: integer division by zero");
  }
  backend_of(t).binary_number(op, out, cast(t, compute), number, number_first);
  return out;
}

Tensor binary(BinaryOp op, const char* name, const Tensor& a, const Scalar& b) {
  return binary_with_number(op, name, a, b, /*number_first=*/false);
}

Tensor binary(BinaryOp op, const char* name, const Scalar& a, const Tensor& b) {
  return binary_with_number(op, name, b, a, /*number_first=*/true);
}

bool is_one(const Scalar& s) { return s.to_double() == 1.0; }

// a + alpha * b computed in the promoted dtype, as torch: alpha scales b after promotion.
Tensor add_scaled(BinaryOp op, const char* name, const Tensor& a, const Tensor& b,
                  const Scalar& alpha) {
  if (is_one(alpha)) return binary(op, name, a, b);
  const DType dtype = ops::result_type({a, b});
  RCUDA_CHECK(is_floating(dtype) || is_complex(dtype) || !alpha.is_floating(), DTypeError, name,
              ": for integral input tensors, alpha must not be a floating point number (got ",
              alpha.to_double(), ")");
  return binary(op, name, a, binary(BinaryOp::Mul, "mul", cast(b, dtype), alpha));
}

}  // namespace

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, x); }
Tensor expm1(const Tensor& x) { return unary(UnaryOp::Expm1, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::Log, x); }
Tensor log1p(const Tensor& x) { return unary(UnaryOp::Log1p, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::Rsqrt, x); }
Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::Silu, x); }
Tensor floor(const Tensor& x) { return unary(UnaryOp::Floor, x); }
Tensor ceil(const Tensor& x) { return unary(UnaryOp::Ceil, x); }
Tensor round(const Tensor& x) { return unary(UnaryOp::Round, x); }
Tensor logical_not(const Tensor& x) { return unary(UnaryOp::LogicalNot, x); }
Tensor tan(const Tensor& x) { return unary(UnaryOp::Tan, x); }
Tensor asin(const Tensor& x) { return unary(UnaryOp::Asin, x); }
Tensor acos(const Tensor& x) { return unary(UnaryOp::Acos, x); }
Tensor atan(const Tensor& x) { return unary(UnaryOp::Atan, x); }
Tensor sinh(const Tensor& x) { return unary(UnaryOp::Sinh, x); }
Tensor cosh(const Tensor& x) { return unary(UnaryOp::Cosh, x); }
Tensor asinh(const Tensor& x) { return unary(UnaryOp::Asinh, x); }
Tensor acosh(const Tensor& x) { return unary(UnaryOp::Acosh, x); }
Tensor atanh(const Tensor& x) { return unary(UnaryOp::Atanh, x); }
Tensor trunc(const Tensor& x) { return unary(UnaryOp::Trunc, x); }
Tensor erf(const Tensor& x) { return unary(UnaryOp::Erf, x); }
Tensor erfc(const Tensor& x) { return unary(UnaryOp::Erfc, x); }
Tensor erfinv(const Tensor& x) { return unary(UnaryOp::Erfinv, x); }
Tensor lgamma(const Tensor& x) { return unary(UnaryOp::Lgamma, x); }
Tensor digamma(const Tensor& x) { return unary(UnaryOp::Digamma, x); }
Tensor log2(const Tensor& x) { return unary(UnaryOp::Log2, x); }
Tensor log10(const Tensor& x) { return unary(UnaryOp::Log10, x); }
Tensor exp2(const Tensor& x) { return unary(UnaryOp::Exp2, x); }
Tensor reciprocal(const Tensor& x) { return unary(UnaryOp::Reciprocal, x); }
Tensor atan2(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Atan2, "atan2", a, b); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  RCUDA_CHECK(approximate == "none" || approximate == "tanh", ValueError,
              "gelu: approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  return run_unary("gelu", approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu, true, x);
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  RCUDA_CHECK(min || max, ValueError, "clamp: at least one of min and max must be given");
  RCUDA_CHECK(x.dtype() != DType::Bool, DTypeError, "clamp: not supported for bool tensors");
  // A floating bound on an integral tensor makes the result float32, as torch.
  DType dtype = x.dtype();
  if (min) dtype = ops::result_type({Tensor::empty({}, dtype)}, {*min});
  if (max) dtype = ops::result_type({Tensor::empty({}, dtype)}, {*max});
  UnaryArgs args;
  args.has_min = min.has_value();
  args.has_max = max.has_value();
  args.min = min ? min->to_double() : 0.0;
  args.max = max ? max->to_double() : 0.0;
  if (!is_floating(dtype)) {
    args.min = clip_to_integer_range(args.min, dtype);
    args.max = clip_to_integer_range(args.max, dtype);
  }
  return run_unary("clamp", UnaryOp::Clamp, false, cast(x, dtype), args);
}

Tensor pow(const Tensor& x, const Scalar& exponent) {
  const DType dtype = ops::result_type({x}, {exponent});
  RCUDA_CHECK(dtype != DType::Bool, DTypeError, "pow: not supported for bool tensors");
  RCUDA_CHECK(is_floating(dtype) || exponent.to_int() >= 0, ValueError,
              "pow: integers to negative integer powers are not allowed (exponent ",
              exponent.to_int(), ")");
  UnaryArgs args;
  args.exponent = exponent.to_double();
  return run_unary("pow", UnaryOp::PowScalar, false, cast(x, dtype), args);
}

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_scaled(BinaryOp::Add, "add", a, b, alpha);
}
Tensor add(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Add, "add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_scaled(BinaryOp::Sub, "sub", a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Sub, "sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, "mul", a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Mul, "mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, "div", a, b); }
Tensor div(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Div, "div", a, b); }
Tensor remainder(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Remainder, "remainder", a, b);
}
Tensor remainder(const Tensor& a, const Scalar& b) {
  return binary(BinaryOp::Remainder, "remainder", a, b);
}
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, "pow", a, b); }
Tensor pow(const Scalar& a, const Tensor& b) { return binary(BinaryOp::Pow, "pow", a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Maximum, "maximum", a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Minimum, "minimum", a, b);
}
Tensor eq(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Eq, "eq", a, b); }
Tensor eq(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Eq, "eq", a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ne, "ne", a, b); }
Tensor ne(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Ne, "ne", a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Lt, "lt", a, b); }
Tensor lt(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Lt, "lt", a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Le, "le", a, b); }
Tensor le(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Le, "le", a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Gt, "gt", a, b); }
Tensor gt(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Gt, "gt", a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Ge, "ge", a, b); }
Tensor ge(const Tensor& a, const Scalar& b) { return binary(BinaryOp::Ge, "ge", a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::LogicalAnd, "logical_and", a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::LogicalOr, "logical_or", a, b);
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::LogicalXor, "logical_xor", a, b);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  ops::check_same_device("where", {condition, a, b});
  RCUDA_CHECK(condition.dtype() == DType::Bool, DTypeError,
              "where: condition must be a bool tensor, got ", dtype_name(condition.dtype()));
  const Shape shape =
      broadcast_shapes(condition.shape(), broadcast_shapes(a.shape(), b.shape(), "where"), "where");
  const DType dtype = ops::result_type({a, b});
  Tensor out = ops::empty_like_operands(shape, dtype, a.device(), {a, b, condition});
  if (out.numel() > 0)
    backend_of(a).where(out, condition.expand(shape), cast(a, dtype).expand(shape),
                        cast(b, dtype).expand(shape));
  return out;
}

Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  const DType dtype = ops::result_type({b}, {a});
  return where(condition, scalar_tensor(a, dtype, b.device()), cast(b, dtype));
}

Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b) {
  const DType dtype = ops::result_type({a}, {b});
  return where(condition, cast(a, dtype), scalar_tensor(b, dtype, a.device()));
}

namespace {

// In place: self = self (op) other, written straight into self (no temporary) once the result
// dtype can be cast to self's and other broadcasts to self's shape.
const Tensor& binary_inplace(BinaryOp op, const char* name, const Tensor& self,
                             const Tensor& other) {
  ops::check_same_device(name, {self, other});
  const DType result = ops::result_type({self, other});
  RCUDA_CHECK(ops::can_cast(result, self.dtype()), DTypeError, name, ": result type ",
              dtype_name(result), " cannot be cast to the tensor's dtype ",
              dtype_name(self.dtype()));
  RCUDA_CHECK(broadcast_shapes(self.shape(), other.shape(), name) == self.shape(), ShapeError, name,
              ": the result's shape ",
              shape_str(broadcast_shapes(self.shape(), other.shape(), name)),
              " does not match the tensor's shape ", shape_str(self.shape()));
  if (self.numel() == 0) return self;
  self.storage()->bump_version();  // Note [Version counter] in rcuda/tensor/storage.h
  if (result != self.dtype()) {
    // Mixed dtypes (int32 += float16 is refused above; float32 += float64 computes in float64):
    // compute in the promoted dtype, then write back.
    return copy_(self, binary(op, name, self, other));
  }
  Tensor rhs = cast(other, self.dtype());
  // An operand that shares self's memory in another layout would be read after being written.
  if (rhs.storage() == self.storage()) rhs = clone(rhs);
  backend_of(self).binary(op, self, self, rhs.expand(self.shape()));
  return self;
}

}  // namespace

const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (!is_one(alpha)) {
    const Tensor scaled = mul(cast(other, ops::result_type({self, other})), alpha);
    return binary_inplace(BinaryOp::Add, "add_", self, scaled);
  }
  return binary_inplace(BinaryOp::Add, "add_", self, other);
}
const Tensor& mul_(const Tensor& self, const Tensor& other) {
  return binary_inplace(BinaryOp::Mul, "mul_", self, other);
}

DType result_type(const Tensor& a, const Tensor& b) { return ops::result_type({a, b}); }
DType result_type(const Tensor& a, const Scalar& b) { return ops::result_type({a}, {b}); }

namespace {

// floor_divide has no kernel of its own (it is composed): the name is checked through the one
// table of op names (rcuda/core/op.h).
bool is_floor_divide(const char* name) {
  const std::optional<OpId> op = op_from_name(name);
  return op.has_value() && *op == OpId::FloorDivide;
}

}  // namespace

Tensor unary_op(const char* name, const Tensor& x) { return unary(unary_info(name), x); }
UnaryOp unary_op_from_name(const char* name) { return unary_info(name).op; }
BinaryOp binary_op_from_name(const char* name) { return binary_info(name).op; }
Tensor binary_op(const char* name, const Tensor& a, const Tensor& b) {
  if (is_floor_divide(name)) return floor_divide(a, b);  // composed, no kernel
  const BinaryInfo& info = binary_info(name);
  return binary(info.op, op_name(info.id), a, b);
}
Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  return binary(op, binary_name(op), a, b);
}
Tensor binary_op(BinaryOp op, const Tensor& a, const Scalar& b) {
  return binary(op, binary_name(op), a, b);
}
Tensor binary_op(BinaryOp op, const Scalar& a, const Tensor& b) {
  return binary(op, binary_name(op), a, b);
}
Tensor binary_op(const char* name, const Tensor& a, const Scalar& b) {
  if (is_floor_divide(name)) return floor_divide(a, b);
  const BinaryInfo& info = binary_info(name);
  return binary(info.op, op_name(info.id), a, b);
}
Tensor binary_op(const char* name, const Scalar& a, const Tensor& b) {
  if (is_floor_divide(name))
    return floor_divide(scalar_tensor(a, ops::result_type({b}, {a}), b.device()), b);
  const BinaryInfo& info = binary_info(name);
  return binary(info.op, op_name(info.id), a, b);
}

}  // namespace rcuda::ops
