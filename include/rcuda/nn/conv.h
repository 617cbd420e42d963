// Convolution layers of torch.nn.functional: conv1d, conv2d, conv_transpose2d, with torch's
// argument forms: a size per spatial dim given as one number for all dims or one per dim, padding
// as numbers or "same" / "valid", and unbatched input ([C, L] or [C, H, W]). Differentiable with
// respect to input, weight and bias (the recording ops of rcuda/autograd/conv.h).
//
//   Tensor y = nn::conv2d(x, w, b, /*stride=*/1, /*padding=*/"same");
//   Tensor z = nn::conv2d(x, w, {}, {2, 1}, {1, 0});
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

// One number for every spatial dim, or one per dim (torch's int or tuple).
struct SpatialSize {
  SpatialSize(int value) : values{value} {}      // NOLINT(google-explicit-constructor)
  SpatialSize(int64_t value) : values{value} {}  // NOLINT(google-explicit-constructor)
  SpatialSize(std::initializer_list<int64_t> v) : values(v) {}
  SpatialSize(std::vector<int64_t> v) : values(std::move(v)) {}  // NOLINT
  std::vector<int64_t> values;
};

// Numbers (zeros on both sides of each spatial dim), or "valid" (no padding) or "same" (the
// output keeps the input's size; stride 1 only, as torch). "same" with a kernel whose dilated
// size is even pads one zero more at the end than at the start, as torch does.
struct ConvPadding {
  ConvPadding(int value) : size(value) {}      // NOLINT(google-explicit-constructor)
  ConvPadding(int64_t value) : size(value) {}  // NOLINT(google-explicit-constructor)
  ConvPadding(std::initializer_list<int64_t> v) : size(v) {}
  ConvPadding(std::vector<int64_t> v) : size(std::move(v)) {}  // NOLINT
  ConvPadding(const char* mode) : size(0), mode(mode) {}  // NOLINT(google-explicit-constructor)
  ConvPadding(std::string mode) : size(0), mode(std::move(mode)) {}  // NOLINT
  SpatialSize size;
  std::string mode;  // "" for numbers
};

// input [N, C, L] or [C, L], weight [O, C / groups, K], bias [O] or undefined.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const SpatialSize& stride = 1, const ConvPadding& padding = 0,
              const SpatialSize& dilation = 1, int64_t groups = 1);
// input [N, C, H, W] or [C, H, W], weight [O, C / groups, KH, KW], bias [O] or undefined.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const SpatialSize& stride = 1, const ConvPadding& padding = 0,
              const SpatialSize& dilation = 1, int64_t groups = 1);
// input [N, C, H, W] or [C, H, W], weight [C, O / groups, KH, KW], bias [O] or undefined; the
// argument order is torch's (output_padding and groups before dilation). Numeric padding only.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const SpatialSize& stride = 1, const SpatialSize& padding = 0,
                        const SpatialSize& output_padding = 0, int64_t groups = 1,
                        const SpatialSize& dilation = 1);

}  // namespace rcuda::nn
