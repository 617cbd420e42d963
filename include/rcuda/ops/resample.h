// Padding and interpolation without autograd (rcuda::pad and rcuda::interpolate record;
// docs/resample-pad.md). Arguments and errors are torch.nn.functional.pad's and interpolate's:
//
// pad(x, padding, mode, value): padding lists (before, after) pairs from the last dim backwards
// (PyTorch's order: (left, right, top, bottom, front, back)), an even count of at most 2 * dims.
// - "constant": any dims, any dtype but float8; value (default 0) fills the new elements and
//   negative padding crops (an output size below 0 is a ShapeError).
// - "reflect", "replicate", "circular": 2, 4 or 6 values pad the last 1, 2 or 3 dims of a
//   (C, spatial...) or (N, C, spatial...) input whose sizes, but N, are non-zero; reflect needs
//   each padding < the dim's size (the edge is not repeated), circular <= the size left after
//   its negative part is cropped off (PyTorch crops before it wraps); each output size >= 1; a
//   value other than 0 is refused, as PyTorch does. Negative padding crops.
// - A 4-D channels-last input gives a channels-last output (Note [Channels-last layers] in
//   src/ops/layer_layout.h); every other output is contiguous.
//
// interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor): x is
// (N, C, L) or (N, C, H, W), floating, sizes but N non-zero. Exactly one of size (>= 1) and
// scale_factor (> 0, finite; the output is floor(input * factor), at least 1), each one value
// or one per spatial dim. Modes: "nearest" and "nearest-exact" (3-D or 4-D), "linear" (3-D),
// "bilinear" (4-D), "area" (adaptive average pooling, as PyTorch). align_corners (default false)
// may only be given for linear and bilinear; recompute_scale_factor = true interpolates as if
// the computed size had been given (not with size). The source-index formulas are PyTorch's
// (Note [Resampling primitives] in rcuda/backend/backend.h). Outputs keep a channels-last
// input's memory format.
//
// Errors are ValueError (argument values), ShapeError (input sizes and ranks) and DTypeError,
// each naming the op, the argument and the values.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rcuda/backend/backend.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// ---- pad ------------------------------------------------------------------------------------

// One pad call resolved against its input: what the forward runs and the backward needs.
struct PadPlan {
  std::string mode = "constant";
  bool constant = true;
  PadArgs args;  // the primitive's, for the other modes
  // Circular: the negative padding, cropped off the input before it wraps (0 otherwise).
  std::array<int64_t, 3> crop_before{0, 0, 0}, crop_after{0, 0, 0};
  std::vector<int64_t> padding;  // as given
  double value = 0;
  Shape input_shape, output_shape;
  bool channels_last = false;  // the output's (and the input gradient's) format
};

PadPlan pad_plan(const Tensor& x, const std::vector<int64_t>& padding, const std::string& mode,
                 std::optional<double> value);
Tensor pad_forward(const Tensor& x, const PadPlan& plan);
// The input gradient (the plan's input shape) from grad_out (its output shape, any strides).
Tensor pad_backward(const Tensor& grad_out, const PadPlan& plan);

Tensor pad(const Tensor& x, const std::vector<int64_t>& padding,
           const std::string& mode = "constant", std::optional<double> value = std::nullopt);

// ---- interpolate ----------------------------------------------------------------------------

struct InterpolatePlan {
  std::string mode = "nearest";
  bool area = false;     // adaptive average pooling instead of the interpolate primitive
  InterpolateArgs args;  // the primitive's (channels_last: the input's format)
  int spatial_dims = 2;
  Shape input_shape, output_shape;
};

InterpolatePlan interpolate_plan(const Tensor& x, const std::vector<int64_t>& size,
                                 const std::vector<double>& scale_factor, const std::string& mode,
                                 std::optional<bool> align_corners,
                                 std::optional<bool> recompute_scale_factor);
Tensor interpolate_forward(const Tensor& x, const InterpolatePlan& plan);
// The input gradient from grad_out (the output's shape, any strides); not for "area", whose
// gradient is adaptive average pooling's.
Tensor interpolate_backward(const Tensor& grad_out, const InterpolatePlan& plan);

Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size = {},
                   const std::vector<double>& scale_factor = {},
                   const std::string& mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt);

}  // namespace rcuda::ops
