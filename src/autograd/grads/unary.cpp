// Gradients of unary elementwise ops: one fused backend pass, grad * f'(x), per op
// (ops::unary_grad; the derivative formulas sit beside the forward ones in src/backend), or,
// in a backward pass that creates a graph, the same formula in public ops, which record.
#include "../formula.h"
#include "elementwise.h"
#include "rcuda/autograd/api.h"
#include "rcuda/ops/creation.h"
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

bool UnaryBackward::supports_create_graph() const {
  // digamma's derivative (trigamma) is a kernel only; logical_not records no node.
  return op != UnaryOp::Digamma && op != UnaryOp::LogicalNot;
}

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kInvSqrtTwoPi = 0.39894228040143267794;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;
constexpr double kGeluTanhCubic = 0.044715;

// g * f'(x) written with the public ops, so that it records (Note [Gradients of gradients]):
// the same formulas as unary_grad_float in src/backend/unary_math.h, which the fused pass runs.
// x is the forward input, out the forward output (each defined when the op saves it).
Tensor recorded_grad(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& out,
                     const UnaryArgs& a) {
  switch (op) {
    case UnaryOp::Neg:
      return neg(g);
    case UnaryOp::Abs:
      return mul(g, sign(x));
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
    case UnaryOp::LogicalNot:
      return ops::zeros_like(g);
    case UnaryOp::Exp:
      return mul(g, out);
    case UnaryOp::Expm1:
      return mul(g, add(out, 1.0));
    case UnaryOp::Log:
      return div(g, x);
    case UnaryOp::Log1p:
      return div(g, add(x, 1.0));
    case UnaryOp::Sqrt:
      return div(g, mul(out, 2.0));
    case UnaryOp::Rsqrt:
      return mul(mul(g, -0.5), pow(out, 3.0));
    case UnaryOp::Sin:
      return mul(g, cos(x));
    case UnaryOp::Cos:
      return neg(mul(g, sin(x)));
    case UnaryOp::Tanh:
      return mul(g, binary_op(OpId::Sub, 1.0, mul(out, out)));
    case UnaryOp::Sigmoid:
      return mul(g, mul(out, binary_op(OpId::Sub, 1.0, out)));
    case UnaryOp::Relu:
      return where(ops::gt(out, 0.0), g, 0.0);  // torch's threshold_backward on the result
    case UnaryOp::Gelu: {
      const Tensor cdf = mul(add(erf(mul(x, kSqrtHalf)), 1.0), 0.5);
      const Tensor pdf = mul(exp(mul(mul(x, x), -0.5)), kInvSqrtTwoPi);
      return mul(g, add(cdf, mul(x, pdf)));
    }
    case UnaryOp::GeluTanh: {
      const Tensor x_sq = mul(x, x);
      const Tensor inner = mul(add(x, mul(mul(x_sq, x), kGeluTanhCubic)), kSqrtTwoOverPi);
      const Tensor t = tanh(inner);
      const Tensor one_minus_t_sq = binary_op(OpId::Sub, 1.0, mul(t, t));
      const Tensor right_derivative =
          mul(mul(mul(x, 0.5), one_minus_t_sq),
              mul(add(mul(x_sq, 3 * kGeluTanhCubic), 1.0), kSqrtTwoOverPi));
      return mul(g, add(mul(add(t, 1.0), 0.5), right_derivative));
    }
    case UnaryOp::Silu: {
      const Tensor s = sigmoid(x);
      return mul(g, mul(s, add(mul(x, binary_op(OpId::Sub, 1.0, s)), 1.0)));
    }
    case UnaryOp::PowScalar:
      if (a.exponent == 0) return ops::zeros_like(g);
      return mul(g, mul(pow(x, a.exponent - 1), a.exponent));
    case UnaryOp::Clamp: {
      if (!a.has_min && !a.has_max) return g;
      const Tensor above = a.has_min ? ops::ge(x, a.min) : Tensor();
      const Tensor below = a.has_max ? ops::le(x, a.max) : Tensor();
      const Tensor inside =
          !a.has_min ? below : (!a.has_max ? above : ops::logical_and(above, below));
      return where(inside, g, 0.0);
    }
    case UnaryOp::LeakyRelu:
      return where(ops::gt(x, 0.0), g, mul(g, a.negative_slope));
    case UnaryOp::Elu:
      return where(ops::le(x, 0.0), mul(mul(g, a.alpha), exp(x)), g);
    case UnaryOp::Softplus: {
      const Tensor bx = mul(x, a.beta);
      return where(ops::gt(bx, a.threshold), g, mul(g, sigmoid(bx)));
    }
    case UnaryOp::Hardtanh:
      return where(ops::logical_or(ops::le(x, a.min), ops::ge(x, a.max)), 0.0, g);
    case UnaryOp::Tan:
      return mul(g, add(mul(out, out), 1.0));
    case UnaryOp::Asin:
      return div(g, sqrt(binary_op(OpId::Sub, 1.0, mul(x, x))));
    case UnaryOp::Acos:
      return neg(div(g, sqrt(binary_op(OpId::Sub, 1.0, mul(x, x)))));
    case UnaryOp::Atan:
      return div(g, add(mul(x, x), 1.0));
    case UnaryOp::Sinh:
      return mul(g, cosh(x));
    case UnaryOp::Cosh:
      return mul(g, sinh(x));
    case UnaryOp::Asinh:
      return div(g, sqrt(add(mul(x, x), 1.0)));
    case UnaryOp::Acosh:
      return div(g, sqrt(sub(mul(x, x), 1.0)));
    case UnaryOp::Atanh:
      return div(g, binary_op(OpId::Sub, 1.0, mul(x, x)));
    case UnaryOp::Erf:
      return mul(g, mul(exp(neg(mul(x, x))), kTwoOverSqrtPi));
    case UnaryOp::Erfc:
      return mul(g, mul(exp(neg(mul(x, x))), -kTwoOverSqrtPi));
    case UnaryOp::Erfinv:  // sqrt(pi) / 2 * exp(erfinv(x)^2)
      return mul(g, mul(exp(mul(out, out)), 0.88622692545275801365));
    case UnaryOp::Lgamma:
      return mul(g, digamma(x));
    case UnaryOp::Digamma:  // refused by supports_create_graph: trigamma is a kernel only
      return ops::unary_grad(op, g, x, out, a);
    case UnaryOp::Log2:
      return div(g, mul(x, kLn2));
    case UnaryOp::Log10:
      return div(g, mul(x, kLn10));
    case UnaryOp::Exp2:
      return mul(g, mul(out, kLn2));
    case UnaryOp::Reciprocal:
      return neg(mul(g, mul(out, out)));
  }
  return g;
}

}  // namespace

TensorList UnaryBackward::apply(TensorList&& grads) {
  const Tensor xv = x.unpack(*this), outv = out.unpack(*this);
  if (formula::recording()) return {recorded_grad(op, grads[0], xv, outv, args)};
  return {ops::unary_grad(op, grads[0], xv, outv, args)};
}

}  // namespace rcuda::autograd
