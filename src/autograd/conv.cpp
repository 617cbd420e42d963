// Entry points of convolutions: one ConvBackward node (grads/conv.h) for conv2d and
// conv_transpose2d; conv1d is conv2d on views of height 1, which the view hook records.
#include "rcuda/autograd/conv.h"

#include <string>
#include <vector>

#include "grads/conv.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"

namespace rcuda {
namespace {

using autograd::ConvBackward;
using autograd::ConvKind;
using autograd::OpCall;
using autograd::SavedTensor;

template <typename Forward>
Tensor record_conv(OpId op, ConvKind kind, const Tensor& input, const Tensor& weight,
                   const Tensor& bias, const ConvParams& params, Forward forward) {
  if (!OpCall::records(input, weight, bias)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = autograd::make_node<ConvBackward>(op, input, weight, bias);
  node->kind = kind;
  node->params = params;
  node->input_format = suggest_memory_format(input);
  node->weight_format = suggest_memory_format(weight);
  // The input is needed only for the weight's gradient, the weight only for the input's.
  if (autograd::needs_grad(weight)) node->input = SavedTensor(input, SavedTensor::kInput);
  if (autograd::needs_grad(input)) node->weight = SavedTensor(weight, SavedTensor::kInput);
  autograd::set_history(out, node);
  return out;
}

// Runs f, naming conv1d in the errors of the conv2d it runs (whose shapes have height 1).
template <typename F>
Tensor as_conv1d(F f) {
  const std::string prefix = "conv1d (a conv2d of height 1): ";
  try {
    return f();
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const DTypeError& e) {
    throw DTypeError(prefix + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(prefix + e.what());
  }
}

void check_1d(const char* arg, const Tensor& t, const char* layout) {
  RCUDA_CHECK(t.defined(), ValueError, "conv1d: ", arg, " is undefined");
  RCUDA_CHECK(t.dim() == 3, ShapeError, "conv1d: ", arg, " must be 3-D ", layout, ", got shape ",
              shape_str(t.shape()));
}

std::vector<int64_t> as_list(const std::array<int64_t, 2>& a) { return {a[0], a[1]}; }

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const ConvParams& params) {
  OpCall call(OpId::Conv2d, input);
  if (call.autocasts()) return conv2d(call.cast(input), call.cast(weight), call.cast(bias), params);
  Tensor out = record_conv(call.op(), ConvKind::Convolution, input, weight, bias, params,
                           [&] { return ops::conv2d(input, weight, bias, params); });
  if (call.reported()) {
    Attributes attrs{{"stride", as_list(params.stride)},
                     {"padding", as_list(params.padding)},
                     {"dilation", as_list(params.dilation)},
                     {"groups", params.groups}};
    if (params.padding_end_extra != std::array<int64_t, 2>{0, 0})
      attrs.set("padding_end_extra", as_list(params.padding_end_extra));
    call.report({input, weight, bias}, attrs, {out});
  }
  return out;
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvParams& params, std::array<int64_t, 2> output_padding) {
  OpCall call(OpId::ConvTranspose2d, input);
  if (call.autocasts())
    return conv_transpose2d(call.cast(input), call.cast(weight), call.cast(bias), params,
                            output_padding);
  Tensor out = record_conv(call.op(), ConvKind::Transposed, input, weight, bias, params, [&] {
    return ops::conv_transpose2d(input, weight, bias, params, output_padding);
  });
  if (call.reported())
    call.report({input, weight, bias},
                {{"stride", as_list(params.stride)},
                 {"padding", as_list(params.padding)},
                 {"output_padding", as_list(output_padding)},
                 {"groups", params.groups},
                 {"dilation", as_list(params.dilation)}},
                {out});
  return out;
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups, int64_t padding_end_extra) {
  OpCall call(OpId::Conv1d, input);
  if (call.autocasts())
    return conv1d(call.cast(input), call.cast(weight), call.cast(bias), stride, padding, dilation,
                  groups, padding_end_extra);
  check_1d("input", input, "[N, C, L]");
  check_1d("weight", weight, "[O, C / groups, K]");
  ConvParams p;
  p.stride = {1, stride};
  p.padding = {0, padding};
  p.dilation = {1, dilation};
  p.groups = groups;
  p.padding_end_extra = {0, padding_end_extra};
  Tensor out = as_conv1d(
      [&] { return rcuda::conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias, p).squeeze(2); });
  if (call.reported()) {
    // One-element lists, as the 1-D pools report theirs.
    Attributes attrs{{"stride", std::vector<int64_t>{stride}},
                     {"padding", std::vector<int64_t>{padding}},
                     {"dilation", std::vector<int64_t>{dilation}},
                     {"groups", groups}};
    if (padding_end_extra != 0)
      attrs.set("padding_end_extra", std::vector<int64_t>{padding_end_extra});
    call.report({input, weight, bias}, attrs, {out});
  }
  return out;
}

}  // namespace rcuda
