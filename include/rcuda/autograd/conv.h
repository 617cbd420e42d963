// The public convolution ops that record for backward (included by rcuda/autograd/api.h; the
// no-grad contract is rcuda/ops/conv.h). Gradients flow to input, weight and bias; formulas in
// src/autograd/grads/conv.cpp. rcuda::nn::conv1d/conv2d/conv_transpose2d (rcuda/nn/conv.h) add
// torch's argument forms ("same", one number for both dims, unbatched input) on top.
#pragma once

#include <array>
#include <cstdint>

#include "rcuda/ops/conv.h"

namespace rcuda {

// input [N, C, H, W], weight [O, C / groups, KH, KW], bias [O] or undefined.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const ConvParams& params = {});
// input [N, C, H, W], weight [C, O / groups, KH, KW], bias [O] or undefined; output_padding
// adds rows and columns at the end of the output (smaller than the stride or the dilation).
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const ConvParams& params = {},
                        std::array<int64_t, 2> output_padding = {0, 0});
// conv2d of height 1: input [N, C, L], weight [O, C / groups, K]; padding_end_extra zeros more
// at the end of L (padding="same" with an even dilated kernel). Errors name conv1d.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1,
              int64_t padding_end_extra = 0);

}  // namespace rcuda
