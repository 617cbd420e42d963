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
  auto [lhs, rhs] = operands(b, dtype);
  // add and sub scale their second tensor: a + alpha * b.
  if (b.has_attr("alpha")) rhs = b.add1("Mul", {rhs, b.number(b.scalar_attr("alpha"), dtype)});
  b.add(onnx_op, {lhs, rhs}, {b.out()});
}

// torch's remainder takes the divisor's sign (Python's %): ONNX's Mod with fmod=0 for integers;
// for floats, where ONNX requires fmod=1 (C's fmod), a - floor(a / b) * b.
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
