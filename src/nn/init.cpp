// torch.nn.init: gains, fans and the initialisers that fill a tensor from one distribution.
// trunc_normal_ is in trunc_normal.cpp.
#include "rcuda/nn/init.h"

#include <cmath>

#include "nn_util.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::nn::init {
namespace {

Fans fans_of(const char* op, const Tensor& t) {
  RCUDA_CHECK(t.dim() >= 2, ValueError, op,
              ": fan in and fan out cannot be computed for a tensor of fewer than 2 dims, got "
              "shape ",
              shape_str(t.shape()));
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive_field *= t.size(d);
  return {t.size(1) * receptive_field, t.size(0) * receptive_field};
}

int64_t fan_for_mode(const char* op, const Tensor& t, const std::string& mode) {
  const Fans fans = fans_of(op, t);
  return mode == "fan_in" ? fans.fan_in : fans.fan_out;
}

void check_mode(const char* op, const std::string& mode) {
  RCUDA_CHECK(mode == "fan_in" || mode == "fan_out", ValueError, op,
              ": mode must be \"fan_in\" or \"fan_out\", got \"", mode, "\"");
}

}  // namespace

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  for (const char* linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                             "conv_transpose2d", "conv_transpose3d", "sigmoid"})
    if (nonlinearity == linear) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    RCUDA_CHECK(std::isfinite(slope), ValueError,
                "calculate_gain: negative_slope must be finite, got ", slope);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;  // as torch, for self-normalising networks
  throw ValueError(rcuda::detail::concat(
      "calculate_gain: unsupported nonlinearity \"", nonlinearity,
      "\" (expected linear, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, "
      "conv_transpose3d, sigmoid, tanh, relu, leaky_relu or selu)"));
}

Fans calculate_fan_in_and_fan_out(const Tensor& t) {
  return fans_of("calculate_fan_in_and_fan_out", t);
}

const Tensor& uniform_(const Tensor& t, double a, double b) {
  detail::check_floating("uniform_", "tensor", t);
  RCUDA_CHECK(a <= b, ValueError, "uniform_: expects a <= b, got a ", a, ", b ", b);
  NoGradGuard no_grad;
  return rcuda::uniform_(t, a, b);
}

const Tensor& normal_(const Tensor& t, double mean, double std) {
  detail::check_floating("normal_", "tensor", t);
  RCUDA_CHECK(std >= 0, ValueError, "normal_: std must be non-negative, got ", std);
  NoGradGuard no_grad;
  return rcuda::normal_(t, mean, std);
}

const Tensor& constant_(const Tensor& t, const Scalar& value) {
  NoGradGuard no_grad;
  return rcuda::fill_(t, value);
}

const Tensor& zeros_(const Tensor& t) { return constant_(t, 0); }
const Tensor& ones_(const Tensor& t) { return constant_(t, 1); }

const Tensor& eye_(const Tensor& t) {
  RCUDA_CHECK(t.dim() == 2, ValueError, "eye_: only 2-D tensors are supported, got shape ",
              shape_str(t.shape()));
  NoGradGuard no_grad;
  return rcuda::copy_(t, ops::eye(t.size(0), t.size(1), TensorOptions(t.dtype(), t.device())));
}

const Tensor& kaiming_uniform_(const Tensor& t, double a, const std::string& mode,
                               const std::string& nonlinearity) {
  check_mode("kaiming_uniform_", mode);
  const double gain = calculate_gain(nonlinearity, a);
  if (t.numel() == 0) return t;  // as torch: nothing to fill (and no fan to divide by)
  const double std =
      gain / std::sqrt(static_cast<double>(fan_for_mode("kaiming_uniform_", t, mode)));
  const double bound = std::sqrt(3.0) * std;  // U(-b, b) has variance b^2 / 3
  return init::uniform_(t, -bound, bound);
}

const Tensor& kaiming_normal_(const Tensor& t, double a, const std::string& mode,
                              const std::string& nonlinearity) {
  check_mode("kaiming_normal_", mode);
  const double gain = calculate_gain(nonlinearity, a);
  if (t.numel() == 0) return t;
  return init::normal_(
      t, 0.0, gain / std::sqrt(static_cast<double>(fan_for_mode("kaiming_normal_", t, mode))));
}

const Tensor& xavier_uniform_(const Tensor& t, double gain) {
  const Fans fans = fans_of("xavier_uniform_", t);
  if (t.numel() == 0) return t;
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  const double bound = std::sqrt(3.0) * std;
  return init::uniform_(t, -bound, bound);
}

const Tensor& xavier_normal_(const Tensor& t, double gain) {
  const Fans fans = fans_of("xavier_normal_", t);
  if (t.numel() == 0) return t;
  return init::normal_(t, 0.0,
                       gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out)));
}

}  // namespace rcuda::nn::init
