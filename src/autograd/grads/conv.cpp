// Gradients of convolutions: one formula per ConvKind, each two passes of rcuda/ops/conv.h, and
// the bias's gradient, the output gradient summed over N, H and W.
#include "conv.h"

#include "rcuda/autograd/api.h"
#include "rcuda/autograd/record.h"

namespace rcuda::autograd {

namespace {

struct ConvPasses {
  OpId op;
  const ops::ConvParams& params;
  MemoryFormat input_format, weight_format;
};

// `out`, a gradient pass of a convolution over g and `other` (the weight for the input's
// gradient, the input for the weight's), recorded (ConvGradBackward) when either requires grad
// in a backward pass that creates a graph.
Tensor recorded_pass(const ConvPasses& c, bool of_input, const Tensor& g, const Tensor& other,
                     Tensor out) {
  if (!GradMode::is_enabled() || !(needs_grad(g) || needs_grad(other))) return out;
  auto node = make_node<ConvGradBackward>(c.op, g, other);
  node->of_input = of_input;
  node->params = c.params;
  node->input_format = c.input_format;
  node->weight_format = c.weight_format;
  node->g = SavedTensor(g, SavedTensor::kInput);
  node->other = SavedTensor(other, SavedTensor::kInput);
  set_history(out, std::move(node));
  return out;
}

Tensor input_grad(const ConvPasses& c, const Tensor& g, const Tensor& w, const Shape& input_shape) {
  return recorded_pass(c, /*of_input=*/true, g, w, below_autograd([&] {
                         return ops::conv2d_backward_input(g, w, input_shape, c.params,
                                                           c.input_format);
                       }));
}

Tensor weight_grad(const ConvPasses& c, const Tensor& g, const Tensor& x,
                   const Shape& weight_shape) {
  return recorded_pass(c, /*of_input=*/false, g, x, below_autograd([&] {
                         return ops::conv2d_backward_weight(g, x, weight_shape, c.params,
                                                            c.weight_format);
                       }));
}

}  // namespace

TensorList ConvGradBackward::apply(TensorList&& grads) {
  const ConvPasses c{op(), params, input_format, weight_format};
  const Tensor& cotangent = grads[0];
  const Tensor gv = g.unpack(*this), ov = other.unpack(*this);
  Tensor grad_g, grad_other;
  if (of_input) {  // out = input_grad(g, w); cotangent a has the input's shape
    if (needs_input_grad(0)) grad_g = rcuda::conv2d(cotangent, ov, {}, params);
    if (needs_input_grad(1)) grad_other = weight_grad(c, gv, cotangent, ov.shape());
  } else {  // out = weight_grad(g, x); cotangent b has the weight's shape
    if (needs_input_grad(0)) grad_g = rcuda::conv2d(ov, cotangent, {}, params);
    if (needs_input_grad(1)) grad_other = input_grad(c, gv, cotangent, ov.shape());
  }
  return {grad_g, grad_other};
}

TensorList ConvBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  if (GradMode::is_enabled() && kind == ConvKind::Convolution) {  // creating a graph
    const ConvPasses c{op(), params, input_format, weight_format};
    Tensor grad_input, grad_weight, grad_bias;
    if (needs_input_grad(0))
      grad_input = input_grad(c, g, weight.unpack(*this), input_meta()[0].shape());
    if (needs_input_grad(1))
      grad_weight = weight_grad(c, g, input.unpack(*this), input_meta()[1].shape());
    if (needs_input_grad(2)) grad_bias = rcuda::sum(g, {0, 2, 3});
    return {grad_input, grad_weight, grad_bias};
  }
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
