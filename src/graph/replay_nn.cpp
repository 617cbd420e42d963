// Replay of the layers (rcuda::nn): linear, dropout, embedding, convolutions, pools, norms,
// padding and interpolation.
#include "rcuda/autograd/conv.h"
#include "rcuda/core/error.h"
#include "rcuda/nn/functional.h"
#include "replay.h"

namespace rcuda::graph::replay {
namespace {

std::optional<int64_t> optional_integer(const Attributes& a, const char* name, OpId op) {
  if (!a.has(name)) return std::nullopt;
  return integer(a, name, op);
}

}  // namespace

Tensors layer(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  switch (op) {
    case OpId::Linear:
      return {nn::linear(x, input(in, 1, op), optional_input(in, 2))};
    case OpId::Dropout:
      return {nn::dropout(x, number(a, "p", op), flag(a, "training", op, true))};
    case OpId::Embedding:
      return {nn::embedding(x, input(in, 1, op), optional_integer(a, "padding_idx", op))};
    default:
      throw InternalError(std::string("graph: no layer replay for ") + op_name(op));
  }
}

Tensors convolution(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  const Tensor& w = input(in, 1, op);
  const Tensor b = optional_input(in, 2);
  const nn::SpatialSize stride = integers(a, "stride", op);
  const nn::SpatialSize dilation = integers(a, "dilation", op);
  const int64_t groups = integer(a, "groups", op);
  if (op == OpId::ConvTranspose2d)
    return {nn::conv_transpose2d(x, w, b, stride, integers(a, "padding", op),
                                 integers(a, "output_padding", op), groups, dilation)};
  // Only the convolutions below rcuda::nn (rcuda::conv1d, rcuda::conv2d) report extra zeros
  // after the end; rcuda::nn's padding lists cannot say them, so those run again.
  if (a.has("padding_end_extra")) {
    const auto p = integers(a, "padding", op), extra = integers(a, "padding_end_extra", op);
    const auto s = stride.values, d = dilation.values;
    if (op == OpId::Conv1d)
      return {rcuda::conv1d(x, w, b, s.at(0), p.at(0), d.at(0), groups, extra.at(0))};
    ConvParams params;
    params.stride = {s.at(0), s.at(1)};
    params.padding = {p.at(0), p.at(1)};
    params.dilation = {d.at(0), d.at(1)};
    params.groups = groups;
    params.padding_end_extra = {extra.at(0), extra.at(1)};
    return {rcuda::conv2d(x, w, b, params)};
  }
  const nn::ConvPadding padding = a.has("padding_mode")
                                      ? nn::ConvPadding(text(a, "padding_mode", op, ""))
                                      : nn::ConvPadding(integers(a, "padding", op));
  if (op == OpId::Conv1d) return {nn::conv1d(x, w, b, stride, padding, dilation, groups)};
  return {nn::conv2d(x, w, b, stride, padding, dilation, groups)};
}

Tensors pool(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  const bool ceil_mode = flag(a, "ceil_mode", op, false);
  switch (op) {
    case OpId::MaxPool2d: {
      const auto k = integers(a, "kernel_size", op), s = integers(a, "stride", op),
                 p = integers(a, "padding", op), d = integers(a, "dilation", op);
      if (!flag(a, "return_indices", op, false)) return {nn::max_pool2d(x, k, s, p, d, ceil_mode)};
      auto [values, indices] = nn::max_pool2d_with_indices(x, k, s, p, d, ceil_mode);
      return {values, indices};
    }
    case OpId::MaxPool1d: {
      const int64_t k = integers(a, "kernel_size", op).at(0), p = integers(a, "padding", op).at(0),
                    d = integers(a, "dilation", op).at(0);
      const auto s = integers(a, "stride", op);
      const std::optional<int64_t> stride = s.empty() ? std::nullopt : std::optional(s[0]);
      if (!flag(a, "return_indices", op, false))
        return {nn::max_pool1d(x, k, stride, p, d, ceil_mode)};
      auto [values, indices] = nn::max_pool1d_with_indices(x, k, stride, p, d, ceil_mode);
      return {values, indices};
    }
    case OpId::AvgPool2d:
      return {nn::avg_pool2d(x, integers(a, "kernel_size", op), integers(a, "stride", op),
                             integers(a, "padding", op), ceil_mode,
                             flag(a, "count_include_pad", op, true),
                             optional_integer(a, "divisor_override", op))};
    case OpId::AvgPool1d: {
      const auto s = integers(a, "stride", op);
      return {nn::avg_pool1d(
          x, integers(a, "kernel_size", op).at(0), s.empty() ? std::nullopt : std::optional(s[0]),
          integers(a, "padding", op).at(0), ceil_mode, flag(a, "count_include_pad", op, true))};
    }
    case OpId::AdaptiveAvgPool2d:
      return {nn::adaptive_avg_pool2d(x, integers(a, "output_size", op))};
    case OpId::AdaptiveMaxPool2d: {
      auto [values, indices] =
          nn::adaptive_max_pool2d_with_indices(x, integers(a, "output_size", op));
      return {values, indices};
    }
    default:
      throw InternalError(std::string("graph: no pool replay for ") + op_name(op));
  }
}

Tensors normalization(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  switch (op) {
    case OpId::LayerNorm: {
      const auto shape = integers(a, "normalized_shape", op);
      return {nn::layer_norm(x, Shape(shape.begin(), shape.end()), optional_input(in, 1),
                             optional_input(in, 2), number(a, "eps", op))};
    }
    case OpId::BatchNorm:
      return {nn::batch_norm(x, optional_input(in, 1), optional_input(in, 2), optional_input(in, 3),
                             optional_input(in, 4), flag(a, "training", op, false),
                             number(a, "momentum", op), number(a, "eps", op))};
    case OpId::GroupNorm:
      return {nn::group_norm(x, integer(a, "num_groups", op), optional_input(in, 1),
                             optional_input(in, 2), number(a, "eps", op))};
    case OpId::InstanceNorm:
      return {nn::instance_norm(x, optional_input(in, 1), optional_input(in, 2),
                                optional_input(in, 3), optional_input(in, 4),
                                flag(a, "use_input_stats", op, true), number(a, "momentum", op),
                                number(a, "eps", op))};
    default:
      throw InternalError(std::string("graph: no normalization replay for ") + op_name(op));
  }
}

Tensors resample(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  if (op == OpId::Pad) {
    std::optional<double> value;
    if (a.has("value")) value = number(a, "value", op);
    return {nn::pad(x, integers(a, "padding", op), text(a, "mode", op, "constant"), value)};
  }
  std::optional<bool> align_corners;
  if (a.has("align_corners")) align_corners = flag(a, "align_corners", op, false);
  std::vector<double> scale;
  if (a.has("scale_factor")) scale = a.get<std::vector<double>>("scale_factor", op);
  std::optional<bool> recompute_scale_factor;
  if (a.has("recompute_scale_factor"))
    recompute_scale_factor = flag(a, "recompute_scale_factor", op, false);
  return {nn::interpolate(x, a.has("size") ? integers(a, "size", op) : std::vector<int64_t>{},
                          scale, text(a, "mode", op, "nearest"), align_corners,
                          recompute_scale_factor)};
}

}  // namespace rcuda::graph::replay
