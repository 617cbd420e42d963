// Gradients of unary elementwise ops: one fused backend pass, grad * f'(x), per op
// (ops::unary_grad; the derivative formulas sit beside the forward ones in src/backend).
#include "elementwise.h"
#include "rcuda/core/error.h"

namespace rcuda::autograd {

const char* UnaryBackward::name() const {
  switch (op) {
    case UnaryOp::Neg:
      return "NegBackward";
    case UnaryOp::Abs:
      return "AbsBackward";
    case UnaryOp::Sign:
      return "SignBackward";
    case UnaryOp::Exp:
      return "ExpBackward";
    case UnaryOp::Expm1:
      return "Expm1Backward";
    case UnaryOp::Log:
      return "LogBackward";
    case UnaryOp::Log1p:
      return "Log1pBackward";
    case UnaryOp::Sqrt:
      return "SqrtBackward";
    case UnaryOp::Rsqrt:
      return "RsqrtBackward";
    case UnaryOp::Sin:
      return "SinBackward";
    case UnaryOp::Cos:
      return "CosBackward";
    case UnaryOp::Tanh:
      return "TanhBackward";
    case UnaryOp::Sigmoid:
      return "SigmoidBackward";
    case UnaryOp::Relu:
      return "ReluBackward";
    case UnaryOp::Gelu:
    case UnaryOp::GeluTanh:
      return "GeluBackward";
    case UnaryOp::Silu:
      return "SiluBackward";
    case UnaryOp::Floor:
      return "FloorBackward";
    case UnaryOp::Ceil:
      return "CeilBackward";
    case UnaryOp::Round:
      return "RoundBackward";
    case UnaryOp::PowScalar:
      return "PowBackward";
    case UnaryOp::Clamp:
      return "ClampBackward";
    case UnaryOp::LogicalNot:
      return "LogicalNotBackward";
  }
  return "UnaryBackward";
}

TensorList UnaryBackward::apply(TensorList&& grads) { throw InternalError("unary_grad pending"); }

}  // namespace rcuda::autograd
