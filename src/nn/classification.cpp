// nll_loss and cross_entropy as torch's (aten's LossNLL.cpp): class-index targets with per-class
// weights, ignore_index and label smoothing, and class-probability targets. nll_loss is composed
// from the recording ops (gather, sum, ...); cross_entropy is one node over the fused
// primitives ops::cross_entropy_forward and ops::cross_entropy_backward.
#include "nn_util.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"
#include "rcuda/nn/loss.h"
#include "rcuda/ops/nn.h"

namespace rcuda::nn {

using autograd::OpCall;
using detail::check_floating;
using detail::check_same_device;
using detail::parse_reduction;
using detail::Reduction;

namespace {

// Checks class-index targets against input [C] or [N, C, d1, ...]: int64 (as torch's) and the
// input's shape without its class dim. Their range is checked by whatever reads them.
void check_class_targets(const char* op, const Tensor& input, const Tensor& target) {
  RCUDA_CHECK(target.dtype() == DType::Int64, DTypeError, op,
              ": target must hold int64 class indices (or, for cross_entropy, floating class "
              "probabilities of the input's shape), got ",
              dtype_name(target.dtype()), " of shape ", shape_str(target.shape()));
  check_same_device(op, "target", target, "input", input);
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  Shape expected = input.shape();
  expected.erase(expected.begin() + class_dim);
  RCUDA_CHECK(target.shape() == expected, ShapeError, op, ": target of shape ",
              shape_str(target.shape()), " does not fit input of shape ", shape_str(input.shape()),
              " (expected ", shape_str(expected), ": the input without its class dim ", class_dim,
              ")");
}

int64_t check_input(const char* op, const Tensor& input) {
  check_floating(op, "input", input);
  RCUDA_CHECK(input.dim() >= 1, ShapeError, op,
              ": input must be [C], [N, C] or [N, C, d1, ...], got a 0-dim tensor");
  return input.dim() == 1 ? 0 : 1;
}

// weight [C] in input's dtype, or undefined.
Tensor checked_class_weight(const char* op, const Tensor& weight, const Tensor& input,
                            int64_t class_dim) {
  if (!weight.defined()) return weight;
  check_floating(op, "weight", weight);
  check_same_device(op, "weight", weight, "input", input);
  const int64_t classes = input.size(class_dim);
  RCUDA_CHECK(weight.dim() == 1 && weight.size(0) == classes, ShapeError, op,
              ": weight must have one element per class, shape [", classes, "], got ",
              shape_str(weight.shape()));
  return ops::to(weight, input.dtype());
}

// The per-target losses -weight[t] * input[.., t, ..] (0 where t == ignore_index) and the
// weights that "mean" divides by (weight[t], 0 where ignored). weight has been checked.
struct NllTerms {
  Tensor losses, counted_weight;
};
NllTerms nll_terms(const Tensor& input, const Tensor& target, const Tensor& weight,
                   int64_t ignore_index, int64_t class_dim) {
  const Tensor counted = ops::ne(target, ignore_index);
  // Ignored targets read class 0 (always present when anything is counted) and are zeroed.
  const Tensor safe_target = ops::where(counted, target, Scalar(int64_t{0}));
  const Tensor picked =
      gather(input, class_dim, safe_target.unsqueeze(class_dim)).squeeze(class_dim);
  Tensor counted_weight = ops::to(counted, input.dtype());
  if (weight.defined()) {
    const Tensor class_weight =
        ops::reshape(ops::index_select(weight, 0, ops::reshape(safe_target, {-1})), target.shape());
    counted_weight = ops::mul(counted_weight, class_weight);
  }
  return {mul(picked, mul(counted_weight, -1.0)), counted_weight};
}

// "mean" is weighted: the sum of the losses over the sum of the counted weights.
Tensor reduce_weighted(const Tensor& losses, const Tensor& counted_weight, Reduction r) {
  if (r == Reduction::Mean) return div(sum(losses), ops::sum(counted_weight));
  return detail::reduce(losses, r);
}

// d loss / d target of probability targets: with t' = (1 - s) t + s / C, each row's loss is
// sum_c w[c] t'[c] (lse - z[c]), so the gradient is (1 - s) w[c] (lse - z[c]) times the row's
// upstream gradient (over the mean's divisor). Computed in the statistics dtype of lse.
Tensor probability_target_grad(const Tensor& grad, const Tensor& input, const Tensor& weight,
                               const Tensor& logsumexp, const Tensor& divisor,
                               const ops::CrossEntropyOptions& options, int64_t class_dim) {
  if (input.numel() == 0) return ops::zeros(input.shape(), {input.dtype(), input.device()});
  Shape rows_shape = input.shape();
  rows_shape[static_cast<size_t>(class_dim)] = 1;
  const Tensor lse = ops::reshape(logsumexp, rows_shape);
  Tensor scale = options.reduction == "none" ? ops::reshape(grad, rows_shape) : grad;
  scale = ops::mul(scale, 1.0 - options.label_smoothing);
  if (divisor.defined()) scale = ops::div(scale, divisor);
  Tensor g = ops::mul(ops::sub(lse, input), scale);
  if (weight.defined()) {
    const int64_t classes = input.size(class_dim);
    g = ops::mul(g, ops::reshape(weight, detail::along_dim(classes, class_dim, input.dim())));
  }
  return g;
}

// Inputs (input, target): target's edge is live only for probabilities that require grad.
struct CrossEntropyBackward final : autograd::Node {
  ops::CrossEntropyOptions options;  // its weight is the saved one below
  int64_t class_dim = 1;
  autograd::SavedTensor input, target, weight, logsumexp, divisor;
  const char* name() const override { return "CrossEntropyBackward"; }
  autograd::TensorList apply(autograd::TensorList&& grads) override {
    ops::CrossEntropyOptions o = options;
    o.weight = weight.unpack(*this);
    const Tensor z = input.unpack(*this);
    const ops::CrossEntropyForward saved{Tensor(), logsumexp.unpack(*this), divisor.unpack(*this)};
    Tensor grad_input, grad_target;
    if (needs_input_grad(0))
      grad_input = ops::cross_entropy_backward(grads[0], z, target.unpack(*this), saved, o);
    if (needs_input_grad(1))
      grad_target = probability_target_grad(grads[0], z, o.weight, saved.logsumexp, saved.divisor,
                                            o, class_dim);
    return {grad_input, grad_target};
  }
  void release_saved() override {
    for (autograd::SavedTensor* t : {&input, &target, &weight, &logsumexp, &divisor}) t->release();
  }
};

// cross_entropy once its arguments are checked: the fused forward, and its node when the input
// (or a probability target) requires grad. Probabilities go in the input's dtype, as the
// primitive takes them; nothing here reads a value back.
Tensor cross_entropy_fused(const Tensor& input, const Tensor& target, const Tensor& weight,
                           const CrossEntropyOptions& options, int64_t class_dim) {
  ops::CrossEntropyOptions o;
  o.weight = weight;
  o.reduction = options.reduction;
  o.ignore_index = options.ignore_index;
  o.label_smoothing = options.label_smoothing;
  const Tensor fused_target = is_floating(target.dtype()) ? ops::to(target, input.dtype()) : target;
  if (!OpCall::records(input, target)) return ops::cross_entropy(input, fused_target, o);
  const ops::CrossEntropyForward forward =
      autograd::below_autograd([&] { return ops::cross_entropy_forward(input, fused_target, o); });
  auto node = autograd::make_node<CrossEntropyBackward>(OpId::CrossEntropy, input, target);
  node->class_dim = class_dim;
  o.weight = Tensor();
  node->options = o;
  using autograd::SavedTensor;
  node->input = SavedTensor(input, SavedTensor::kInput);
  node->target = SavedTensor(fused_target, SavedTensor::kInput);
  node->weight = SavedTensor(weight, SavedTensor::kInput);
  node->logsumexp = SavedTensor(forward.logsumexp);
  node->divisor = SavedTensor(forward.divisor);
  autograd::set_history(forward.loss, node);
  return forward.loss;
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options) {
  OpCall call(OpId::NllLoss, input);
  if (call.autocasts()) {
    NllLossOptions o = options;
    o.weight = call.cast(options.weight);
    return nll_loss(call.cast(input), target, o);
  }
  constexpr const char* kOp = "nll_loss";
  const Reduction r = parse_reduction(kOp, options.reduction);
  const int64_t class_dim = check_input(kOp, input);
  const Tensor weight = checked_class_weight(kOp, options.weight, input, class_dim);
  check_class_targets(kOp, input, target);
  // Read on the CPU only (Note [Index bounds on the GPU]).
  detail::check_index_range(kOp, "target", target, input.size(class_dim), "classes",
                            options.ignore_index);
  // No fused primitive (ops::cross_entropy_forward includes the log-softmax): a gather, whose
  // backward scatters into the input's shape.
  const NllTerms nll = nll_terms(input, target, weight, options.ignore_index, class_dim);
  const Tensor out = reduce_weighted(nll.losses, nll.counted_weight, r);
  if (call.reported())
    call.report({input, target, options.weight},
                {{"reduction", options.reduction}, {"ignore_index", options.ignore_index}}, {out});
  return out;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options) {
  OpCall call(OpId::CrossEntropy, input);
  if (call.autocasts()) {
    CrossEntropyOptions o = options;
    o.weight = call.cast(options.weight);
    return cross_entropy(call.cast(input), call.cast(target), o);
  }
  constexpr const char* kOp = "cross_entropy";
  parse_reduction(kOp, options.reduction);  // ValueError unless "none", "mean" or "sum"
  const int64_t class_dim = check_input(kOp, input);
  const double label_smoothing = options.label_smoothing;
  RCUDA_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError,
              "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  const Tensor weight = checked_class_weight(kOp, options.weight, input, class_dim);
  if (is_floating(target.dtype())) {
    // A floating target holds class probabilities and has input's shape, as torch decides.
    check_floating(kOp, "target", target);
    check_same_device(kOp, "target", target, "input", input);
    RCUDA_CHECK(target.shape() == input.shape(), ShapeError,
                "cross_entropy: a floating target holds class probabilities and must have the "
                "input's shape ",
                shape_str(input.shape()), ", got ", shape_str(target.shape()),
                " (class indices are int64)");
    RCUDA_CHECK(options.ignore_index < 0, ValueError, "cross_entropy: ignore_index (",
                options.ignore_index, ") is not supported for class-probability targets");
  } else {
    check_class_targets(kOp, input, target);
  }
  const Tensor out = cross_entropy_fused(input, target, weight, options, class_dim);
  if (call.reported())
    call.report({input, target, options.weight},
                {{"reduction", options.reduction},
                 {"ignore_index", options.ignore_index},
                 {"label_smoothing", label_smoothing}},
                {out});
  return out;
}

}  // namespace rcuda::nn
