// nll_loss and cross_entropy as torch's (aten's LossNLL.cpp): class-index targets with per-class
// weights, ignore_index and label smoothing, and class-probability targets. Composed from the
// recording ops (log_softmax, gather, sum, ...); the fused primitive takes over in
// cross_entropy_composed.
#include "nn_util.h"
#include "rcuda/nn/loss.h"

namespace rcuda::nn {

using detail::check_floating;
using detail::check_same_device;
using detail::parse_reduction;
using detail::Reduction;

namespace {

// Checks class-index targets against input [C] or [N, C, d1, ...]: int64 (as torch's), the
// input's shape without its class dim, and (on the CPU) each in range unless ignored.
void check_class_targets(const char* op, const Tensor& input, const Tensor& target,
                         int64_t ignore_index) {
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
  detail::check_index_range(op, "target", target, input.size(class_dim), "classes", ignore_index);
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

Tensor cross_entropy_of_classes(const Tensor& input, const Tensor& target, const Tensor& weight,
                                int64_t ignore_index, Reduction r, double label_smoothing,
                                int64_t class_dim) {
  const Tensor log_probs = log_softmax(input, class_dim);
  const NllTerms nll = nll_terms(log_probs, target, weight, ignore_index, class_dim);
  const Tensor nll_loss = reduce_weighted(nll.losses, nll.counted_weight, r);
  if (label_smoothing == 0) return nll_loss;
  // As torch: (1 - s) * nll + s / C * smooth, where smooth = -sum_c weight[c] log_probs[c] is 0
  // at ignored targets and reduced like nll ("mean" by the same counted weights).
  const int64_t classes = input.size(class_dim);
  const Tensor weighted =
      weight.defined()
          ? mul(log_probs, ops::reshape(weight, detail::along_dim(classes, class_dim, input.dim())))
          : log_probs;
  const Tensor smooth =
      where(ops::eq(target, ignore_index), 0.0, mul(sum(weighted, {class_dim}), -1.0));
  return add(mul(nll_loss, 1.0 - label_smoothing),
             mul(reduce_weighted(smooth, nll.counted_weight, r),
                 label_smoothing / static_cast<double>(classes)));
}

Tensor cross_entropy_of_probabilities(const Tensor& input, const Tensor& target,
                                      const Tensor& weight, Reduction r, double label_smoothing,
                                      int64_t class_dim) {
  const int64_t classes = input.size(class_dim);
  const Tensor smoothed = label_smoothing > 0 ? add(mul(target, 1.0 - label_smoothing),
                                                    label_smoothing / static_cast<double>(classes))
                                              : target;
  Tensor terms = mul(log_softmax(input, class_dim), smoothed);
  if (weight.defined())
    terms = mul(terms, ops::reshape(weight, detail::along_dim(classes, class_dim, input.dim())));
  switch (r) {
    case Reduction::None:
      return mul(sum(terms, {class_dim}), -1.0);
    case Reduction::Sum:
      return mul(sum(terms), -1.0);
    case Reduction::Mean: {
      // Over the samples (N * d1 * ...); an empty input gives 0 / 0 = NaN, as torch.
      const double samples =
          input.numel() == 0 ? 0.0 : static_cast<double>(input.numel() / classes);
      return div(sum(terms), -samples);
    }
    case Reduction::BatchMean:
      break;
  }
  throw InternalError("cross_entropy: unexpected reduction");
}

// cross_entropy once its arguments are checked. Fused: this body becomes one node whose forward
// is ops::cross_entropy_forward (saving the rows' logsumexp and the mean's divisor) and whose
// backward is ops::cross_entropy_backward; both kinds of target and every option go through them.
Tensor cross_entropy_composed(const Tensor& input, const Tensor& target, const Tensor& weight,
                              const CrossEntropyOptions& options, Reduction r, int64_t class_dim) {
  if (is_floating(target.dtype()))
    return cross_entropy_of_probabilities(input, target, weight, r, options.label_smoothing,
                                          class_dim);
  return cross_entropy_of_classes(input, target, weight, options.ignore_index, r,
                                  options.label_smoothing, class_dim);
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options) {
  constexpr const char* kOp = "nll_loss";
  const Reduction r = parse_reduction(kOp, options.reduction);
  const int64_t class_dim = check_input(kOp, input);
  const Tensor weight = checked_class_weight(kOp, options.weight, input, class_dim);
  check_class_targets(kOp, input, target, options.ignore_index);
  // No fused primitive (ops::cross_entropy_forward includes the log-softmax): a gather, whose
  // backward scatters into the input's shape.
  const NllTerms nll = nll_terms(input, target, weight, options.ignore_index, class_dim);
  return reduce_weighted(nll.losses, nll.counted_weight, r);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options) {
  constexpr const char* kOp = "cross_entropy";
  const Reduction r = parse_reduction(kOp, options.reduction);
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
    check_class_targets(kOp, input, target, options.ignore_index);
  }
  return cross_entropy_composed(input, target, weight, options, r, class_dim);
}

}  // namespace rcuda::nn
