// ONNX import: the elementwise ops (kernel.h, Note [Kernels run the public ops]). This file
// holds the one-input math functions and joins the family's table; the activations, the
// two-input and variadic ops, and Cast/Dropout have files of their own (ops_elementwise.h).
#include "io/onnx/import/ops_elementwise.h"

#include <limits>

#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {

namespace elementwise_detail {

Tensor computable(const Tensor& x) { return is_float8(x.dtype()) ? to(x, DType::Float32) : x; }

}  // namespace elementwise_detail

namespace {

using elementwise_detail::computable;

// The ONNX op is an rcuda op of one tensor with the same meaning on every dtype ONNX lists for
// it (rcuda's floating functions keep float16/bfloat16/float64; ONNX gives them only floats).
// The versions differ only by dtypes added or by the legacy consumed_inputs hint, which an
// rcuda kernel has no use for.
using UnaryFn = Tensor (*)(const Tensor&);

template <UnaryFn F>
Kernel make_unary(NodeReader& /*node*/) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {F(in[0])};
  };
}

Kernel make_identity(NodeReader& /*node*/) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {in[0]};
  };
}

Kernel make_is_nan(NodeReader& /*node*/) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor x = computable(in[0]);
    return {ne(x, x)};  // NaN alone differs from itself
  };
}

Kernel make_is_inf(NodeReader& node) {
  const bool negative = node.i("detect_negative", 1) != 0;
  const bool positive = node.i("detect_positive", 1) != 0;
  return [negative, positive](const std::vector<Tensor>& in,
                              const RunContext&) -> std::vector<Tensor> {
    const Tensor x = computable(in[0]);
    const double inf = std::numeric_limits<double>::infinity();
    if (negative && positive) return {eq(abs(x), inf)};
    if (negative) return {eq(x, -inf)};
    if (positive) return {eq(x, inf)};
    return {zeros(x.shape(), TensorOptions(DType::Bool, x.device()))};
  };
}

std::vector<ImportOp> math_ops() {
  return {
      {"Abs", make_unary<rcuda::abs>},
      {"Acos", make_unary<rcuda::acos>, 7},
      {"Acosh", make_unary<rcuda::acosh>, 9},
      {"Asin", make_unary<rcuda::asin>, 7},
      {"Asinh", make_unary<rcuda::asinh>, 9},
      {"Atan", make_unary<rcuda::atan>, 7},
      {"Atanh", make_unary<rcuda::atanh>, 9},
      {"Ceil", make_unary<rcuda::ceil>},
      {"Cos", make_unary<rcuda::cos>, 7},
      {"Cosh", make_unary<rcuda::cosh>, 9},
      {"Erf", make_unary<rcuda::erf>, 9},
      {"Exp", make_unary<rcuda::exp>},
      {"Floor", make_unary<rcuda::floor>},
      {"Log", make_unary<rcuda::log>},
      {"Neg", make_unary<rcuda::neg>},
      {"Reciprocal", make_unary<rcuda::reciprocal>},
      {"Round", make_unary<rcuda::round>, 11},  // half to even, as ONNX
      {"Sign", make_unary<rcuda::sign>, 9},
      {"Sin", make_unary<rcuda::sin>, 7},
      {"Sinh", make_unary<rcuda::sinh>, 9},
      {"Sqrt", make_unary<rcuda::sqrt>},
      {"Tan", make_unary<rcuda::tan>, 7},
      {"Tanh", make_unary<rcuda::tanh>},
      {"Sigmoid", make_unary<rcuda::sigmoid>},
      {"Relu", make_unary<rcuda::relu>},
      {"Not", make_unary<rcuda::logical_not>},
      {"IsNaN", make_is_nan, 9},
      {"IsInf", make_is_inf, 10},
      {"Identity", make_identity},
  };
}

}  // namespace

const std::vector<ImportOp>& elementwise_ops() {
  static const std::vector<ImportOp> ops = [] {
    std::vector<ImportOp> all = math_ops();
    for (const std::vector<ImportOp>& part :
         {elementwise_activation_ops(), elementwise_binary_ops(), elementwise_cast_ops()})
      all.insert(all.end(), part.begin(), part.end());
    return all;
  }();
  return ops;
}

}  // namespace rcuda::io::onnx_import
