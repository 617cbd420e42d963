// torch.nn.functional's pools: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool2d,
// adaptive_max_pool2d. Differentiable with respect to the input. The arguments, their defaults
// and the errors are rcuda/ops/pool.h's (one value or one per spatial dim; an empty stride is
// the kernel size); F.*(..., return_indices = TRUE) is the *_with_indices form, whose indices
// are int64 flat offsets h * W + w within each (n, c) plane. Outputs keep a channels-last
// input's memory format.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

Tensor max_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0},
                  const std::vector<int64_t>& dilation = {1}, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input,
                                                  const std::vector<int64_t>& kernel_size,
                                                  const std::vector<int64_t>& stride = {},
                                                  const std::vector<int64_t>& padding = {0},
                                                  const std::vector<int64_t>& dilation = {1},
                                                  bool ceil_mode = false);
Tensor max_pool1d(const Tensor& input, int64_t kernel_size,
                  std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                  int64_t dilation = 1, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, int64_t kernel_size,
                                                  std::optional<int64_t> stride = std::nullopt,
                                                  int64_t padding = 0, int64_t dilation = 1,
                                                  bool ceil_mode = false);
// count_include_pad: padding counts in the divisor (up to the padded edge); divisor_override
// replaces the divisor (2-D only, as torch).
Tensor avg_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0}, bool ceil_mode = false,
                  bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool1d(const Tensor& input, int64_t kernel_size,
                  std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
// output_size: one value for both dims or (OH, OW), each >= 1.
Tensor adaptive_avg_pool2d(const Tensor& input, const std::vector<int64_t>& output_size);
Tensor adaptive_max_pool2d(const Tensor& input, const std::vector<int64_t>& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                           const std::vector<int64_t>& output_size);

}  // namespace rcuda::nn
