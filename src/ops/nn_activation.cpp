// Activations with parameters (leaky_relu, elu, softplus, hardtanh): argument checks, then the
// backend's unary primitive with the parameters in UnaryArgs.
#include <cmath>

#include "ops_util.h"
#include "rcuda/ops/nn.h"

namespace rcuda::ops {
namespace {

Tensor run_activation(UnaryOp unary_op, const Tensor& x, const UnaryArgs& args) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_of(x).unary(unary_op, out, x, args);
  return out;
}

void check_floating_input(const char* op, const Tensor& x) {
  check_not_float8(op, x);
  check_floating(op, "x", x);
}

void check_finite(const char* op, const char* arg, double value) {
  RCUDA_CHECK(std::isfinite(value), ValueError, op, ": ", arg, " must be finite, got ", value);
}

}  // namespace

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_floating_input("leaky_relu", x);
  check_finite("leaky_relu", "negative_slope", negative_slope);
  UnaryArgs args;
  args.negative_slope = negative_slope;
  return run_activation(UnaryOp::LeakyRelu, x, args);
}

Tensor elu(const Tensor& x, double alpha) {
  check_floating_input("elu", x);
  check_finite("elu", "alpha", alpha);
  UnaryArgs args;
  args.alpha = alpha;
  return run_activation(UnaryOp::Elu, x, args);
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  check_floating_input("softplus", x);
  check_finite("softplus", "beta", beta);
  RCUDA_CHECK(beta != 0, ValueError, "softplus: beta must be nonzero");
  RCUDA_CHECK(!std::isnan(threshold), ValueError, "softplus: threshold must not be NaN");
  UnaryArgs args;
  args.beta = beta;
  args.threshold = threshold;
  return run_activation(UnaryOp::Softplus, x, args);
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  check_not_float8("hardtanh", x);
  RCUDA_CHECK(x.dtype() != DType::Bool, DTypeError, "hardtanh: not supported for bool tensors");
  RCUDA_CHECK(!std::isnan(min_val) && !std::isnan(max_val) && min_val <= max_val, ValueError,
              "hardtanh: expects min_val <= max_val, got min_val ", min_val, ", max_val ", max_val);
  UnaryArgs args;
  if (is_floating(x.dtype())) {
    args.min = min_val;
    args.max = max_val;
  } else {
    // As torch: integral input keeps its dtype and the bounds are truncated toward zero.
    args.min = std::trunc(min_val);
    args.max = std::trunc(max_val);
    RCUDA_CHECK(x.dtype() != DType::UInt8 || (args.min >= 0 && args.max >= 0), ValueError,
                "hardtanh: cannot use negative bounds on a uint8 tensor (got min_val ", min_val,
                ", max_val ", max_val, ")");
    const double limit = x.dtype() == DType::UInt8   ? 255.0
                         : x.dtype() == DType::Int32 ? 2147483647.0
                                                     : 9.2e18;
    args.min = std::fmax(-limit - 1, std::fmin(args.min, limit));
    args.max = std::fmax(-limit - 1, std::fmin(args.max, limit));
  }
  return run_activation(UnaryOp::Hardtanh, x, args);
}

}  // namespace rcuda::ops
