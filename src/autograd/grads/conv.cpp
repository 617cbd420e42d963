// Gradients of convolutions: one formula per ConvKind, each two passes of rcuda/ops/conv.h, and
// the bias's gradient, the output gradient summed over N, H and W.
#include "conv.h"

namespace rcuda::autograd {

TensorList ConvBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  const Shape& input_shape = input_meta()[0].shape();
  const Shape& weight_shape = input_meta()[1].shape();
  Tensor grad_input, grad_weight, grad_bias;
  switch (kind) {
    case ConvKind::Convolution:
      if (needs_input_grad(0))
        grad_input =
            ops::conv2d_backward_input(g, weight.unpack(*this), input_shape, params, input_format);
      if (needs_input_grad(1))
        grad_weight = ops::conv2d_backward_weight(g, input.unpack(*this), weight_shape, params,
                                                  weight_format);
      break;
    case ConvKind::Transposed:
      if (needs_input_grad(0))
        grad_input = ops::conv_transpose2d_backward_input(g, weight.unpack(*this), input_shape,
                                                          params, input_format);
      if (needs_input_grad(1))
        grad_weight = ops::conv_transpose2d_backward_weight(g, input.unpack(*this), weight_shape,
                                                            params, weight_format);
      break;
  }
  if (needs_input_grad(2)) grad_bias = ops::conv_bias_backward(g);
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace rcuda::autograd
