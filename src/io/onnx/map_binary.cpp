// Elementwise ops of two operands (two tensors, or a tensor and a number), comparisons, logical
// ops, where and masked_fill.
#include <utility>

#include "io/onnx/mappings.h"

namespace rcuda::io::onnx_export {
namespace {

// The dtype torch computes a tensor and a number in: the tensor's, unless the number's kind is
// higher (a float number with an integer tensor: the default float dtype; an integer with bool).
DType with_number(DType tensor, const Scalar& number) {
  if (is_floating(tensor)) return tensor;
  if (number.is_floating()) return default_float_dtype();
  if (tensor == DType::Bool && number.kind() != Scalar::Kind::Bool) return DType::Int64;
  return tensor;
}

bool has_number(const Builder& b) { return b.node().inputs.size() < 2 && b.has_attr("other"); }

// The dtype both operands are brought to before a comparison.
DType common_dtype(const Builder& b) {
  if (has_number(b)) return with_number(b.in_value(0).dtype, b.scalar_attr("other"));
  return promote_types(b.in_value(0).dtype, b.in_value(1).dtype);
}

// The two operands in `dtype`, left first: two tensors, or the tensor and its number as a
// constant (number_first: the number was the left operand, as in 2 - x).
std::pair<std::string, std::string> operands(Builder& b, DType dtype) {
  if (!has_number(b)) {
    if (b.node().inputs.size() < 2) b.fail("needs two operands");
    return {b.in_as(0, dtype), b.in_as(1, dtype)};
  }
  const std::string number = b.number(b.scalar_attr("other"), dtype);
  const std::string tensor = b.in_as(0, dtype);
  if (b.attr_or<bool>("number_first", false)) return {number, tensor};
  return {tensor, number};
}

}  // namespace

void arithmetic(Builder& b, const char* onnx_op) {
  const DType dtype = b.out_value().dtype;
  // R's 1-based indices shifted to 0-based (index_from_one_based): a model input of indices is
  // 0-based in the file, as ONNX and PyTorch expect, so the shift stays in R (docs/onnx.md).
  if (b.attr_or<bool>("one_based_index", false) && b.in_value(0).kind == graph::ValueKind::Input) {
    b.add("Identity", {b.in(0)}, {b.out()});
    return;
  }
  auto [lhs, rhs] = operands(b, dtype);
  // add and sub scale their second tensor: a + alpha * b.
  if (b.has_attr("alpha")) rhs = b.add1("Mul", {rhs, b.number(b.scalar_attr("alpha"), dtype)});
  b.add(onnx_op, {lhs, rhs}, {b.out()});
}

// torch's remainder takes the divisor's sign (Python's %): ONNX's Mod with fmod=0 for integers;
// for floats, where ONNX requires fmod=1 (C's fmod), a - floor(a / b) * b.
// atan2(y, x) from Atan(y / x), moved by pi into the half-plane x < 0 (towards y's sign) and
// Sign(y) * pi / 2 on the line x = 0 (which also gives atan2(0, 0) = 0). Signed zeros and two
// infinite operands are where it differs from torch: atan2(-0, -1) is pi here, not -pi, and
// atan2(inf, inf) is NaN.
void atan2(Builder& b) {
  constexpr double kPi = 3.14159265358979323846;
  const DType dtype = b.out_value().dtype;
  const auto [y, x] = operands(b, dtype);
  const std::string zero = b.number(0.0, dtype);
  const std::string quotient = b.add1("Atan", {b.add1("Div", {y, x})});
  const std::string towards_y =
      b.add1("Where", {b.add1("Less", {y, zero}), b.number(-kPi, dtype), b.number(kPi, dtype)});
  const std::string left_half =
      b.add1("Where", {b.add1("Less", {x, zero}), b.add1("Add", {quotient, towards_y}), quotient});
  const std::string on_axis = b.add1("Mul", {b.add1("Sign", {y}), b.number(kPi / 2, dtype)});
  b.add("Where", {b.add1("Equal", {x, zero}), on_axis, left_half}, {b.out()});
}

void remainder(Builder& b) {
  const DType dtype = b.out_value().dtype;
  const auto [lhs, rhs] = operands(b, dtype);
  if (!is_floating(dtype)) {
    set_attr(b.add("Mod", {lhs, rhs}, {b.out()}), "fmod", 0);
    return;
  }
  const std::string q = b.add1("Floor", {b.add1("Div", {lhs, rhs})});
  b.add("Sub", {lhs, b.add1("Mul", {q, rhs})}, {b.out()});
}

// floor(a / b). ONNX's integer Div truncates, so integers subtract the floored remainder first:
// (a - mod(a, b)) / b divides exactly.
void floor_divide(Builder& b) {
  const DType dtype = b.out_value().dtype;
  const auto [lhs, rhs] = operands(b, dtype);
  if (is_floating(dtype)) {
    b.add("Floor", {b.add1("Div", {lhs, rhs})}, {b.out()});
    return;
  }
  onnx::NodeProto* mod = b.add("Mod", {lhs, rhs}, {});
  set_attr(mod, "fmod", 0);
  b.add("Div", {b.add1("Sub", {lhs, mod->output(0)}), rhs}, {b.out()});
}

void comparison(Builder& b, const char* onnx_op, bool negate) {
  const auto [lhs, rhs] = operands(b, common_dtype(b));
  if (!negate) {
    b.add(onnx_op, {lhs, rhs}, {b.out()});
    return;
  }
  b.add("Not", {b.add1(onnx_op, {lhs, rhs})}, {b.out()});
}

void logical(Builder& b, const char* onnx_op) {
  const auto [lhs, rhs] = operands(b, DType::Bool);
  b.add(onnx_op, {lhs, rhs}, {b.out()});
}

void where(Builder& b) {
  if (b.node().inputs.size() < 3) b.fail("needs a condition and two tensors");
  const DType dtype = b.out_value().dtype;
  b.add("Where", {b.in_as(0, DType::Bool), b.in_as(1, dtype), b.in_as(2, dtype)}, {b.out()});
}

void masked_fill(Builder& b) {
  const DType dtype = b.out_value().dtype;
  b.add("Where",
        {b.in_as(1, DType::Bool), b.number(b.scalar_attr("value"), dtype), b.in_as(0, dtype)},
        {b.out()});
}

}  // namespace rcuda::io::onnx_export
