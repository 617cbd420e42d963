// Convolutions without autograd: the forward and backward halves that the autograd layer
// (rcuda::conv2d, conv1d, conv_transpose2d) and rcuda::nn call. oneDNN on the CPU (float64
// through im2col and OpenBLAS), cuDNN's graph API on CUDA; docs/convolution.md says how.
//
// Tensors are [N, C, H, W] (conv1d is conv2d with H = 1, in the layers above); weights of a
// convolution [O, C / groups, KH, KW], of a transposed one [C, O / groups, KH, KW]. Any strides
// are accepted: operands in neither memory format are copied into a contiguous one, and results
// keep the input's memory format (contiguous or channels-last, rcuda/tensor/memory_format.h).
// Floating dtypes: float32, float64, float16 and bfloat16 on the CPU (the half types computed
// in float32); float32, float16 and bfloat16 on CUDA, with float32 accumulation (and TF32 for
// float32 while cuda::allow_conv_tf32() is on). Errors name the op, the argument and the values.
#pragma once

#include <array>
#include <cstdint>

#include "rcuda/tensor/memory_format.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda {

// Per spatial dim (H, W), as torch.nn.functional.conv2d. In namespace rcuda (not ops), so that
// an unqualified conv2d(x, w, b, params) finds the recording rcuda::conv2d alone.
struct ConvParams {
  std::array<int64_t, 2> stride{1, 1};    // >= 1
  std::array<int64_t, 2> padding{0, 0};   // zeros before and after each dim, >= 0
  std::array<int64_t, 2> dilation{1, 1};  // >= 1
  int64_t groups = 1;                     // >= 1, dividing both channel counts
  // More zeros after the end of each dim, beyond padding: padding="same" with a kernel of even
  // dilated size pads one more at the end, as torch does. Convolutions only (not transposed).
  std::array<int64_t, 2> padding_end_extra{0, 0};
};

}  // namespace rcuda

namespace rcuda::ops {

using rcuda::ConvParams;

// The [N, O, OH, OW] shape of conv2d(input, weight) with OH = floor((H + 2 ph + extra_h -
// dh (KH - 1) - 1) / sh) + 1 (and OW alike); the same checks as conv2d.
Shape conv2d_output_shape(const Shape& input, const Shape& weight, const ConvParams& params);

// 2-D cross-correlation, as torch.nn.functional.conv2d: input [N, C, H, W], weight [O, C /
// groups, KH, KW], bias [O] or undefined. The result [N, O, OH, OW] has the input's memory format.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const ConvParams& params = {});

// relu(conv2d(input, weight, bias, params)), for inference: one pass where the backend fuses
// the bias and relu into the convolution's epilogue (cuDNN), else conv2d then relu. Same checks
// as conv2d; nothing records, so callers that need gradients use conv2d and relu.
Tensor conv2d_bias_relu(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvParams& params = {});

// d/d input of sum(conv2d(input, weight) * grad_out): grad_out [N, O, OH, OW], the result
// input_shape, in `format`.
Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Shape& input_shape,
                             const ConvParams& params,
                             MemoryFormat format = MemoryFormat::Contiguous);
// d/d weight of the same: the result has weight_shape, in `format`.
Tensor conv2d_backward_weight(const Tensor& grad_out, const Tensor& input,
                              const Shape& weight_shape, const ConvParams& params,
                              MemoryFormat format = MemoryFormat::Contiguous);
// d/d bias: grad_out summed over N, H and W, [O].
Tensor conv_bias_backward(const Tensor& grad_out);

// The [N, O, OH, OW] shape of conv_transpose2d: OH = (H - 1) sh - 2 ph + dh (KH - 1) +
// output_padding_h + 1, O = weight.size(1) * groups. output_padding must be smaller than the
// stride or the dilation of its dim (torch's rule).
Shape conv_transpose2d_output_shape(const Shape& input, const Shape& weight,
                                    const ConvParams& params,
                                    std::array<int64_t, 2> output_padding);

// Transposed convolution, as torch.nn.functional.conv_transpose2d: the gradient of conv2d with
// respect to its input, taken as a layer. input [N, C, H, W], weight [C, O / groups, KH, KW],
// bias [O] or undefined; the result has the input's memory format.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const ConvParams& params = {},
                        std::array<int64_t, 2> output_padding = {0, 0});
// Its gradients: with respect to the input a convolution of grad_out, with respect to the
// weight conv2d's weight gradient with the roles of input and grad_out swapped.
Tensor conv_transpose2d_backward_input(const Tensor& grad_out, const Tensor& weight,
                                       const Shape& input_shape, const ConvParams& params,
                                       MemoryFormat format = MemoryFormat::Contiguous);
Tensor conv_transpose2d_backward_weight(const Tensor& grad_out, const Tensor& input,
                                        const Shape& weight_shape, const ConvParams& params,
                                        MemoryFormat format = MemoryFormat::Contiguous);

}  // namespace rcuda::ops
