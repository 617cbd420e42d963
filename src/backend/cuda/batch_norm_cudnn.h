// Batch normalisation through cuDNN's graph API (batch_norm_cudnn.cpp, the one file that
// includes cudnn-frontend) and the kernels the CUDA backend shares with it
// (kernels/batch_norm.cu). docs/pooling-normalization.md says which path runs when.
#pragma once

#include <cstdint>

#include "rcuda/tensor/tensor.h"

namespace rcuda::cuda {

// Whether batch_norm tries cuDNN before its own kernels (rcuda::cuda::set_cudnn_batch_norm).
bool cudnn_batch_norm_enabled();

// Backend::batch_norm's forward (training: mean and invstd written; otherwise read) through a
// cached cuDNN graph, without the running statistics. False, with nothing written, when cuDNN
// declines the configuration (dtype, layout, shape, device): the caller runs its kernels.
bool cudnn_batch_norm_forward(const Tensor& out, const Tensor& mean, const Tensor& invstd,
                              const Tensor& in, const Tensor& weight, const Tensor& bias,
                              bool training, double eps);
// Backend::batch_norm_backward with batch statistics, likewise.
bool cudnn_batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                               const Tensor& mean, const Tensor& invstd, const Tensor& weight);

// running = (1 - momentum) running + momentum * batch statistic (the variance unbiased over
// `count` values, recovered from invstd as 1 / invstd^2 - eps), on the device. Either running
// tensor may be undefined.
void batch_norm_update_running_stats(const Tensor& mean, const Tensor& invstd,
                                     const Tensor& running_mean, const Tensor& running_var,
                                     double momentum, double eps, int64_t count);

}  // namespace rcuda::cuda
