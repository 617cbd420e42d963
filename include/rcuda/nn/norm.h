// torch.nn.functional's batch_norm, group_norm and instance_norm. Differentiable with respect to
// input, weight and bias; running_mean and running_var are buffers that training updates in
// place (rcuda/ops/norm.h has the rules). weight and bias may be of any floating dtype: one
// that is neither the input's nor (for a float16/bfloat16 input) float32 is cast to the
// input's, the cast recorded. float16/bfloat16 inputs are normalised in float32.
#pragma once

#include <cstdint>

#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

// training: the batch's statistics (more than one value per channel needed), and the running
// statistics, when given, updated with momentum (unbiased variance); otherwise the running
// statistics, which must be given.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5);
// C / num_groups channels per group; C must be divisible by num_groups.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// Each (sample, channel) over its spatial elements when use_input_stats (running statistics,
// when given, updated as torch does), else the running statistics.
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = Tensor(),
                     const Tensor& running_var = Tensor(), const Tensor& weight = Tensor(),
                     const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);

}  // namespace rcuda::nn
