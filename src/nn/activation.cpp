// Activations: the recording ops of rcuda/autograd/api.h, each one fused pass forward
// (rcuda::relu, ..., rcuda::leaky_relu, elu, softplus, hardtanh) and one backward
// (ops::unary_grad through UnaryBackward), after the checks torch makes of the arguments.
#include <cmath>

#include "nn_util.h"
#include "rcuda/nn/activation.h"

namespace rcuda::nn {

using detail::check_floating;

Tensor relu(const Tensor& x) { return rcuda::relu(x); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_floating("leaky_relu", "input", x);
  RCUDA_CHECK(std::isfinite(negative_slope), ValueError,
              "leaky_relu: negative_slope must be finite, got ", negative_slope);
  return rcuda::leaky_relu(x, negative_slope);
}

Tensor elu(const Tensor& x, double alpha) {
  check_floating("elu", "input", x);
  RCUDA_CHECK(std::isfinite(alpha), ValueError, "elu: alpha must be finite, got ", alpha);
  return rcuda::elu(x, alpha);
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  RCUDA_CHECK(approximate == "none" || approximate == "tanh", ValueError,
              "gelu: approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  return rcuda::gelu(x, approximate);
}

Tensor silu(const Tensor& x) { return rcuda::silu(x); }

Tensor softplus(const Tensor& x, double beta, double threshold) {
  check_floating("softplus", "input", x);
  RCUDA_CHECK(std::isfinite(beta) && beta != 0, ValueError,
              "softplus: beta must be finite and nonzero, got ", beta);
  RCUDA_CHECK(!std::isnan(threshold), ValueError, "softplus: threshold must not be NaN");
  return rcuda::softplus(x, beta, threshold);
}

Tensor sigmoid(const Tensor& x) { return rcuda::sigmoid(x); }
Tensor tanh(const Tensor& x) { return rcuda::tanh(x); }

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  RCUDA_CHECK(!std::isnan(min_val) && !std::isnan(max_val) && min_val <= max_val, ValueError,
              "hardtanh: expects min_val <= max_val, got min_val ", min_val, ", max_val ", max_val);
  RCUDA_CHECK(x.dtype() != DType::Bool && !is_float8(x.dtype()), DTypeError,
              "hardtanh: input must be floating or integral, got ", dtype_name(x.dtype()));
  // Integral input keeps its dtype, the bounds truncated toward zero (as torch); the gradient
  // is 0 on the bounds, where clamp's passes.
  return rcuda::hardtanh(x, min_val, max_val);
}

}  // namespace rcuda::nn
