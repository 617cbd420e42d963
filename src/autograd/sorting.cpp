// Entry points of the sort family and the cumulative ops (Note [Recording] in
// rcuda/autograd/record.h), and quantile, which composes recording ops so that its gradient
// flows through the sort's values as torch's does.
#include <string>

#include "grads/sorting.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"

namespace rcuda {
namespace {

using autograd::IndexedKind;
using autograd::OpCall;

// values (and indices) from forward(); values record an IndexedBackward over the indices.
template <typename Forward>
std::pair<Tensor, Tensor> record_indexed(OpId op, IndexedKind kind, const Tensor& x, int64_t dim,
                                         bool keepdim, Forward forward) {
  if (!OpCall::records(x)) return forward();
  std::pair<Tensor, Tensor> out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::IndexedBackward>(op, x);
  node->kind = kind;
  node->dim = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), node->name());
  node->keepdim = keepdim;
  node->indices = autograd::SavedTensor(out.second);
  autograd::set_history(out.first, node);
  return out;
}

template <typename Forward>
Tensor record_cumulative(OpId op, bool is_prod, const Tensor& x, int64_t dim, Forward forward) {
  if (!OpCall::records(x)) return forward();
  Tensor out = autograd::below_autograd(forward);
  if (!is_floating(out.dtype())) return out;
  auto node = autograd::make_node<autograd::CumulativeBackward>(op, x);
  node->is_prod = is_prod;
  node->dim = dim;
  node->x = autograd::SavedTensor(x, autograd::SavedTensor::kInput);
  node->out = autograd::SavedTensor(out);
  autograd::set_history(out, node);
  return out;
}

// Reports a call with two outputs (values, indices).
void report_pair(const OpCall& call, const Tensor& x, const Attributes& attrs,
                 const std::pair<Tensor, Tensor>& out) {
  call.report({x}, attrs, {out.first, out.second});
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  OpCall call(OpId::Sort, x);
  std::pair<Tensor, Tensor> out = record_indexed(call.op(), IndexedKind::Sort, x, dim, true, [&] {
    return ops::sort(x, dim, descending, stable);
  });
  if (call.reported())
    report_pair(call, x, {{"dim", dim}, {"descending", descending}, {"stable", stable}}, out);
  return out;
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  OpCall call(OpId::Topk, x);
  std::pair<Tensor, Tensor> out = record_indexed(call.op(), IndexedKind::Topk, x, dim, true, [&] {
    return ops::topk(x, k, dim, largest, sorted);
  });
  if (call.reported())
    report_pair(call, x, {{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", sorted}}, out);
  return out;
}

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  OpCall call(OpId::Kthvalue, x);
  std::pair<Tensor, Tensor> out = record_indexed(call.op(), IndexedKind::Kthvalue, x, dim, keepdim,
                                                 [&] { return ops::kthvalue(x, k, dim, keepdim); });
  if (call.reported()) report_pair(call, x, {{"k", k}, {"dim", dim}, {"keepdim", keepdim}}, out);
  return out;
}

std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  OpCall call(OpId::Median, x);
  std::pair<Tensor, Tensor> out = record_indexed(call.op(), IndexedKind::Median, x, dim, keepdim,
                                                 [&] { return ops::median(x, dim, keepdim); });
  if (call.reported()) report_pair(call, x, {{"dim", dim}, {"keepdim", keepdim}}, out);
  return out;
}

// The whole-tensor form: one output, no attributes (as max(x)).
Tensor median(const Tensor& x) {
  OpCall call(OpId::Median, x);
  RCUDA_CHECK(x.numel() > 0, ValueError, "median: expected a non-empty tensor, got shape ",
              shape_str(x.shape()));
  Tensor out = median(reshape(x, {x.numel()}), 0, false).first;
  if (call.reported()) call.report({x}, {}, {out});
  return out;
}

std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  OpCall call(OpId::Mode, x);
  std::pair<Tensor, Tensor> out = record_indexed(call.op(), IndexedKind::Mode, x, dim, keepdim,
                                                 [&] { return ops::mode(x, dim, keepdim); });
  if (call.reported()) report_pair(call, x, {{"dim", dim}, {"keepdim", keepdim}}, out);
  return out;
}

std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  OpCall call(OpId::Cummax, x);
  std::pair<Tensor, Tensor> out = record_indexed(call.op(), IndexedKind::Cummax, x, dim, true,
                                                 [&] { return ops::cummax(x, dim); });
  if (call.reported()) report_pair(call, x, {{"dim", dim}}, out);
  return out;
}

std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  OpCall call(OpId::Cummin, x);
  std::pair<Tensor, Tensor> out = record_indexed(call.op(), IndexedKind::Cummin, x, dim, true,
                                                 [&] { return ops::cummin(x, dim); });
  if (call.reported()) report_pair(call, x, {{"dim", dim}}, out);
  return out;
}

Tensor cumprod(const Tensor& x, int64_t dim) {
  OpCall call(OpId::Cumprod, x);
  if (call.autocasts()) return cumprod(call.cast(x), dim);
  Tensor out = record_cumulative(call.op(), true, x, dim, [&] { return ops::cumprod(x, dim); });
  if (call.reported()) call.report({x}, {{"dim", dim}}, {out});
  return out;
}

Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  OpCall call(OpId::Logcumsumexp, x);
  Tensor out =
      record_cumulative(call.op(), false, x, dim, [&] { return ops::logcumsumexp(x, dim); });
  if (call.reported()) call.report({x}, {{"dim", dim}}, {out});
  return out;
}

