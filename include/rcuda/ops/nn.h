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

}  // namespace rcuda::ops
