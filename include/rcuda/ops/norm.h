// Normalisation layers without autograd (rcuda::batch_norm and friends record;
// docs/pooling-normalization.md). Arguments and errors are torch.nn.functional's:
// - x is (N, C, *) with at least 2 dims, floating; N may be 0. The output keeps x's memory
//   format (Note [Channels-last layers] in src/ops/layer_layout.h).
// - Per-channel tensors (weight, bias, running_mean, running_var) hold C elements, in x's dtype
//   or, for float16/bfloat16 x, float32; undefined means absent (weight 1, bias 0).
// - The statistics they return (mean and 1 / sqrt(var + eps)) are float64 for float64 x and
//   float32 otherwise: [C] for batch_norm, [N, num_groups] for group_norm, [N, C] for
//   instance_norm with input statistics. The backward functions read them.
// - The *_backward functions return the gradients asked for by output_mask (input, weight,
//   bias), the others undefined; weight and bias gradients have the weight's dtype (x's when
//   there is none) and are computed whether or not the parameter was given.
// Errors: ShapeError (sizes), ValueError (values), DTypeError, DeviceError, each naming the op,
// the argument and the values.
#pragma once

#include <array>
#include <cstdint>

#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

struct NormForward {
  Tensor out, mean, invstd;
};
struct NormGrads {
  Tensor grad_input, grad_weight, grad_bias;
};

// training: normalises with the batch's mean and biased variance over (N, spatial) per channel,
// and, when given, updates running_mean and running_var in place (running = (1 - momentum) *
// running + momentum * batch statistic, the variance unbiased), bumping their versions; needs
// more than one value per channel. Otherwise the running statistics (required) normalise.
NormForward batch_norm_forward(const Tensor& x, const Tensor& running_mean,
                               const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                               bool training, double momentum = 0.1, double eps = 1e-5);
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
// training: the statistics were the batch's (the input gradient has their terms).
NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                              const Tensor& mean, const Tensor& invstd, bool training,
                              std::array<bool, 3> output_mask = {true, true, true});

// Normalises each of num_groups groups of C / num_groups channels (and the spatial dims) of
// each sample; C must be divisible by num_groups.
NormForward group_norm_forward(const Tensor& x, int64_t num_groups, const Tensor& weight = {},
                               const Tensor& bias = {}, double eps = 1e-5);
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
NormGrads group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t num_groups,
                              const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                              std::array<bool, 3> output_mask = {true, true, true});

// use_input_stats: each (sample, channel) normalised over its spatial elements (more than one
// needed), and the running statistics, when given, updated with the instances' means and
// unbiased variances averaged over the batch (as torch). Otherwise the running statistics
// (required) normalise, as batch_norm in evaluation.
NormForward instance_norm_forward(const Tensor& x, const Tensor& running_mean = {},
                                  const Tensor& running_var = {}, const Tensor& weight = {},
                                  const Tensor& bias = {}, bool use_input_stats = true,
                                  double momentum = 0.1, double eps = 1e-5);
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = {},
                     const Tensor& running_var = {}, const Tensor& weight = {},
                     const Tensor& bias = {}, bool use_input_stats = true, double momentum = 0.1,
                     double eps = 1e-5);
NormGrads instance_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                 const Tensor& mean, const Tensor& invstd, bool use_input_stats,
                                 std::array<bool, 3> output_mask = {true, true, true});

}  // namespace rcuda::ops
