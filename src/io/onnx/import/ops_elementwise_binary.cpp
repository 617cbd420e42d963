// ONNX import: the ops of two inputs with numpy broadcasting (arithmetic, comparisons, logic,
// BitShift), Where, and the variadic Max, Min, Sum and Mean (ops_elementwise.h). ONNX gives both
// operands one dtype (Pow excepted), so rcuda's type promotion never widens a result; where
// rcuda's op means something else for integers (Div, Mod with fmod) the kernel composes ONNX's.
#include <optional>
#include <string>
#include <utility>

#include "io/onnx/import/ops_elementwise.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {
namespace {

// Note [Legacy broadcasting]
// Before version 7, Add, Sub, Mul, Div, Pow and the comparisons and logic ops broadcast B only
// when the attribute broadcast is 1: aligned to A's trailing dims (as numpy) or, with the
// attribute axis, to A's dims from axis on ((3, 4) against (2, 3, 4, 5) at axis 1 is (3, 4, 1)).
// Without broadcast the shapes must match, which numpy broadcasting accepts as well.
std::optional<int64_t> legacy_axis(NodeReader& node) {
  if (node.version() >= 7 || node.i("broadcast", 0) == 0 || !node.has("axis")) return std::nullopt;
  return node.i("axis");
}

// B with ones appended so that its dims line up with A's from `axis` on. (Errors at run need not
// name the node: the runner prefixes it.)
Tensor align_to_axis(const Tensor& a, const Tensor& b, int64_t axis) {
  axis = normalize_axis(axis, a.dim(), "attribute axis");
  const int64_t trailing = a.dim() - axis - b.dim();
  if (trailing < 0)
    throw ValueError("B of rank " + std::to_string(b.dim()) + " does not fit A of rank " +
                     std::to_string(a.dim()) + " from axis " + std::to_string(axis));
  Shape shape = b.shape();
  shape.insert(shape.end(), static_cast<size_t>(trailing), 1);
  return reshape(b, shape);
}

// A kernel of two inputs and one output from f(a, b), with the legacy broadcasting of versions
// before 7.
template <typename F>
Kernel two_inputs(NodeReader& node, F f) {
  const std::optional<int64_t> axis = legacy_axis(node);
  return [f = std::move(f), axis](const std::vector<Tensor>& in,
                                  const RunContext&) -> std::vector<Tensor> {
    return {f(in[0], axis ? align_to_axis(in[0], in[1], *axis) : in[1])};
  };
}

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

template <BinaryFn F>
Kernel make_binary(NodeReader& node) {
  return two_inputs(node, F);
}

Tensor plus(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor minus(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor times(const Tensor& a, const Tensor& b) { return mul(a, b); }

// ONNX's integer division truncates toward zero (as C); rcuda's floor_divide rounds toward minus
// infinity, one less where the division is inexact and the signs differ.
Tensor divide(const Tensor& a, const Tensor& b) {
  if (is_floating(a.dtype())) return div(a, b);
  const Tensor q = floor_divide(a, b);
  const Tensor inexact = ne(remainder(a, b), Scalar(0));
  const Tensor signs_differ = logical_xor(lt(a, Scalar(0)), lt(b, Scalar(0)));
  return where(logical_and(inexact, signs_differ), add(q, Scalar(1)), q);
}

// The result has the base's dtype whatever the exponent's. An integer base with a floating
// exponent computes in float64 (as numpy), exact for integers up to 2^53.
Tensor power(const Tensor& base, const Tensor& exponent) {
  const bool through_float64 = !is_floating(base.dtype()) && is_floating(exponent.dtype());
  const Tensor y = through_float64 ? pow(to(base, DType::Float64), to(exponent, DType::Float64))
                                   : pow(base, exponent);
  return y.dtype() == base.dtype() ? y : to(y, base.dtype());
}

// fmod = 0: the sign of the divisor (Python's %, rcuda's remainder); fmod = 1: the sign of the
// dividend (C's fmod), which is remainder of the magnitudes with a's sign, exact for floats too.
Kernel make_mod(NodeReader& node) {
  const int64_t fmod = node.i("fmod", 0);
  if (fmod != 0 && fmod != 1)
    node.fail("attribute fmod must be 0 or 1, got " + std::to_string(fmod));
  if (fmod == 0) return make_binary<remainder>(node);
  return two_inputs(node, [](const Tensor& a, const Tensor& b) {
    return mul(sign(a), remainder(abs(a), abs(b)));
  });
}

// Only uint8 of ONNX's unsigned types exists in rcuda, which has no bit ops: the shift is a
// product or a floor division by 2^n in int64, cast back to uint8 (dropping the high bits as the
// left shift does). Shifts past 8 give 0 either way, so n is clamped to 9 to keep 2^n small.
Kernel make_bit_shift(NodeReader& node) {
  const std::string direction = node.s("direction");
  if (direction != "LEFT" && direction != "RIGHT")
    node.fail("attribute direction must be \"LEFT\" or \"RIGHT\", got \"" + direction + "\"");
  const bool left = direction == "LEFT";
  return [left](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    if (x.dtype() != DType::UInt8 || in[1].dtype() != DType::UInt8)
      throw ValueError(std::string("BitShift of ") + dtype_name(x.dtype()) +
                       " is not supported by rcuda's ONNX import (uint8 only)");
    const Tensor n = clamp(to(in[1], DType::Int64), Scalar(0), Scalar(9));
    const Tensor scale = pow(Scalar(int64_t{2}), n);
    const Tensor wide = to(x, DType::Int64);
    return {to(left ? mul(wide, scale) : floor_divide(wide, scale), DType::UInt8)};
  };
}

Kernel make_where(NodeReader& /*node*/) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {where(in[0], in[1], in[2])};
  };
}

// ---- variadic ------------------------------------------------------------------------------

// The inputs folded left to right by f (one input is returned as it is).
template <typename F>
Tensor fold(const std::vector<Tensor>& in, F f) {
  Tensor acc = in[0];
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].defined()) acc = f(acc, in[i]);
  return acc;
}

Kernel make_max(NodeReader& /*node*/) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {fold(in, maximum)};
  };
}

Kernel make_min(NodeReader& /*node*/) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {fold(in, minimum)};
  };
}

Kernel make_sum(NodeReader& /*node*/) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {fold(in, plus)};
  };
}

Kernel make_mean(NodeReader& /*node*/) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {div(fold(in, plus), static_cast<double>(in.size()))};
  };
}

}  // namespace

std::vector<ImportOp> elementwise_binary_ops() {
  return {
      {"Add", make_binary<plus>},
      {"Sub", make_binary<minus>},
      {"Mul", make_binary<times>},
      {"Div", make_binary<divide>},
      {"Pow", make_binary<power>},
      {"Mod", make_mod, 10},
      {"Equal", make_binary<eq>},
      {"Greater", make_binary<gt>},
      {"GreaterOrEqual", make_binary<ge>, 12},
      {"Less", make_binary<lt>},
      {"LessOrEqual", make_binary<le>, 12},
      {"And", make_binary<logical_and>},
      {"Or", make_binary<logical_or>},
      {"Xor", make_binary<logical_xor>},
      {"BitShift", make_bit_shift, 11},
      {"Where", make_where, 9},
      {"Max", make_max},
      {"Min", make_min},
      {"Sum", make_sum},
      {"Mean", make_mean},
  };
}

}  // namespace rcuda::io::onnx_import
