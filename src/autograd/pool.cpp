// Entry points of the pools (Note [Recording] in rcuda/autograd/record.h): one PoolBackward node
// per call. A max pool that records computes its indices even when the caller does not want
// them: they are what the backward reads.
#include "grads/pool.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

std::pair<Tensor, Tensor> record_pool(const Tensor& x, const ops::PoolOptions& options,
                                      bool with_indices) {
  if (!autograd::should_record(x)) {
    const ops::PoolForward f = ops::pool_forward(x, options, with_indices);
    return {f.out, f.indices};
  }
  const bool max = options.op == PoolOp::Max;
  const ops::PoolForward f =
      autograd::below_autograd([&] { return ops::pool_forward(x, options, max); });
  auto node = autograd::make_node<autograd::PoolBackward>(x);
  node->options = options;
  node->input_shape = x.shape();
  node->channels_last = f.channels_last;
  if (max) node->indices = autograd::SavedTensor(f.indices);
  autograd::set_history(f.out, node);
  return {f.out, with_indices ? f.indices : Tensor()};
}

std::vector<int64_t> optional_stride(std::optional<int64_t> stride) {
  return stride ? std::vector<int64_t>{*stride} : std::vector<int64_t>{};
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  const std::vector<int64_t>& dilation, bool ceil_mode) {
  return record_pool(x, ops::max_pool_options(2, kernel_size, stride, padding, dilation, ceil_mode),
                     false)
      .first;
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(
    const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
    const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, bool ceil_mode) {
  return record_pool(x, ops::max_pool_options(2, kernel_size, stride, padding, dilation, ceil_mode),
                     true);
}

Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, int64_t dilation, bool ceil_mode) {
  return max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode).first;
}

std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, int64_t kernel_size,
                                                  std::optional<int64_t> stride, int64_t padding,
                                                  int64_t dilation, bool ceil_mode) {
  return record_pool(x,
                     ops::max_pool_options(1, {kernel_size}, optional_stride(stride), {padding},
                                           {dilation}, ceil_mode),
                     true);
}

Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  return record_pool(x,
                     ops::avg_pool_options(2, kernel_size, stride, padding, ceil_mode,
                                           count_include_pad, divisor_override),
                     false)
      .first;
}

Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, bool ceil_mode, bool count_include_pad) {
  return record_pool(x,
                     ops::avg_pool_options(1, {kernel_size}, optional_stride(stride), {padding},
                                           ceil_mode, count_include_pad, std::nullopt),
                     false)
      .first;
}

Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size) {
  return record_pool(x, ops::adaptive_pool_options(PoolOp::Avg, output_size), false).first;
}

std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x,
                                              const std::vector<int64_t>& output_size) {
  return record_pool(x, ops::adaptive_pool_options(PoolOp::Max, output_size), true);
}

}  // namespace rcuda
