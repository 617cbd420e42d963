// conv1d, conv2d and conv_transpose2d of torch.nn.functional over the recording convolutions
// (rcuda/autograd/conv.h): argument forms, "same"/"valid" padding, unbatched input.
#include "rcuda/nn/conv.h"

#include <string>

#include "nn_util.h"
#include "rcuda/autograd/conv.h"
#include "rcuda/autograd/funnel.h"

namespace rcuda::nn {
namespace {

using autograd::OpCall;
using Pair = std::array<int64_t, 2>;

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// One value per spatial dim of an op with `dims` of them (1 or 2).
Pair per_dim(const char* op, const char* arg, const SpatialSize& size, int dims) {
  const std::vector<int64_t>& v = size.values;
  RCUDA_CHECK(v.size() == 1 || static_cast<int>(v.size()) == dims, ValueError, op, ": ", arg,
              dims == 1 ? " takes one number" : " takes one number or two (one per spatial dim)",
              ", got ", list_str(v));
  if (dims == 1) return {v[0], v[0]};
  return {v[0], v.size() == 1 ? v[0] : v[1]};
}

// The padding of each dim and the extra zeros at its end (ConvPadding's rules).
struct Padding {
  Pair padding{0, 0}, end_extra{0, 0};
};

Padding resolve_padding(const char* op, const ConvPadding& p, const Pair& stride,
                        const Pair& dilation, const Pair& kernel, int dims) {
  Padding r;
  if (p.mode.empty()) {
    r.padding = per_dim(op, "padding", p.size, dims);
    return r;
  }
  if (p.mode == "valid") return r;
  RCUDA_CHECK(p.mode == "same", ValueError, op,
              ": padding must be numbers, \"same\" or \"valid\", got \"", p.mode, "\"");
  RCUDA_CHECK(stride == (Pair{1, 1}), ValueError, op,
              ": padding=\"same\" is not supported for strided convolutions (stride ",
              dims == 1 ? std::to_string(stride[1]) : list_str({stride[0], stride[1]}),
              "), as in torch");
  for (int d = 0; d < 2; ++d) {
    // torch's rule: the dilated kernel's extent minus one, split with the odd one at the end.
    const int64_t total = dilation[d] * (kernel[d] - 1);
    r.padding[d] = total / 2;
    r.end_extra[d] = total - 2 * r.padding[d];
  }
  return r;
}

void check_weight(const char* op, const Tensor& weight, int64_t dims, const char* layout) {
  RCUDA_CHECK(weight.defined(), ValueError, op, ": weight is undefined");
  RCUDA_CHECK(weight.dim() == dims, ShapeError, op, ": weight must be ", dims, "-D ", layout,
              ", got shape ", shape_str(weight.shape()));
}

// input with a batch dim of 1 added when it is unbatched (batched_dims - 1 dims), and whether
// it was.
std::pair<Tensor, bool> batched(const char* op, const Tensor& input, int64_t batched_dims,
                                const char* layout) {
  RCUDA_CHECK(input.defined(), ValueError, op, ": input is undefined");
  RCUDA_CHECK(input.dim() == batched_dims || input.dim() == batched_dims - 1, ShapeError, op,
              ": input must be ", batched_dims, "-D ", layout, " or ", batched_dims - 1,
              "-D without the batch dim, got shape ", shape_str(input.shape()));
  if (input.dim() == batched_dims) return {input, false};
  return {input.unsqueeze(0), true};
}

// The attributes of a convolution, each size one number per spatial dim (of `dims`, 1 or 2):
// its numeric padding, or the padding mode ("same", "valid") that it was given instead.
Attributes conv_attributes(const Pair& stride, const ConvPadding& padding, const Padding& resolved,
                           const Pair& dilation, int64_t groups, int dims) {
  const auto list = [dims](const Pair& v) {
    return dims == 1 ? std::vector<int64_t>{v[1]} : std::vector<int64_t>{v[0], v[1]};
  };
  Attributes attrs{{"stride", list(stride)}};
  if (padding.mode.empty())
    attrs.set("padding", list(resolved.padding));
  else
    attrs.set("padding_mode", padding.mode);
  attrs.set("dilation", list(dilation));
  attrs.set("groups", groups);
  return attrs;
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const SpatialSize& stride, const ConvPadding& padding, const SpatialSize& dilation,
              int64_t groups) {
  OpCall call(OpId::Conv1d, input);
  if (call.autocasts())
    return conv1d(call.cast(input), call.cast(weight), call.cast(bias), stride, padding, dilation,
                  groups);
  constexpr const char* kOp = "conv1d";
  const auto [x, unbatched] = batched(kOp, input, 3, "[N, C, L]");
  check_weight(kOp, weight, 3, "[O, C / groups, K]");
  const Pair s = per_dim(kOp, "stride", stride, 1), d = per_dim(kOp, "dilation", dilation, 1);
  const Padding p = resolve_padding(kOp, padding, {1, s[1]}, {1, d[1]}, {1, weight.size(2)}, 1);
  const Tensor y = rcuda::conv1d(x, weight, bias, s[1], p.padding[1], d[1], groups, p.end_extra[1]);
  const Tensor out = unbatched ? y.squeeze(0) : y;
  if (call.reported())
    call.report({input, weight, bias}, conv_attributes(s, padding, p, d, groups, 1), {out});
  return out;
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const SpatialSize& stride, const ConvPadding& padding, const SpatialSize& dilation,
              int64_t groups) {
  OpCall call(OpId::Conv2d, input);
  if (call.autocasts())
    return conv2d(call.cast(input), call.cast(weight), call.cast(bias), stride, padding, dilation,
                  groups);
  constexpr const char* kOp = "conv2d";
  const auto [x, unbatched] = batched(kOp, input, 4, "[N, C, H, W]");
  check_weight(kOp, weight, 4, "[O, C / groups, KH, KW]");
  ConvParams params;
  params.stride = per_dim(kOp, "stride", stride, 2);
  params.dilation = per_dim(kOp, "dilation", dilation, 2);
  params.groups = groups;
  const Padding p = resolve_padding(kOp, padding, params.stride, params.dilation,
                                    {weight.size(2), weight.size(3)}, 2);
  params.padding = p.padding;
  params.padding_end_extra = p.end_extra;
  const Tensor y = rcuda::conv2d(x, weight, bias, params);
  const Tensor out = unbatched ? y.squeeze(0) : y;
  if (call.reported())
    call.report({input, weight, bias},
                conv_attributes(params.stride, padding, p, params.dilation, groups, 2), {out});
  return out;
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const SpatialSize& stride, const SpatialSize& padding,
                        const SpatialSize& output_padding, int64_t groups,
                        const SpatialSize& dilation) {
  OpCall call(OpId::ConvTranspose2d, input);
  if (call.autocasts())
    return conv_transpose2d(call.cast(input), call.cast(weight), call.cast(bias), stride, padding,
                            output_padding, groups, dilation);
  constexpr const char* kOp = "conv_transpose2d";
  const auto [x, unbatched] = batched(kOp, input, 4, "[N, C, H, W]");
  check_weight(kOp, weight, 4, "[C, O / groups, KH, KW]");
  ConvParams params;
  params.stride = per_dim(kOp, "stride", stride, 2);
  params.padding = per_dim(kOp, "padding", padding, 2);
  params.dilation = per_dim(kOp, "dilation", dilation, 2);
  params.groups = groups;
  const Pair out_padding = per_dim(kOp, "output_padding", output_padding, 2);
  const Tensor y = rcuda::conv_transpose2d(x, weight, bias, params, out_padding);
  const Tensor out = unbatched ? y.squeeze(0) : y;
  if (call.reported()) {
    const auto list = [](const Pair& v) { return std::vector<int64_t>{v[0], v[1]}; };
    call.report({input, weight, bias},
                {{"stride", list(params.stride)},
                 {"padding", list(params.padding)},
                 {"output_padding", list(out_padding)},
                 {"groups", groups},
                 {"dilation", list(params.dilation)}},
                {out});
  }
  return out;
}

}  // namespace rcuda::nn
