// Gradients of binary elementwise ops, in the broadcast output's shape: the engine sums each
// back to its input's shape (Note [Broadcast gradients] in docs/autograd.md). The formulas call
// formula:: ops, which record in a backward pass that creates a graph.
#include <cmath>
#include <string>

#include "../formula.h"
#include "elementwise.h"
#include "rcuda/core/error.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"

namespace rcuda::autograd {

const char* BinaryBackward::name() const {
  switch (op) {
    case BinaryOp::Add:
      return "AddBackward";
    case BinaryOp::Sub:
      return "SubBackward";
    case BinaryOp::Mul:
      return "MulBackward";
    case BinaryOp::Div:
      return "DivBackward";
    case BinaryOp::Remainder:
      return "RemainderBackward";
    case BinaryOp::Pow:
      return "PowBackward";
    case BinaryOp::Maximum:
      return "MaximumBackward";
    case BinaryOp::Minimum:
      return "MinimumBackward";
    case BinaryOp::Atan2:
      return "Atan2Backward";
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::LogicalXor:
      return "ComparisonBackward";
  }
  return "BinaryBackward";
}

namespace {

// grad where `keep`, 0 elsewhere; grad / 2 where a == b (torch's rule for maximum/minimum ties).
Tensor tie_split(const Tensor& grad, const Tensor& keep, const Tensor& tie) {
  return formula::where(keep, grad, formula::where(tie, formula::mul(grad, 0.5), 0.0));
}

}  // namespace

TensorList BinaryBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  // Numbers sit in no edge: the tensor operand is input 0.
  const bool need_a = !a_is_number && needs_input_grad(0);
  const bool need_b = !b_is_number && needs_input_grad(a_is_number ? 0 : 1);
  Tensor ga, gb;
  switch (op) {
    case BinaryOp::Add:
      ga = g;
      if (need_b) gb = alpha == 1 ? g : formula::mul(g, alpha);
      break;
    case BinaryOp::Sub:
      ga = g;
      if (need_b) gb = formula::mul(g, -alpha);
      break;
    case BinaryOp::Mul:
      if (a_is_number || b_is_number) {
        (a_is_number ? gb : ga) = formula::mul(g, number);
      } else {
        if (need_a) ga = formula::mul(g, b.unpack(*this));
        if (need_b) gb = formula::mul(g, a.unpack(*this));
      }
      break;
    case BinaryOp::Div:
      if (b_is_number) {
        ga = formula::div(g, number);
      } else if (a_is_number) {
        // number / b: -number / b^2 = -out / b.
        gb = formula::neg(formula::div(formula::mul(g, out.unpack(*this)), b.unpack(*this)));
      } else {
        const Tensor bv = b.unpack(*this);
        if (need_a) ga = formula::div(g, bv);
        if (need_b) gb = formula::neg(formula::div(formula::mul(g, out.unpack(*this)), bv));
      }
      break;
    case BinaryOp::Remainder:
      // a - floor(a / b) * b: 1 for a; -floor(a / b) for b.
      ga = g;
      if (need_b) {
        const Tensor bv = b.unpack(*this);
        const Tensor quotient =
            a_is_number ? ops::binary_op(BinaryOp::Div, number, bv) : ops::div(a.unpack(*this), bv);
        gb = formula::neg(formula::mul(g, ops::floor(quotient)));
      }
      break;
    case BinaryOp::Pow:
      if (a_is_number) {
        // number ** b: out * log(number).
        gb = formula::mul(g, formula::mul(out.unpack(*this), std::log(number)));
      } else {
        const Tensor av = a.unpack(*this), bv = b.unpack(*this);
        if (need_a) {
          // b * a ** (b - 1), 0 where b == 0 (torch: no NaN from 0 * a ** -1 at a == 0).
          const Tensor d = formula::mul(bv, formula::pow(av, formula::sub(bv, 1)));
          ga = formula::mul(g, formula::where(ops::eq(bv, 0.0), 0.0, d));
        }
        if (need_b) {
          // out * log(a), 0 where a == 0 and b >= 0 (torch's masking of 0 ** b).
          const Tensor d = formula::mul(out.unpack(*this), formula::log(av));
          const Tensor zero = ops::logical_and(ops::eq(av, 0.0), ops::ge(bv, 0.0));
          gb = formula::mul(g, formula::where(zero, 0.0, d));
        }
      }
      break;
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: {
      const Tensor av = a.unpack(*this), bv = b.unpack(*this);
      const Tensor tie = ops::eq(av, bv);
      const bool is_max = op == BinaryOp::Maximum;
      if (need_a) ga = tie_split(g, is_max ? ops::gt(av, bv) : ops::lt(av, bv), tie);
      if (need_b) gb = tie_split(g, is_max ? ops::lt(av, bv) : ops::gt(av, bv), tie);
      break;
    }
    case BinaryOp::Atan2: {
      // d/da atan2(a, b) = b / (a^2 + b^2), d/db = -a / (a^2 + b^2); both tensors (no number form).
      const Tensor av = a.unpack(*this), bv = b.unpack(*this);
      const Tensor scale =
          formula::div(g, formula::add(formula::mul(av, av), formula::mul(bv, bv)));
      if (need_a) ga = formula::mul(scale, bv);
      if (need_b) gb = formula::neg(formula::mul(scale, av));
      break;
    }
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::LogicalXor:
      throw InternalError(std::string("internal error in autograd: ") + name() +
                          " recorded for an op with a bool result");
  }
  if (a_is_number) return {gb};
  if (b_is_number) return {ga};
  return {need_a ? ga : Tensor(), gb};
}

TensorList WhereBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  const Tensor c = condition.unpack(*this);
  Tensor ga, gb;
  if (needs_input_grad(0)) ga = formula::where(c, g, 0.0);
  if (needs_input_grad(1)) gb = formula::where(c, 0.0, g);
  return {ga, gb};
}

}  // namespace rcuda::autograd
