// Elementwise losses: mse, l1, smooth l1, huber, binary cross-entropy (on probabilities and on
// logits) and kl_div, composed from the recording ops of rcuda/autograd/api.h.
#include <cmath>

#include "nn_util.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/nn/loss.h"

namespace rcuda::nn {

using autograd::OpCall;
using detail::check_broadcasts_to;
using detail::check_floating;
using detail::check_same_device;
using detail::one_minus;
using detail::parse_reduction;
using detail::reduce;
using detail::Reduction;

namespace {

// input - target, after the checks every regression loss shares.
Tensor difference(const char* op, const Tensor& input, const Tensor& target) {
  check_floating(op, "input", input);
  check_floating(op, "target", target);
  check_same_device(op, "target", target, "input", input);
  broadcast_shapes(input.shape(), target.shape(), op);  // ShapeError naming both shapes
  return sub(input, target);
}

void check_same_shape(const char* op, const Tensor& input, const Tensor& target) {
  RCUDA_CHECK(input.shape() == target.shape(), ShapeError, op, ": target of shape ",
              shape_str(target.shape()), " must have the input's shape ", shape_str(input.shape()));
}

void check_optional_weight(const char* op, const char* arg, const Tensor& weight,
                           const Tensor& input) {
  if (!weight.defined()) return;
  check_floating(op, arg, weight);
  check_same_device(op, arg, weight, "input", input);
  check_broadcasts_to(op, arg, weight, input.shape());
}

// max(log(x), -100), torch's clamp in binary_cross_entropy, for x in [0, 1]; x == 0 goes
// through log(1) and is replaced afterwards (Note [Safe branches of where]).
Tensor clamped_log(const Tensor& x) {
  const Tensor positive = ops::gt(x, 0.0);
  const Tensor value = log(where(positive, x, 1.0));
  return where(ops::logical_and(positive, ops::ge(value, -100.0)), value, -100.0);
}

// max(log(1 - x), -100) through log1p(-x), accurate for small x; x == 1 as x == 0 above.
Tensor clamped_log_one_minus(const Tensor& x) {
  const Tensor below_one = ops::lt(x, 1.0);
  const Tensor value = log1p(mul(where(below_one, x, 0.0), -1.0));
  return where(ops::logical_and(below_one, ops::ge(value, -100.0)), value, -100.0);
}

// ValueError unless x holds values in [0, 1]; read only on the CPU (a GPU check would
// synchronise), as torch's CPU kernel checks and its CUDA kernel asserts.
void check_probabilities(const char* op, const Tensor& x) {
  if (!x.device().is_cpu() || x.numel() == 0) return;
  NoGradGuard no_grad;
  const double smallest = ops::item(ops::min(x)).to_double();
  const double largest = ops::item(ops::max(x)).to_double();
  RCUDA_CHECK(smallest >= 0 && largest <= 1, ValueError, op,
              ": input must hold probabilities in [0, 1], got values from ", smallest, " to ",
              largest);
}

// kl_div's "batchmean": torch divides the sum by the batch size, input.size(0), except for a
// 0-dim input.
Tensor batch_mean(const Tensor& losses, const Tensor& input) {
  const Tensor total = sum(losses);
  return input.dim() == 0 ? total : div(total, static_cast<double>(input.size(0)));
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  OpCall call(OpId::MseLoss, input);
  if (call.autocasts()) return mse_loss(call.cast(input), call.cast(target), reduction);
  const Reduction r = parse_reduction("mse_loss", reduction);
  const Tensor d = difference("mse_loss", input, target);
  const Tensor out = reduce(mul(d, d), r);
  if (call.reported()) call.report({input, target}, {{"reduction", reduction}}, {out});
  return out;
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  OpCall call(OpId::L1Loss, input);
  if (call.autocasts()) return l1_loss(call.cast(input), call.cast(target), reduction);
  const Reduction r = parse_reduction("l1_loss", reduction);
  const Tensor out = reduce(abs(difference("l1_loss", input, target)), r);
  if (call.reported()) call.report({input, target}, {{"reduction", reduction}}, {out});
  return out;
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                      double beta) {
  OpCall call(OpId::SmoothL1Loss, input);
  if (call.autocasts()) return smooth_l1_loss(call.cast(input), call.cast(target), reduction, beta);
  const Reduction r = parse_reduction("smooth_l1_loss", reduction);
  RCUDA_CHECK(beta >= 0, ValueError, "smooth_l1_loss: beta must be non-negative, got ", beta);
  const Tensor d = difference("smooth_l1_loss", input, target);
  const Tensor distance = abs(d);
  const Tensor losses = beta == 0 ? distance
                                  : where(ops::lt(distance, beta), mul(mul(d, d), 0.5 / beta),
                                          sub(distance, 0.5 * beta));
  const Tensor out = reduce(losses, r);
  if (call.reported())
    call.report({input, target}, {{"reduction", reduction}, {"beta", beta}}, {out});
  return out;
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                  double delta) {
  OpCall call(OpId::HuberLoss, input);
  if (call.autocasts()) return huber_loss(call.cast(input), call.cast(target), reduction, delta);
  const Reduction r = parse_reduction("huber_loss", reduction);
  RCUDA_CHECK(delta > 0, ValueError, "huber_loss: delta must be positive, got ", delta);
  const Tensor d = difference("huber_loss", input, target);
  const Tensor distance = abs(d);
  const Tensor out = reduce(
      where(ops::lt(distance, delta), mul(mul(d, d), 0.5), mul(sub(distance, 0.5 * delta), delta)),
      r);
  if (call.reported())
    call.report({input, target}, {{"reduction", reduction}, {"delta", delta}}, {out});
  return out;
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
  OpCall call(OpId::BinaryCrossEntropy, input);
  if (call.autocasts())
    return binary_cross_entropy(call.cast(input), call.cast(target), call.cast(weight), reduction);
  constexpr const char* kOp = "binary_cross_entropy";
  const Reduction r = parse_reduction(kOp, reduction);
  check_floating(kOp, "input", input);
  check_floating(kOp, "target", target);
  check_same_device(kOp, "target", target, "input", input);
  check_same_shape(kOp, input, target);
  check_optional_weight(kOp, "weight", weight, input);
  check_probabilities(kOp, input);
  // -(t log(x) + (1 - t) log(1 - x)). Inside (e^-100, 1 - e^-100) the gradient is torch's
  // (x - t) / (x (1 - x)); where a log is clamped it is 0 here (torch's divides by
  // max(x (1 - x), 1e-12)).
  Tensor losses = mul(
      add(mul(target, clamped_log(input)), mul(one_minus(target), clamped_log_one_minus(input))),
      -1.0);
  if (weight.defined()) losses = mul(losses, weight);
  const Tensor out = reduce(losses, r);
  if (call.reported()) call.report({input, target, weight}, {{"reduction", reduction}}, {out});
  return out;
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const std::string& reduction,
                                        const Tensor& pos_weight) {
  OpCall call(OpId::BinaryCrossEntropyWithLogits, input);
  if (call.autocasts())
    return binary_cross_entropy_with_logits(call.cast(input), call.cast(target), call.cast(weight),
                                            reduction, call.cast(pos_weight));
  constexpr const char* kOp = "binary_cross_entropy_with_logits";
  const Reduction r = parse_reduction(kOp, reduction);
  check_floating(kOp, "input", input);
  check_floating(kOp, "target", target);
  check_same_device(kOp, "target", target, "input", input);
  check_same_shape(kOp, input, target);
  check_optional_weight(kOp, "weight", weight, input);
  check_optional_weight(kOp, "pos_weight", pos_weight, input);
  // -log(sigmoid(x)) = log1p(exp(-|x|)) + max(-x, 0): exp never overflows. Each branch is
  // chosen so that it is smooth at x = 0 (|x| and max have a kink there whose gradient would be
  // 0), which gives -sigmoid(-x) as the derivative everywhere.
  const Tensor negative = ops::lt(input, 0.0);
  const Tensor minus_input = mul(input, -1.0);
  const Tensor minus_abs = where(negative, input, minus_input);
  const Tensor log_sigmoid_neg = add(log1p(exp(minus_abs)), where(negative, minus_input, 0.0));
  // (1 - t) x - (1 + (pos_weight - 1) t) log(sigmoid(x)), as torch.
  const Tensor positive_weight =
      pos_weight.defined() ? add(mul(sub(pos_weight, 1.0), target), 1.0) : Tensor();
  Tensor losses =
      add(mul(one_minus(target), input),
          positive_weight.defined() ? mul(positive_weight, log_sigmoid_neg) : log_sigmoid_neg);
  if (weight.defined()) losses = mul(losses, weight);
  const Tensor out = reduce(losses, r);
  if (call.reported())
    call.report({input, target, weight, pos_weight}, {{"reduction", reduction}}, {out});
  return out;
}

Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction,
              bool log_target) {
  OpCall call(OpId::KlDiv, input);
  if (call.autocasts()) return kl_div(call.cast(input), call.cast(target), reduction, log_target);
  constexpr const char* kOp = "kl_div";
  const Reduction r = parse_reduction(kOp, reduction, /*allow_batchmean=*/true);
  check_floating(kOp, "input", input);
  check_floating(kOp, "target", target);
  check_same_device(kOp, "target", target, "input", input);
  broadcast_shapes(input.shape(), target.shape(), kOp);
  Tensor losses;
  if (log_target) {
    losses = mul(exp(target), sub(target, input));
  } else {
    // xlogy(t, t) - t * input, with 0 * log(0) = 0 (Note [Safe branches of where]).
    const Tensor zero = ops::eq(target, 0.0);
    const Tensor t_log_t = where(zero, 0.0, mul(target, log(where(zero, 1.0, target))));
    losses = sub(t_log_t, mul(target, input));
  }
  const Tensor out = r == Reduction::BatchMean ? batch_mean(losses, input) : reduce(losses, r);
  if (call.reported())
    call.report({input, target}, {{"reduction", reduction}, {"log_target", log_target}}, {out});
  return out;
}

}  // namespace rcuda::nn
