// Gradients of unary elementwise ops: one fused backend pass, grad * f'(x), per op
// (ops::unary_grad; the derivative formulas sit beside the forward ones in src/backend).
#include "elementwise.h"
#include "rcuda/ops/nn.h"

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
    case UnaryOp::LeakyRelu:
      return "LeakyReluBackward";
    case UnaryOp::Elu:
      return "EluBackward";
    case UnaryOp::Softplus:
      return "SoftplusBackward";
    case UnaryOp::Hardtanh:
      return "HardtanhBackward";
    case UnaryOp::Tan:
      return "TanBackward";
    case UnaryOp::Asin:
      return "AsinBackward";
    case UnaryOp::Acos:
      return "AcosBackward";
    case UnaryOp::Atan:
      return "AtanBackward";
    case UnaryOp::Sinh:
      return "SinhBackward";
    case UnaryOp::Cosh:
      return "CoshBackward";
    case UnaryOp::Asinh:
      return "AsinhBackward";
    case UnaryOp::Acosh:
      return "AcoshBackward";
    case UnaryOp::Atanh:
      return "AtanhBackward";
    case UnaryOp::Trunc:
      return "TruncBackward";
    case UnaryOp::Erf:
      return "ErfBackward";
    case UnaryOp::Erfc:
      return "ErfcBackward";
    case UnaryOp::Erfinv:
      return "ErfinvBackward";
    case UnaryOp::Lgamma:
      return "LgammaBackward";
    case UnaryOp::Digamma:
      return "DigammaBackward";
    case UnaryOp::Log2:
      return "Log2Backward";
    case UnaryOp::Log10:
      return "Log10Backward";
    case UnaryOp::Exp2:
      return "Exp2Backward";
    case UnaryOp::Reciprocal:
      return "ReciprocalBackward";
    case UnaryOp::LogicalNot:
      return "LogicalNotBackward";
  }
  return "UnaryBackward";
}

TensorList UnaryBackward::apply(TensorList&& grads) {
  return {ops::unary_grad(op, grads[0], x.unpack(*this), out.unpack(*this), args)};
}

}  // namespace rcuda::autograd
