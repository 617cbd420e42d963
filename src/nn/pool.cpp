// The pools of torch.nn.functional: the recording entry points of rcuda/autograd/api.h (one
// PoolBackward node each), which check every argument (rcuda/ops/pool.h).
#include "rcuda/nn/pool.h"

#include "rcuda/autograd/api.h"

namespace rcuda::nn {

Tensor max_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  const std::vector<int64_t>& dilation, bool ceil_mode) {
  return rcuda::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input,
                                                  const std::vector<int64_t>& kernel_size,
                                                  const std::vector<int64_t>& stride,
                                                  const std::vector<int64_t>& padding,
                                                  const std::vector<int64_t>& dilation,
                                                  bool ceil_mode) {
  return rcuda::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor max_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, int64_t dilation, bool ceil_mode) {
  return rcuda::max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, int64_t kernel_size,
                                                  std::optional<int64_t> stride, int64_t padding,
                                                  int64_t dilation, bool ceil_mode) {
  return rcuda::max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor avg_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  return rcuda::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override);
}

Tensor avg_pool1d(const Tensor& input, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, bool ceil_mode, bool count_include_pad) {
  return rcuda::avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

Tensor adaptive_avg_pool2d(const Tensor& input, const std::vector<int64_t>& output_size) {
  return rcuda::adaptive_avg_pool2d(input, output_size);
}

Tensor adaptive_max_pool2d(const Tensor& input, const std::vector<int64_t>& output_size) {
  return rcuda::adaptive_max_pool2d(input, output_size).first;
}

std::pair<Tensor, Tensor> adaptive_max_pool2d_with_indices(
    const Tensor& input, const std::vector<int64_t>& output_size) {
  return rcuda::adaptive_max_pool2d(input, output_size);
}

}  // namespace rcuda::nn
