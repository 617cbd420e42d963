// Activation functions of torch.nn.functional, differentiable (they record for autograd when an
// input requires grad). Floating inputs; relu, sigmoid and tanh also take integral ones as the
// ops they forward to (rcuda/ops/elementwise.h), hardtanh with its bounds truncated.
#pragma once

#include <string>

#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

Tensor relu(const Tensor& x);
// x > 0 ? x : negative_slope * x
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// x > 0 ? x : alpha * (exp(x) - 1)
Tensor elu(const Tensor& x, double alpha = 1.0);
// approximate: "none" (x * Phi(x), the erf form) or "tanh"; ValueError otherwise.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);  // x * sigmoid(x)
// log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (as torch).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
// x clamped to [min_val, max_val]; the gradient is 0 on the bounds and outside (as torch).
// ValueError when min_val > max_val.
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);

}  // namespace rcuda::nn
