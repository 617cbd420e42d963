// Entry points of the pools (Note [Recording] in rcuda/autograd/record.h): one PoolBackward node
// per call. A max pool that records computes its indices even when the caller does not want
// them: they are what the backward reads.
#include "grads/pool.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::OpCall;

std::pair<Tensor, Tensor> record_pool(OpId op, const Tensor& x, const ops::PoolOptions& options,
                                      bool with_indices) {
  if (!OpCall::records(x)) {
    const ops::PoolForward f = ops::pool_forward(x, options, with_indices);
    return {f.out, f.indices};
  }
  const bool max = options.op == PoolOp::Max;
  const ops::PoolForward f =
      autograd::below_autograd([&] { return ops::pool_forward(x, options, max); });
  auto node = autograd::make_node<autograd::PoolBackward>(op, x);
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

// A 1-D pool's argument as a one-element list, as the 2-D pools take them.
std::vector<int64_t> one(int64_t v) { return {v}; }

Attributes max_pool_attributes(const std::vector<int64_t>& kernel_size,
                               const std::vector<int64_t>& stride,
                               const std::vector<int64_t>& padding,
                               const std::vector<int64_t>& dilation, bool ceil_mode,
                               bool return_indices) {
  return {{"kernel_size", kernel_size}, {"stride", stride},
          {"padding", padding},         {"dilation", dilation},
          {"ceil_mode", ceil_mode},     {"return_indices", return_indices}};
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  const std::vector<int64_t>& dilation, bool ceil_mode) {
  OpCall call(OpId::MaxPool2d, x);
  Tensor out =
      record_pool(call.op(), x,
                  ops::max_pool_options(2, kernel_size, stride, padding, dilation, ceil_mode),
                  false)
          .first;
  if (call.reported())
    call.report({x}, max_pool_attributes(kernel_size, stride, padding, dilation, ceil_mode, false),
                {out});
  return out;
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(
    const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
    const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, bool ceil_mode) {
  OpCall call(OpId::MaxPool2d, x);
  std::pair<Tensor, Tensor> out = record_pool(
      call.op(), x, ops::max_pool_options(2, kernel_size, stride, padding, dilation, ceil_mode),
      true);
  if (call.reported())
    call.report({x}, max_pool_attributes(kernel_size, stride, padding, dilation, ceil_mode, true),
                {out.first, out.second});
  return out;
}

Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, int64_t dilation, bool ceil_mode) {
  OpCall call(OpId::MaxPool1d, x);
  Tensor out = max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode).first;
  if (call.reported())
    call.report({x},
                max_pool_attributes(one(kernel_size), optional_stride(stride), one(padding),
                                    one(dilation), ceil_mode, false),
                {out});
  return out;
}

std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, int64_t kernel_size,
                                                  std::optional<int64_t> stride, int64_t padding,
                                                  int64_t dilation, bool ceil_mode) {
  OpCall call(OpId::MaxPool1d, x);
  std::pair<Tensor, Tensor> out =
      record_pool(call.op(), x,
                  ops::max_pool_options(1, {kernel_size}, optional_stride(stride), {padding},
                                        {dilation}, ceil_mode),
                  true);
  if (call.reported())
    call.report({x},
                max_pool_attributes(one(kernel_size), optional_stride(stride), one(padding),
                                    one(dilation), ceil_mode, true),
                {out.first, out.second});
  return out;
}

Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  OpCall call(OpId::AvgPool2d, x);
  Tensor out = record_pool(call.op(), x,
                           ops::avg_pool_options(2, kernel_size, stride, padding, ceil_mode,
                                                 count_include_pad, divisor_override),
                           false)
                   .first;
  if (call.reported()) {
    Attributes attrs{{"kernel_size", kernel_size},
                     {"stride", stride},
                     {"padding", padding},
                     {"ceil_mode", ceil_mode},
                     {"count_include_pad", count_include_pad}};
    if (divisor_override) attrs.set("divisor_override", *divisor_override);
    call.report({x}, attrs, {out});
  }
  return out;
}

Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, bool ceil_mode, bool count_include_pad) {
  OpCall call(OpId::AvgPool1d, x);
  Tensor out =
      record_pool(call.op(), x,
                  ops::avg_pool_options(1, {kernel_size}, optional_stride(stride), {padding},
                                        ceil_mode, count_include_pad, std::nullopt),
                  false)
          .first;
  if (call.reported())
    call.report({x},
                {{"kernel_size", one(kernel_size)},
                 {"stride", optional_stride(stride)},
                 {"padding", one(padding)},
                 {"ceil_mode", ceil_mode},
                 {"count_include_pad", count_include_pad}},
                {out});
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size) {
  OpCall call(OpId::AdaptiveAvgPool2d, x);
  Tensor out =
      record_pool(call.op(), x, ops::adaptive_pool_options(PoolOp::Avg, output_size), false).first;
  if (call.reported()) call.report({x}, {{"output_size", output_size}}, {out});
  return out;
}

std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x,
                                              const std::vector<int64_t>& output_size) {
  OpCall call(OpId::AdaptiveMaxPool2d, x);
  std::pair<Tensor, Tensor> out =
      record_pool(call.op(), x, ops::adaptive_pool_options(PoolOp::Max, output_size), true);
  if (call.reported()) call.report({x}, {{"output_size", output_size}}, {out.first, out.second});
  return out;
}

}  // namespace rcuda
