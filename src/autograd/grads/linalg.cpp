// Gradients of matrix products: d(a @ b) = g @ b^T for a and a^T @ g for b, with 1-D operands
// promoted to matrices as torch.matmul does and broadcast batch dims summed back.
#include "linalg.h"

#include "../engine.h"
#include "../formula.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/linalg.h"

namespace rcuda::autograd {

TensorList MatmulBackward::apply(TensorList&& grads) {
  // Ranks and shapes from the recorded inputs: only the operand the other's gradient needs was
  // saved (an input that requires no grad leaves its partner unsaved).
  const Shape& a_shape = input_meta()[0].shape();
  const Shape& b_shape = input_meta()[1].shape();
  Tensor g = grads[0];
  if (b_shape.size() == 1) g = g.unsqueeze(-1);
  if (a_shape.size() == 1) g = g.unsqueeze(-2);
  Tensor ga, gb;
  if (needs_input_grad(0)) {
    const Tensor bv = b.unpack(*this);
    const Tensor b2 = bv.dim() == 1 ? bv.unsqueeze(1) : bv;
    const Shape a2 = a_shape.size() == 1 ? Shape{1, a_shape[0]} : a_shape;
    ga = formula::reshape(sum_to(formula::matmul(g, b2.transpose(-1, -2)), a2), a_shape);
  }
  if (needs_input_grad(1)) {
    const Tensor av = a.unpack(*this);
    const Tensor a2 = av.dim() == 1 ? av.unsqueeze(0) : av;
    const Shape b2 = b_shape.size() == 1 ? Shape{b_shape[0], 1} : b_shape;
    gb = formula::reshape(sum_to(formula::matmul(a2.transpose(-1, -2), g), b2), b_shape);
  }
  return {ga, gb};
}

TensorList AddmmBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  Tensor gi, ga, gb;
  if (needs_input_grad(0)) gi = beta == 1 ? g : formula::mul(g, beta);
  if (needs_input_grad(1)) {
    ga = formula::mm(g, b.unpack(*this).t());
    if (alpha != 1) ga = formula::mul(ga, alpha);
  }
  if (needs_input_grad(2)) {
    gb = formula::mm(a.unpack(*this).t(), g);
    if (alpha != 1) gb = formula::mul(gb, alpha);
  }
  return {gi, ga, gb};
}

}  // namespace rcuda::autograd
