// Neural-network ops without autograd: activations, and the forward and backward halves that
// the autograd layer calls for training.
#pragma once

#include "rcuda/backend/backend.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// ---- activations (floating input; hardtanh also integral, with bounds truncated) ----------
// x > 0 ? x : negative_slope * x
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// x > 0 ? x : alpha * (exp(x) - 1)
Tensor elu(const Tensor& x, double alpha = 1.0);
// log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (as torch)
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// x clamped to [min_val, max_val]; its gradient is 0 on the bounds (clamp's passes there)
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);

// ---- gradients of elementwise functions -------------------------------------------------
// What unary_grad reads besides grad_out: the forward input, the forward output, or neither
// (torch's choice for each formula), so that the autograd layer saves only that tensor.
enum class UnaryGradSaves { Nothing, Input, Output };
UnaryGradSaves unary_grad_saves(UnaryOp op);

// grad_out * f'(x) in one pass for a floating UnaryOp (every op but LogicalNot), where x is the
// forward input and out = f(x) the forward output; the one unary_grad_saves does not name may
// be undefined. At kinks torch's convention holds (Note [Unary formulas] in
// src/backend/unary_math.h): relu, sign and the rounding ops give 0, clamp passes the gradient
// where min <= x <= max, hardtanh only inside (min, max). All tensors share one shape, one
// floating dtype and one device.
Tensor unary_grad(UnaryOp op, const Tensor& grad_out, const Tensor& x, const Tensor& out,
                  const UnaryArgs& args = {});

}  // namespace rcuda::ops
