// Activations with parameters (leaky_relu, elu, softplus, hardtanh): argument checks, then the
// backend's unary primitive with the parameters in UnaryArgs. And unary_grad, the backward of
// every floating UnaryOp.
#include <cmath>

#include "ops_util.h"
#include "rcuda/ops/nn.h"

namespace rcuda::ops {
namespace {

Tensor run_activation(UnaryOp unary_op, const Tensor& x, const UnaryArgs& args) {
  Tensor out = empty_like_operands(x.shape(), x.dtype(), x.device(), {x});
  if (out.numel() > 0) backend_of(x).unary(unary_op, out, x, args);
  return out;
}

void check_floating_input(const char* op, const Tensor& x) {
  check_not_float8(op, x);
  check_floating(op, "x", x);
}

void check_finite(const char* op, const char* arg, double value) {
  RCUDA_CHECK(std::isfinite(value), ValueError, op, ": ", arg, " must be finite, got ", value);
}

}  // namespace

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_floating_input("leaky_relu", x);
  check_finite("leaky_relu", "negative_slope", negative_slope);
  UnaryArgs args;
  args.negative_slope = negative_slope;
  return run_activation(UnaryOp::LeakyRelu, x, args);
}

Tensor elu(const Tensor& x, double alpha) {
  check_floating_input("elu", x);
  check_finite("elu", "alpha", alpha);
  UnaryArgs args;
  args.alpha = alpha;
  return run_activation(UnaryOp::Elu, x, args);
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  check_floating_input("softplus", x);
  check_finite("softplus", "beta", beta);
  RCUDA_CHECK(beta != 0, ValueError, "softplus: beta must be nonzero");
  RCUDA_CHECK(!std::isnan(threshold), ValueError, "softplus: threshold must not be NaN");
  UnaryArgs args;
  args.beta = beta;
  args.threshold = threshold;
  return run_activation(UnaryOp::Softplus, x, args);
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  check_not_float8("hardtanh", x);
  RCUDA_CHECK(x.dtype() != DType::Bool, DTypeError, "hardtanh: not supported for bool tensors");
  RCUDA_CHECK(!std::isnan(min_val) && !std::isnan(max_val) && min_val <= max_val, ValueError,
              "hardtanh: expects min_val <= max_val, got min_val ", min_val, ", max_val ", max_val);
  UnaryArgs args;
  if (is_floating(x.dtype())) {
    args.min = min_val;
    args.max = max_val;
  } else {
    // As torch: integral input keeps its dtype and the bounds are truncated toward zero.
    args.min = std::trunc(min_val);
    args.max = std::trunc(max_val);
    RCUDA_CHECK(x.dtype() != DType::UInt8 || (args.min >= 0 && args.max >= 0), ValueError,
                "hardtanh: cannot use negative bounds on a uint8 tensor (got min_val ", min_val,
                ", max_val ", max_val, ")");
    args.min = clip_to_integer_range(args.min, x.dtype());
    args.max = clip_to_integer_range(args.max, x.dtype());
  }
  return run_activation(UnaryOp::Hardtanh, x, args);
}

UnaryGradSaves unary_grad_saves(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
    case UnaryOp::LogicalNot:
      return UnaryGradSaves::Nothing;
    case UnaryOp::Exp:
    case UnaryOp::Expm1:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid:
    case UnaryOp::Relu:
    case UnaryOp::Tan:
    case UnaryOp::Erfinv:
    case UnaryOp::Exp2:
    case UnaryOp::Reciprocal:
      return UnaryGradSaves::Output;
    case UnaryOp::Abs:
    case UnaryOp::Log:
    case UnaryOp::Log1p:
    case UnaryOp::Sin:
    case UnaryOp::Cos:
    case UnaryOp::Gelu:
    case UnaryOp::GeluTanh:
    case UnaryOp::Silu:
    case UnaryOp::PowScalar:
    case UnaryOp::Clamp:
    case UnaryOp::LeakyRelu:
    case UnaryOp::Elu:
    case UnaryOp::Softplus:
    case UnaryOp::Hardtanh:
    case UnaryOp::Asin:
    case UnaryOp::Acos:
    case UnaryOp::Atan:
    case UnaryOp::Sinh:
    case UnaryOp::Cosh:
    case UnaryOp::Asinh:
    case UnaryOp::Acosh:
    case UnaryOp::Atanh:
    case UnaryOp::Erf:
    case UnaryOp::Erfc:
    case UnaryOp::Lgamma:
    case UnaryOp::Digamma:
    case UnaryOp::Log2:
    case UnaryOp::Log10:
      return UnaryGradSaves::Input;
  }
  return UnaryGradSaves::Input;
}

Tensor unary_grad(UnaryOp op, const Tensor& grad_out, const Tensor& x, const Tensor& out,
                  const UnaryArgs& args) {
  constexpr const char* kOp = "unary_grad";
  RCUDA_CHECK(op != UnaryOp::LogicalNot, ValueError, kOp, ": logical_not has no gradient");
  RCUDA_CHECK(grad_out.defined(), ValueError, kOp, ": grad_out is undefined");
  const UnaryGradSaves saves = unary_grad_saves(op);
  const Tensor& saved = saves == UnaryGradSaves::Output ? out : x;
  const char* saved_name = saves == UnaryGradSaves::Output ? "out" : "x";
  const Tensor read = saves == UnaryGradSaves::Nothing ? grad_out : saved;
  RCUDA_CHECK(read.defined(), ValueError, kOp, ": this op's gradient reads ", saved_name,
              ", which is undefined");
  check_not_float8(kOp, grad_out);
  check_floating(kOp, "grad_out", grad_out);
  RCUDA_CHECK(read.dtype() == grad_out.dtype(), DTypeError, kOp, ": ", saved_name, " is ",
              dtype_name(read.dtype()), " but grad_out is ", dtype_name(grad_out.dtype()));
  RCUDA_CHECK(read.shape() == grad_out.shape(), ShapeError, kOp, ": ", saved_name, " has shape ",
              shape_str(read.shape()), " but grad_out has ", shape_str(grad_out.shape()));
  check_same_device(kOp, {grad_out, read});
  Tensor grad_in =
      empty_like_operands(grad_out.shape(), grad_out.dtype(), grad_out.device(), {grad_out, read});
  if (grad_in.numel() > 0) {
    const bool reads_out = saves == UnaryGradSaves::Output;
    backend_of(grad_out).unary_grad(op, grad_in, grad_out, reads_out ? grad_out : read,
                                    reads_out ? read : grad_out, args);
  }
  return grad_in;
}

}  // namespace rcuda::ops
