// Activations. Those with a UnaryOp (relu, gelu, silu, sigmoid, tanh) are the recording ops of
// rcuda/autograd/api.h. leaky_relu, elu, softplus and hardtanh are composed from where and
// binary ops for now; each body becomes one call of its fused op (ops::leaky_relu, ... of
// rcuda/ops/nn.h, whose gradient is ops::unary_grad) once the autograd layer records them.
// Note [Safe branches of where] (nn_util.h) explains the inner where of elu and softplus.
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
  // Fused: rcuda::leaky_relu(x, negative_slope) (UnaryOp::LeakyRelu).
  return where(gt(x, 0.0), x, mul(x, negative_slope));
}

Tensor elu(const Tensor& x, double alpha) {
  check_floating("elu", "input", x);
  RCUDA_CHECK(std::isfinite(alpha), ValueError, "elu: alpha must be finite, got ", alpha);
  // Fused: rcuda::elu(x, alpha) (UnaryOp::Elu).
  const Tensor positive = gt(x, 0.0);
  const Tensor negative_part = where(positive, 0.0, x);  // Note [Safe branches of where]
  return where(positive, x, mul(expm1(negative_part), alpha));
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
  // Fused: rcuda::softplus(x, beta, threshold) (UnaryOp::Softplus).
  const Tensor scaled = mul(x, beta);
  const Tensor linear = gt(scaled, threshold);
  const Tensor below = where(linear, 0.0, scaled);  // Note [Safe branches of where]
  return where(linear, x, div(log1p(exp(below)), beta));
}

Tensor sigmoid(const Tensor& x) { return rcuda::sigmoid(x); }
Tensor tanh(const Tensor& x) { return rcuda::tanh(x); }

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  RCUDA_CHECK(!std::isnan(min_val) && !std::isnan(max_val) && min_val <= max_val, ValueError,
              "hardtanh: expects min_val <= max_val, got min_val ", min_val, ", max_val ", max_val);
  RCUDA_CHECK(x.dtype() != DType::Bool && !is_float8(x.dtype()), DTypeError,
              "hardtanh: input must be floating or integral, got ", dtype_name(x.dtype()));
  // Fused: rcuda::hardtanh(x, min_val, max_val) (UnaryOp::Hardtanh), integral input included.
  if (!is_floating(x.dtype())) {
    // As torch: integral input keeps its dtype, the bounds truncated toward zero.
    return rcuda::clamp(x, Scalar(static_cast<int64_t>(std::trunc(min_val))),
                        Scalar(static_cast<int64_t>(std::trunc(max_val))));
  }
  // le/ge rather than clamp: torch's gradient is 0 on the bounds, clamp's passes there.
  return where(le(x, min_val), min_val, where(ge(x, max_val), max_val, x));
}

}  // namespace rcuda::nn
