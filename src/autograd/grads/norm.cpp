// Gradients of batch_norm, group_norm and instance_norm: each one fused backward primitive
// (ops::*_backward), asked only for the gradients the inputs need.
#include "norm.h"

#include <array>

#include "rcuda/ops/norm.h"

namespace rcuda::autograd {

const char* NormBackward::name() const {
  switch (kind) {
    case NormKind::Batch:
      return "BatchNormBackward";
    case NormKind::Group:
      return "GroupNormBackward";
    case NormKind::Instance:
      return "InstanceNormBackward";
  }
  return "NormBackward";
}

TensorList NormBackward::apply(TensorList&& grads) {
  const std::array<bool, 3> wanted = {needs_input_grad(0), needs_input_grad(1),
                                      needs_input_grad(2)};
  const Tensor input = x.unpack(*this), w = weight.unpack(*this);
  const Tensor m = mean.unpack(*this), r = invstd.unpack(*this);
  ops::NormGrads g;
  switch (kind) {
    case NormKind::Batch:
      g = ops::batch_norm_backward(grads[0], input, w, m, r, batch_stats, wanted);
      break;
    case NormKind::Group:
      g = ops::group_norm_backward(grads[0], input, groups, w, m, r, wanted);
      break;
    case NormKind::Instance:
      g = ops::instance_norm_backward(grads[0], input, w, m, r, batch_stats, wanted);
      break;
  }
  return {g.grad_input, g.grad_weight, g.grad_bias};
}

}  // namespace rcuda::autograd
