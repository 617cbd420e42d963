// Elementwise ops of one tensor: ONNX's own op where it has one, a composition otherwise.
#include <cmath>

#include "io/onnx/mappings.h"

namespace rcuda::io::onnx_export {
namespace {

// Input 0 in the result's dtype (exp of an int64 tensor is float32).
std::string x_as_result(Builder& b) { return b.in_as(0, b.out_value().dtype); }

DType result_dtype(Builder& b) { return b.out_value().dtype; }

}  // namespace

void unary(Builder& b, const char* onnx_op) { b.add(onnx_op, {x_as_result(b)}, {b.out()}); }

void expm1(Builder& b) {
  b.add("Sub", {b.add1("Exp", {x_as_result(b)}), b.number(1.0, result_dtype(b))}, {b.out()});
}

void log1p(Builder& b) {
  b.add("Log", {b.add1("Add", {x_as_result(b), b.number(1.0, result_dtype(b))})}, {b.out()});
}

void rsqrt(Builder& b) { b.add("Reciprocal", {b.add1("Sqrt", {x_as_result(b)})}, {b.out()}); }

void log2(Builder& b) {
  b.add("Div", {b.add1("Log", {x_as_result(b)}), b.number(std::log(2.0), result_dtype(b))},
        {b.out()});
}

void log10(Builder& b) {
  b.add("Div", {b.add1("Log", {x_as_result(b)}), b.number(std::log(10.0), result_dtype(b))},
        {b.out()});
}

void exp2(Builder& b) { b.add("Pow", {b.number(2.0, result_dtype(b)), x_as_result(b)}, {b.out()}); }

void erfc(Builder& b) {
  b.add("Sub", {b.number(1.0, result_dtype(b)), b.add1("Erf", {x_as_result(b)})}, {b.out()});
}

// ONNX has no Trunc: sign(x) * floor(|x|). Integers are their own truncation.
void trunc(Builder& b) {
  const std::string x = x_as_result(b);
  if (!is_floating(result_dtype(b))) {
    b.add("Identity", {x}, {b.out()});
    return;
  }
  b.add("Mul", {b.add1("Sign", {x}), b.add1("Floor", {b.add1("Abs", {x})})}, {b.out()});
}

void logical_not(Builder& b) { b.add("Not", {b.in_as(0, DType::Bool)}, {b.out()}); }

// Clip's bounds are inputs of the tensor's dtype; "" leaves a side open.
void clamp(Builder& b) {
  const DType dtype = result_dtype(b);
  const std::string lo = b.has_attr("min") ? b.number(b.scalar_attr("min"), dtype) : "";
  const std::string hi = b.has_attr("max") ? b.number(b.scalar_attr("max"), dtype) : "";
  b.add("Clip", {x_as_result(b), lo, hi}, {b.out()});
}

void hardtanh(Builder& b) {
  const DType dtype = result_dtype(b);
  b.add("Clip",
        {x_as_result(b), b.number(b.scalar_attr("min_val"), dtype),
         b.number(b.scalar_attr("max_val"), dtype)},
        {b.out()});
}

void leaky_relu(Builder& b) {
  set_attr(b.add("LeakyRelu", {x_as_result(b)}, {b.out()}), "alpha",
           b.scalar_attr("negative_slope").to_double());
}

void elu(Builder& b) {
  set_attr(b.add("Elu", {x_as_result(b)}, {b.out()}), "alpha", b.scalar_attr("alpha").to_double());
}

// torch: log(1 + exp(beta x)) / beta, and x itself where beta x > threshold.
void softplus(Builder& b) {
  const DType dtype = result_dtype(b);
  const double beta = b.scalar_attr("beta").to_double();
  const double threshold = b.scalar_attr("threshold").to_double();
  const std::string x = x_as_result(b);
  const std::string bx = beta == 1.0 ? x : b.add1("Mul", {x, b.number(beta, dtype)});
  std::string y = b.add1("Softplus", {bx});
  if (beta != 1.0) y = b.add1("Div", {y, b.number(beta, dtype)});
  b.add("Where", {b.add1("Greater", {bx, b.number(threshold, dtype)}), x, y}, {b.out()});
}

// Gelu is an ONNX op from opset 20; before, its formula.
void gelu(Builder& b) {
  const std::string approximate = b.attr_or<std::string>("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    b.fail("approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  const std::string x = x_as_result(b);
  if (b.opset() >= 20) {
    set_attr(b.add("Gelu", {x}, {b.out()}), "approximate", approximate);
    return;
  }
  const DType dtype = result_dtype(b);
  std::string inner;
  if (approximate == "none") {
    // 0.5 x (1 + erf(x / sqrt(2)))
    inner = b.add1("Erf", {b.add1("Mul", {x, b.number(M_SQRT1_2, dtype)})});
  } else {
    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    const std::string cube = b.add1("Mul", {x, b.add1("Mul", {x, x})});
    const std::string sum = b.add1("Add", {x, b.add1("Mul", {cube, b.number(0.044715, dtype)})});
    inner = b.add1("Tanh", {b.add1("Mul", {sum, b.number(std::sqrt(2.0 / M_PI), dtype)})});
  }
  const std::string half_x = b.add1("Mul", {x, b.number(0.5, dtype)});
  b.add("Mul", {half_x, b.add1("Add", {inner, b.number(1.0, dtype)})}, {b.out()});
}

void silu(Builder& b) {
  const std::string x = x_as_result(b);
  b.add("Mul", {x, b.add1("Sigmoid", {x})}, {b.out()});
}

}  // namespace rcuda::io::onnx_export
