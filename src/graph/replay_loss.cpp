// Replay of the losses of rcuda::nn, each with the options it reported.
#include "rcuda/core/error.h"
#include "rcuda/nn/loss.h"
#include "replay.h"

namespace rcuda::graph::replay {

Tensors loss(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  const Tensor& target = input(in, 1, op);
  const std::string reduction = text(a, "reduction", op, "mean");
  switch (op) {
    case OpId::MseLoss:
      return {nn::mse_loss(x, target, reduction)};
    case OpId::L1Loss:
      return {nn::l1_loss(x, target, reduction)};
    case OpId::SmoothL1Loss:
      return {nn::smooth_l1_loss(x, target, reduction, number(a, "beta", op))};
    case OpId::HuberLoss:
      return {nn::huber_loss(x, target, reduction, number(a, "delta", op))};
    case OpId::NllLoss: {
      nn::NllLossOptions o;
      o.weight = optional_input(in, 2);
      o.ignore_index = integer(a, "ignore_index", op);
      o.reduction = reduction;
      return {nn::nll_loss(x, target, o)};
    }
    case OpId::CrossEntropy: {
      nn::CrossEntropyOptions o;
      o.weight = optional_input(in, 2);
      o.ignore_index = integer(a, "ignore_index", op);
      o.reduction = reduction;
      o.label_smoothing = number(a, "label_smoothing", op);
      return {nn::cross_entropy(x, target, o)};
    }
    case OpId::BinaryCrossEntropy:
      return {nn::binary_cross_entropy(x, target, optional_input(in, 2), reduction)};
    case OpId::BinaryCrossEntropyWithLogits:
      return {nn::binary_cross_entropy_with_logits(x, target, optional_input(in, 2), reduction,
                                                   optional_input(in, 3))};
    case OpId::KlDiv:
      return {nn::kl_div(x, target, reduction, flag(a, "log_target", op, false))};
    default:
      throw InternalError(std::string("graph: no loss replay for ") + op_name(op));
  }
}

}  // namespace rcuda::graph::replay
