// The nn functions composed from the recording ops of rcuda/autograd/api.h (where, exp, gather,
// log_softmax, ...), as they were written before one node over a fused primitive replaced each:
// references whose values and gradients the fused forms must reproduce (test_nn_fused.cpp).
// Arguments are the checked ones; these functions check nothing.
#pragma once

#include <optional>
#include <string>

#include "autograd/gradcheck.h"
#include "rcuda/nn/loss.h"

namespace rcuda::test::composed {

inline Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return where(gt(x, 0.0), x, mul(x, negative_slope));
}

// The branch not picked gets a harmless value first, so that its zero gradient meets no inf.
inline Tensor elu(const Tensor& x, double alpha) {
  const Tensor positive = gt(x, 0.0);
  const Tensor negative_part = where(positive, 0.0, x);
  return where(positive, x, mul(expm1(negative_part), alpha));
}

inline Tensor softplus(const Tensor& x, double beta, double threshold) {
  const Tensor scaled = mul(x, beta);
  const Tensor linear = gt(scaled, threshold);
  const Tensor below = where(linear, 0.0, scaled);
  return where(linear, x, div(log1p(exp(below)), beta));
}

// Floating x; le/ge rather than clamp, whose gradient passes on the bounds.
inline Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  return where(le(x, min_val), min_val, where(ge(x, max_val), max_val, x));
}

// Shape [1, ..., n, ..., 1] of ndim dims with n at dim.
inline Shape along_dim(int64_t n, int64_t dim, int64_t ndim) {
  Shape shape(static_cast<size_t>(ndim), 1);
  shape[static_cast<size_t>(dim)] = n;
  return shape;
}

// weight (undefined or [C]) in input's dtype, without a gradient of its own.
inline Tensor class_weight(const Tensor& weight, const Tensor& input) {
  return weight.defined() ? ops::to(weight, input.dtype()) : weight;
}

// Weighted "mean": the sum of the losses over the sum of the counted weights.
inline Tensor reduce_weighted(const Tensor& losses, const Tensor& counted_weight,
                              const std::string& reduction) {
  if (reduction == "none") return losses;
  if (reduction == "sum") return sum(losses);
  return div(sum(losses), ops::sum(counted_weight));
}

// cross_entropy of int64 class indices: nll of log_softmax, mixed with the smoothing term.
inline Tensor cross_entropy_of_classes(const Tensor& input, const Tensor& target,
                                       const nn::CrossEntropyOptions& o) {
  const int64_t class_dim = input.dim() == 1 ? 0 : 1, classes = input.size(class_dim);
  const Tensor weight = class_weight(o.weight, input);
  const Tensor log_probs = log_softmax(input, class_dim);
  const Tensor counted = ops::ne(target, o.ignore_index);
  const Tensor safe_target = ops::where(counted, target, Scalar(int64_t{0}));
  const Tensor picked =
      gather(log_probs, class_dim, safe_target.unsqueeze(class_dim)).squeeze(class_dim);
  Tensor counted_weight = ops::to(counted, input.dtype());
  if (weight.defined())
    counted_weight = ops::mul(
        counted_weight, ops::reshape(ops::index_select(weight, 0, ops::reshape(safe_target, {-1})),
                                     target.shape()));
  const Tensor nll =
      reduce_weighted(mul(picked, mul(counted_weight, -1.0)), counted_weight, o.reduction);
  if (o.label_smoothing == 0) return nll;
  const Tensor weighted =
      weight.defined()
          ? mul(log_probs, ops::reshape(weight, along_dim(classes, class_dim, input.dim())))
          : log_probs;
  const Tensor smooth =
      where(ops::eq(target, o.ignore_index), 0.0, mul(sum(weighted, {class_dim}), -1.0));
  return add(mul(nll, 1.0 - o.label_smoothing),
             mul(reduce_weighted(smooth, counted_weight, o.reduction),
                 o.label_smoothing / static_cast<double>(classes)));
}

// cross_entropy of class probabilities of input's shape; "mean" divides by the samples.
inline Tensor cross_entropy_of_probabilities(const Tensor& input, const Tensor& target,
                                             const nn::CrossEntropyOptions& o) {
  const int64_t class_dim = input.dim() == 1 ? 0 : 1, classes = input.size(class_dim);
  const Tensor weight = class_weight(o.weight, input);
  const double s = o.label_smoothing;
  const Tensor smoothed =
      s > 0 ? add(mul(target, 1.0 - s), s / static_cast<double>(classes)) : target;
  Tensor terms = mul(log_softmax(input, class_dim), smoothed);
  if (weight.defined())
    terms = mul(terms, ops::reshape(weight, along_dim(classes, class_dim, input.dim())));
  if (o.reduction == "none") return mul(sum(terms, {class_dim}), -1.0);
  if (o.reduction == "sum") return mul(sum(terms), -1.0);
  const double samples = input.numel() == 0 ? 0.0 : static_cast<double>(input.numel() / classes);
  return div(sum(terms), -samples);
}

inline Tensor cross_entropy(const Tensor& input, const Tensor& target,
                            const nn::CrossEntropyOptions& o) {
  return is_floating(target.dtype()) ? cross_entropy_of_probabilities(input, target, o)
                                     : cross_entropy_of_classes(input, target, o);
}

// Two passes (mean, then the biased variance of the centred values), float16 and bfloat16 in
// float32.
inline Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                         const Tensor& bias, double eps) {
  Dims dims;
  for (int64_t d = x.dim() - static_cast<int64_t>(normalized_shape.size()); d < x.dim(); ++d)
    dims.push_back(d);
  const Tensor xf = is_reduced_float(x.dtype()) ? to(x, DType::Float32) : x;
  const Tensor centered = sub(xf, mean(xf, dims, /*keepdim=*/true));
  const Tensor variance = mean(mul(centered, centered), dims, /*keepdim=*/true);
  Tensor y = mul(centered, rsqrt(add(variance, eps)));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y.dtype() == x.dtype() ? y : to(y, x.dtype());
}

// x * mask / (1 - p) for a given bool mask of x's shape.
inline Tensor dropout(const Tensor& x, const Tensor& mask, double p) {
  return mul(x, ops::mul(ops::to(mask, x.dtype()), 1.0 / (1.0 - p)));
}

// Rows of weight at int64 indices; those at padding_idx (non-negative) come through a detached
// alias, so that no gradient reaches weight[padding_idx].
inline Tensor embedding(const Tensor& indices, const Tensor& weight,
                        std::optional<int64_t> padding_idx) {
  const Tensor index = ops::to(indices, DType::Int64);
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  Tensor rows = reshape(index_select(weight, 0, ops::reshape(index, {-1})), out_shape);
  if (padding_idx && rows.requires_grad()) {
    const Tensor at_padding = ops::eq(index, *padding_idx).unsqueeze(-1);
    rows = where(at_padding, autograd::detach(rows), rows);
  }
  return rows;
}

}  // namespace rcuda::test::composed