// Index results record nothing; a trace sees the call.
Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  OpCall call(OpId::Argsort, x);
  Tensor out = ops::argsort(x, dim, descending, stable);
  if (call.reported())
    call.report({x}, {{"dim", dim}, {"descending", descending}, {"stable", stable}}, {out});
  return out;
}

Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                const std::string& interpolation) {
  OpCall call(OpId::Quantile, x);
  constexpr const char* kOp = "quantile";
  const bool linear = interpolation == "linear", midpoint = interpolation == "midpoint";
  RCUDA_CHECK(linear || midpoint || interpolation == "lower" || interpolation == "higher" ||
                  interpolation == "nearest",
              ValueError, kOp,
              ": interpolation must be one of linear, lower, higher, midpoint and nearest, got \"",
              interpolation, "\"");
  RCUDA_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, kOp,
              ": input must be float32 or float64, got ", dtype_name(x.dtype()));
  RCUDA_CHECK(q.dtype() == x.dtype(), DTypeError, kOp, ": q must have the input's dtype (",
              dtype_name(x.dtype()), "), got ", dtype_name(q.dtype()));
  RCUDA_CHECK(q.dim() <= 1, ShapeError, kOp, ": q must be a number or a 1-D tensor, got shape ",
              shape_str(q.shape()));
  RCUDA_CHECK(x.numel() > 0, ValueError, kOp, ": input must be non-empty, got shape ",
              shape_str(x.shape()));
  RCUDA_CHECK(x.device() == q.device(), DeviceError, kOp, ": input is on ", x.device().str(),
              " but q is on ", q.device().str());
  RCUDA_CHECK(
      q.numel() == 0 ||
          ops::item(ops::all(ops::logical_and(ops::ge(q, 0.0), ops::le(q, 1.0)))).to_double() != 0,
      ValueError, kOp, ": q values must be in the range [0, 1]");

  // Reduce over the last dim of `moved`: dim moved last, or everything flattened.
  const int64_t ndim = x.dim();
  const int64_t d = dim ? wrap_dim(*dim, ndim == 0 ? 1 : ndim, kOp) : 0;
  Tensor moved;
  if (!dim || ndim == 0) {
    moved = reshape(x, {x.numel()});
  } else {
    std::vector<int64_t> order;
    for (int64_t i = 0; i < ndim; ++i)
      if (i != d) order.push_back(i);
    order.push_back(d);
    moved = x.permute(order);
  }
  const Tensor sorted = sort(moved, -1).first;  // [..., n]
  const int64_t n = sorted.shape().back();
  Shape batch = sorted.shape();
  batch.pop_back();
  const Tensor qs = q.dim() == 0 ? q.view({1}) : q;
  Shape index_shape = batch;
  index_shape.push_back(qs.numel());

  // torch's ranks: q (n - 1), n - 1 for a slice with NaN (so that its quantile is NaN).
  Tensor ranks = ops::contiguous(ops::mul(qs, static_cast<double>(n - 1)).expand(index_shape));
  const Tensor has_nan = ops::any(ops::ne(sorted, sorted), {-1}, true);
  ranks = ops::where(has_nan, static_cast<double>(n - 1), ranks);
  if (interpolation == "lower") ranks = ops::floor(ranks);
  if (interpolation == "higher") ranks = ops::ceil(ranks);
  if (interpolation == "nearest") ranks = ops::round(ranks);  // half to even, as torch
  const Tensor below_rank = ops::floor(ranks);
  Tensor result = gather(sorted, -1, ops::to(below_rank, DType::Int64));
  if (linear || midpoint) {
    const Tensor above = gather(sorted, -1, ops::to(ops::ceil(ranks), DType::Int64));
    const Tensor weights = midpoint ? ops::full_like(ranks, 0.5) : ops::sub(ranks, below_rank);
    result = add(result, mul(weights, sub(above, result)));
  }

  // [..., m] to torch's layout: q's dim first (when q is 1-D), then the reduced shape.
  if (q.dim() == 0) {
    result = result.squeeze(-1);
  } else {
    std::vector<int64_t> order{result.dim() - 1};
    for (int64_t i = 0; i + 1 < result.dim(); ++i) order.push_back(i);
    result = result.permute(order);
  }
  if (keepdim) {
    const int64_t shift = q.dim() == 0 ? 0 : 1;
    if (dim && ndim > 0) {
      result = result.unsqueeze(d + shift);
    } else {
      Shape shape;
      if (q.dim() == 1) shape.push_back(q.numel());
      for (int64_t i = 0; i < ndim; ++i) shape.push_back(1);
      result = reshape(result, shape);
    }
  }
  result = contiguous(result);
  if (call.reported()) {
    Attributes attrs;
    if (dim) attrs.set("dim", *dim);
    attrs.set("keepdim", keepdim);
    attrs.set("interpolation", interpolation);
    call.report({x, q}, attrs, {result});
  }
  return result;
}

}  // namespace rcuda
