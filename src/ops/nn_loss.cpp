// cross_entropy forward and backward: argument checks, the [rows, classes] layout the
// primitives take (the class dim moved last, contiguous), and the reductions, composed from
// device-side sums so that nothing synchronises with the host.
#include <cmath>
#include <vector>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/nn.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {
namespace {

constexpr const char* kOp = "cross_entropy";

DType stats_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

// The checked call: input moved to [rows, classes], target to [rows] (Int64) or
// [rows, classes] (probabilities, input's dtype), weight to [classes].
struct Problem {
  bool indices = true;
  int64_t rows = 0, classes = 0;
  Shape loss_shape;  // of reduction "none"
  Tensor logits, target, weight;
};

// Moves dim 1 (the classes) last, as a contiguous [rows, classes] tensor.
Tensor classes_last(const Tensor& t, int64_t rows, int64_t classes) {
  if (t.dim() <= 2) return contiguous(t).view({rows, classes});
  std::vector<int64_t> order = {0};
  for (int64_t d = 2; d < t.dim(); ++d) order.push_back(d);
  order.push_back(1);
  return contiguous(t.permute(order)).view({rows, classes});
}

Problem check(const char* op, const Tensor& input, const Tensor& target,
              const CrossEntropyOptions& options) {
  check_not_float8(op, input);
  check_floating(op, "input", input);
  RCUDA_CHECK(input.dim() >= 1, ShapeError, op, ": input must have at least one dim (classes)");
  RCUDA_CHECK(
      options.reduction == "none" || options.reduction == "mean" || options.reduction == "sum",
      ValueError, op, ": reduction must be \"none\", \"mean\" or \"sum\", got \"",
      options.reduction, "\"");
  RCUDA_CHECK(options.label_smoothing >= 0 && options.label_smoothing <= 1, ValueError, op,
              ": label_smoothing must be in [0, 1], got ", options.label_smoothing);
  Problem p;
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  p.classes = input.shape()[class_dim];
  RCUDA_CHECK(p.classes >= 1, ShapeError, op, ": input of shape ", shape_str(input.shape()),
              " has no classes");
  for (int64_t d = 0; d < input.dim(); ++d)
    if (d != class_dim) p.loss_shape.push_back(input.shape()[d]);
  p.rows = numel(p.loss_shape);
  check_not_float8(op, target);
  RCUDA_CHECK(target.dtype() != DType::Bool, DTypeError, op,
              ": target must hold class indices (integral) or probabilities (floating), got bool");
  p.indices = !is_floating(target.dtype());
  if (p.indices) {
    RCUDA_CHECK(target.shape() == p.loss_shape, ShapeError, op, ": class-index target of shape ",
                shape_str(target.shape()), " does not match input of shape ",
                shape_str(input.shape()), " (expected ", shape_str(p.loss_shape), ")");
  } else {
    RCUDA_CHECK(target.shape() == input.shape(), ShapeError, op, ": probability target of shape ",
                shape_str(target.shape()), " must have input's shape ", shape_str(input.shape()));
  }
  check_same_device(op, {input, target});
  if (options.weight.defined()) {
    const Tensor& w = options.weight;
    RCUDA_CHECK(w.dim() == 1 && w.shape()[0] == p.classes, ShapeError, op, ": weight of shape ",
                shape_str(w.shape()), " must be 1-D with one entry per class (", p.classes, ")");
    check_not_float8(op, w);
    check_floating(op, "weight", w);
    check_same_device(op, {input, w});
    p.weight = contiguous(cast(w, input.dtype()));
  }
  if (p.rows == 0) return p;
  p.logits = classes_last(input, p.rows, p.classes);
  p.target = p.indices ? contiguous(cast(target, DType::Int64)).view({p.rows})
                       : classes_last(cast(target, input.dtype()), p.rows, p.classes);
  return p;
}

}  // namespace

