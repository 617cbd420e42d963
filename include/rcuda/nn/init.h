// Parameter initialisers of torch.nn.init: each fills t in place (any device, any layout, grad
// mode off inside, so a leaf that requires grad can be initialised) and returns t. Random ones
// draw on t's device from the default generator's Philox streams (rcuda/ops/random.h), so a
// seed gives the same values on the CPU and the GPU.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::nn::init {

// torch.nn.init.calculate_gain: the recommended gain for a nonlinearity. "linear", "conv1d",
// "conv2d", "conv3d", "conv_transpose1d/2d/3d", "sigmoid": 1; "tanh": 5/3; "relu": sqrt(2);
// "leaky_relu": sqrt(2 / (1 + slope^2)) with slope = param (0.01 when absent); "selu": 3/4.
// ValueError for any other name.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);

struct Fans {
  int64_t fan_in = 0, fan_out = 0;
};
// torch's _calculate_fan_in_and_fan_out: for a weight [out, in, k1, k2, ...], fan_in = in * k1 *
// k2 ..., fan_out = out * k1 * k2 .... ValueError for fewer than 2 dims.
Fans calculate_fan_in_and_fan_out(const Tensor& t);

const Tensor& uniform_(const Tensor& t, double a = 0.0, double b = 1.0);
const Tensor& normal_(const Tensor& t, double mean = 0.0, double std = 1.0);
const Tensor& constant_(const Tensor& t, const Scalar& value);
const Tensor& zeros_(const Tensor& t);
const Tensor& ones_(const Tensor& t);
// The identity matrix (ones on the main diagonal of a 2-D t, ValueError otherwise).
const Tensor& eye_(const Tensor& t);

// He et al. (2015): U(-bound, bound) with bound = gain * sqrt(3 / fan), or N(0, (gain /
// sqrt(fan))^2), fan = fan_in or fan_out by mode ("fan_in" | "fan_out"), gain =
// calculate_gain(nonlinearity, a). A zero-element t is left as it is.
const Tensor& kaiming_uniform_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                               const std::string& nonlinearity = "leaky_relu");
const Tensor& kaiming_normal_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                              const std::string& nonlinearity = "leaky_relu");

// Glorot & Bengio (2010): std = gain * sqrt(2 / (fan_in + fan_out)); uniform over
// [-sqrt(3) std, sqrt(3) std] or normal with that std.
const Tensor& xavier_uniform_(const Tensor& t, double gain = 1.0);
const Tensor& xavier_normal_(const Tensor& t, double gain = 1.0);

// N(mean, std^2) restricted to [a, b] (a and b are values, not multiples of std, as torch).
// Drawn by rejection (Note [Truncated normal by rejection] in src/nn/trunc_normal.cpp), exact
// for any interval. ValueError when a > b or std < 0; std == 0 gives mean clamped to [a, b].
const Tensor& trunc_normal_(const Tensor& t, double mean = 0.0, double std = 1.0, double a = -2.0,
                            double b = 2.0);

}  // namespace rcuda::nn::init