CrossEntropyForward cross_entropy_forward(const Tensor& input, const Tensor& target,
                                          const CrossEntropyOptions& options) {
  const Problem p = check(kOp, input, target, options);
  const DType stats = stats_dtype(input.dtype());
  const Device device = input.device();
  CrossEntropyForward r;
  if (p.rows == 0) {  // torch: an empty "mean" is NaN, an empty "sum" 0
    r.loss = options.reduction == "none"   ? Tensor::empty(p.loss_shape, input.dtype(), device)
             : options.reduction == "mean" ? full({}, NAN, {input.dtype(), device})
                                           : zeros({}, {input.dtype(), device});
    r.logsumexp = Tensor::empty({0}, stats, device);
    return r;
  }
  // The losses and the row weights share one [2, rows] buffer, so that a weighted mean's two
  // sums are one reduction.
  const Tensor rows = Tensor::empty({2, p.rows}, stats, device);
  const Tensor loss = rows.select(0, 0);
  const Tensor row_weight = p.indices ? rows.select(0, 1) : Tensor();
  r.logsumexp = Tensor::empty({p.rows}, stats, device);
  backend_of(input).cross_entropy(loss, row_weight, r.logsumexp, p.logits, p.target, p.weight,
                                  options.ignore_index, options.label_smoothing);
  if (options.reduction == "none") {
    r.loss = cast(loss, input.dtype()).view(p.loss_shape);
  } else if (options.reduction == "sum") {
    r.loss = cast(sum(loss), input.dtype());
  } else if (p.indices) {
    // The weighted mean's divisor stays on the device (no synchronisation).
    const Tensor sums = sum(rows, {1});
    r.divisor = sums.select(0, 1);
    r.loss = cast(div(sums.select(0, 0), r.divisor), input.dtype());
  } else {
    r.divisor = full({}, static_cast<double>(p.rows), {stats, device});
    r.loss = cast(div(sum(loss), r.divisor), input.dtype());
  }
  return r;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options) {
  return cross_entropy_forward(input, target, options).loss;
}

Tensor cross_entropy_backward(const Tensor& grad, const Tensor& input, const Tensor& target,
                              const CrossEntropyForward& saved,
                              const CrossEntropyOptions& options) {
  constexpr const char* op = "cross_entropy_backward";
  const Problem p = check(op, input, target, options);
  const bool reduced = options.reduction != "none";
  RCUDA_CHECK(grad.defined() && (reduced ? grad.numel() == 1 : grad.shape() == p.loss_shape),
              ShapeError, op, ": grad must have the loss's shape ",
              reduced ? "[]" : shape_str(p.loss_shape), ", got ",
              grad.defined() ? shape_str(grad.shape()) : "undefined");
  check_same_device(op, {input, grad});
  if (p.rows == 0) return zeros(input.shape(), {input.dtype(), input.device()});
  const DType stats = stats_dtype(input.dtype());
  RCUDA_CHECK(saved.logsumexp.defined() && saved.logsumexp.numel() == p.rows &&
                  saved.logsumexp.dtype() == stats,
              ValueError, op, ": saved.logsumexp must be the forward's (", p.rows, " ",
              dtype_name(stats), " values)");
  const bool mean = options.reduction == "mean";
  RCUDA_CHECK(!mean || (saved.divisor.defined() && saved.divisor.numel() == 1 &&
                        saved.divisor.dtype() == stats),
              ValueError, op, ": saved.divisor must be the forward's for reduction \"mean\"");
  const Tensor g = cast(grad, input.dtype());
  const Tensor grad_rows =
      reduced ? contiguous(g).view({1}).expand({p.rows}) : contiguous(g).view({p.rows});
  Tensor grad_logits = Tensor::empty({p.rows, p.classes}, input.dtype(), input.device());
  backend_of(input).cross_entropy_backward(
      grad_logits, grad_rows, mean ? contiguous(saved.divisor).view({}) : Tensor(), p.logits,
      p.target, p.weight, contiguous(saved.logsumexp).view({p.rows}), options.ignore_index,
      options.label_smoothing);
  if (input.dim() <= 2) return grad_logits.view(input.shape());
  // Back from [N, d1, ..., C] to input's (N, C, d1, ...): a permuted view.
  Shape moved = {input.shape()[0]};
  for (int64_t d = 2; d < input.dim(); ++d) moved.push_back(input.shape()[d]);
  moved.push_back(p.classes);
  std::vector<int64_t> order = {0, input.dim() - 1};
  for (int64_t d = 1; d < input.dim() - 1; ++d) order.push_back(d);
  return grad_logits.view(moved).permute(order);
}

}  // namespace rcuda::ops
