// Entry points of reductions, softmax and cumsum (Note [Recording] in rcuda/autograd/record.h),
// and of all, any, argmax and argmin, which record nothing.
#include <string>

#include "grads/reduction.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::OpCall;
using autograd::ReductionKind;

// Whether the formula of `kind` reads the forward result (grads/reduction.cpp).
bool reads_result(ReductionKind kind) {
  switch (kind) {
    case ReductionKind::Prod:
    case ReductionKind::Var:
      return false;
    case ReductionKind::Max:
    case ReductionKind::Min:
    case ReductionKind::Std:
    case ReductionKind::Norm:
    case ReductionKind::Logsumexp:
      return true;
  }
  return true;
}

// `arg` is the correction of Var and Std, the p of Norm.
template <typename Forward>
Tensor record_reduction(OpId op, ReductionKind kind, const Tensor& x, const Dims& dims,
                        bool keepdim, double arg, Forward forward) {
  if (!OpCall::records(x)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::ReductionBackward>(op, x);
  node->kind = kind;
  node->dims = dims;
  node->keepdim = keepdim;
  node->correction = arg;
  node->p = arg;
  node->x = autograd::SavedTensor(x, autograd::SavedTensor::kInput);
  if (reads_result(kind)) node->out = autograd::SavedTensor(out);
  autograd::set_history(out, std::move(node));
  return out;
}

// max/min along dim: the node has two outputs; indices (int64) get no history.
std::pair<Tensor, Tensor> record_arg_reduce(OpId op, bool is_max, const Tensor& x, int64_t dim,
                                            bool keepdim) {
  const auto forward = [&] {
    return is_max ? ops::max(x, dim, keepdim) : ops::min(x, dim, keepdim);
  };
  if (!OpCall::records(x)) return forward();
  std::pair<Tensor, Tensor> out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::ArgReduceBackward>(op, x);
  node->set_num_outputs(2);
  node->is_max = is_max;
  node->dim = dim;
  node->keepdim = keepdim;
  node->indices = autograd::SavedTensor(out.second);
  autograd::set_history(out.first, node, 0);
  autograd::set_history(out.second, node, 1);
  return out;
}

Tensor record_softmax(OpId op, bool log, const Tensor& x, int64_t dim) {
  const auto forward = [&] { return log ? ops::log_softmax(x, dim) : ops::softmax(x, dim); };
  if (!OpCall::records(x)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::SoftmaxBackward>(op, x);
  node->log = log;
  node->dim = dim;
  node->out = autograd::SavedTensor(out);
  autograd::set_history(out, node);
  return out;
}

// The attributes of a reduction over dims (empty: every element).
Attributes dims_attributes(const Dims& dims, bool keepdim) {
  return {{"dims", dims}, {"keepdim", keepdim}};
}

Attributes variance_attributes(const Dims& dims, double correction, bool keepdim) {
  return {{"dims", dims}, {"correction", correction}, {"keepdim", keepdim}};
}

// argmax and argmin: dim absent when they reduce every element.
Attributes arg_attributes(std::optional<int64_t> dim, bool keepdim) {
  Attributes attrs;
  if (dim) attrs.set("dim", *dim);
  attrs.set("keepdim", keepdim);
  return attrs;
}

}  // namespace

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim, std::optional<DType> dtype) {
  OpCall call(OpId::Sum, x);
  if (call.autocasts()) return sum(call.cast(x), dims, keepdim, dtype);
  Tensor out;
  if (!OpCall::records(x)) {
    out = ops::sum(x, dims, keepdim, dtype);
  } else {
    out = autograd::below_autograd([&] { return ops::sum(x, dims, keepdim, dtype); });
    auto node = autograd::make_node<autograd::SumBackward>(call.op(), x);
    node->dims = dims;
    node->keepdim = keepdim;
    autograd::set_history(out, std::move(node));
  }
  if (call.reported()) {
    Attributes attrs = dims_attributes(dims, keepdim);
    if (dtype) attrs.set("dtype", std::string(dtype_name(*dtype)));
    call.report({x}, attrs, {out});
  }
  return out;
}

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
  OpCall call(OpId::Mean, x);
  Tensor out;
  if (!OpCall::records(x)) {
    out = ops::mean(x, dims, keepdim);
  } else {
    out = autograd::below_autograd([&] { return ops::mean(x, dims, keepdim); });
    auto node = autograd::make_node<autograd::SumBackward>(call.op(), x);
    node->dims = dims;
    node->keepdim = keepdim;
    node->mean = true;
    autograd::set_history(out, std::move(node));
  }
  if (call.reported()) call.report({x}, dims_attributes(dims, keepdim), {out});
  return out;
}

Tensor prod(const Tensor& x, const Dims& dims, bool keepdim) {
  OpCall call(OpId::Prod, x);
  if (call.autocasts()) return prod(call.cast(x), dims, keepdim);
  Tensor out = record_reduction(call.op(), ReductionKind::Prod, x, dims, keepdim, 0,
                                [&] { return ops::prod(x, dims, keepdim); });
  if (call.reported()) call.report({x}, dims_attributes(dims, keepdim), {out});
  return out;
}

Tensor max(const Tensor& x) {
  OpCall call(OpId::Max, x);
  Tensor out =
      record_reduction(call.op(), ReductionKind::Max, x, {}, false, 0, [&] { return ops::max(x); });
  if (call.reported()) call.report({x}, {}, {out});
  return out;
}
Tensor min(const Tensor& x) {
  OpCall call(OpId::Min, x);
  Tensor out =
      record_reduction(call.op(), ReductionKind::Min, x, {}, false, 0, [&] { return ops::min(x); });
  if (call.reported()) call.report({x}, {}, {out});
  return out;
}
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  OpCall call(OpId::Max, x);
  std::pair<Tensor, Tensor> out = record_arg_reduce(call.op(), true, x, dim, keepdim);
  if (call.reported())
    call.report({x}, {{"dim", dim}, {"keepdim", keepdim}}, {out.first, out.second});
  return out;
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  OpCall call(OpId::Min, x);
  std::pair<Tensor, Tensor> out = record_arg_reduce(call.op(), false, x, dim, keepdim);
  if (call.reported())
    call.report({x}, {{"dim", dim}, {"keepdim", keepdim}}, {out.first, out.second});
  return out;
}

Tensor var(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  OpCall call(OpId::Var, x);
  Tensor out = record_reduction(call.op(), ReductionKind::Var, x, dims, keepdim, correction,
                                [&] { return ops::var(x, dims, correction, keepdim); });
  if (call.reported()) call.report({x}, variance_attributes(dims, correction, keepdim), {out});
  return out;
}
Tensor std(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  OpCall call(OpId::Std, x);
  Tensor out = record_reduction(call.op(), ReductionKind::Std, x, dims, keepdim, correction,
                                [&] { return ops::std(x, dims, correction, keepdim); });
  if (call.reported()) call.report({x}, variance_attributes(dims, correction, keepdim), {out});
  return out;
}

Tensor norm(const Tensor& x, double p, const Dims& dims, bool keepdim) {
  OpCall call(OpId::Norm, x);
  if (call.autocasts()) return norm(call.cast(x), p, dims, keepdim);
  Tensor out = record_reduction(call.op(), ReductionKind::Norm, x, dims, keepdim, p,
                                [&] { return ops::norm(x, p, dims, keepdim); });
  if (call.reported()) {
    Attributes attrs = dims_attributes(dims, keepdim);
    attrs.set("p", p);
    call.report({x}, attrs, {out});
  }
  return out;
}

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
  OpCall call(OpId::Logsumexp, x);
  Tensor out = record_reduction(call.op(), ReductionKind::Logsumexp, x, dims, keepdim, 0,
                                [&] { return ops::logsumexp(x, dims, keepdim); });
  if (call.reported()) call.report({x}, dims_attributes(dims, keepdim), {out});
  return out;
}

Tensor softmax(const Tensor& x, int64_t dim) {
  OpCall call(OpId::Softmax, x);
  if (call.autocasts()) return softmax(call.cast(x), dim);
  Tensor out = record_softmax(call.op(), false, x, dim);
  if (call.reported()) call.report({x}, {{"dim", dim}}, {out});
  return out;
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  OpCall call(OpId::LogSoftmax, x);
  if (call.autocasts()) return log_softmax(call.cast(x), dim);
  Tensor out = record_softmax(call.op(), true, x, dim);
  if (call.reported()) call.report({x}, {{"dim", dim}}, {out});
  return out;
}

Tensor cumsum(const Tensor& x, int64_t dim) {
  OpCall call(OpId::Cumsum, x);
  if (call.autocasts()) return cumsum(call.cast(x), dim);
  Tensor out;
  if (!OpCall::records(x)) {
    out = ops::cumsum(x, dim);
  } else {
    out = autograd::below_autograd([&] { return ops::cumsum(x, dim); });
    auto node = autograd::make_node<autograd::CumsumBackward>(call.op(), x);
    node->dim = dim;
    autograd::set_history(out, node);
  }
  if (call.reported()) call.report({x}, {{"dim", dim}}, {out});
  return out;
}

// Bool and index results record nothing; a trace sees the call.
Tensor all(const Tensor& x, const Dims& dims, bool keepdim) {
  OpCall call(OpId::All, x);
  Tensor out = ops::all(x, dims, keepdim);
  if (call.reported()) call.report({x}, dims_attributes(dims, keepdim), {out});
  return out;
}
Tensor any(const Tensor& x, const Dims& dims, bool keepdim) {
  OpCall call(OpId::Any, x);
  Tensor out = ops::any(x, dims, keepdim);
  if (call.reported()) call.report({x}, dims_attributes(dims, keepdim), {out});
  return out;
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  OpCall call(OpId::Argmax, x);
  Tensor out = ops::argmax(x, dim, keepdim);
  if (call.reported()) call.report({x}, arg_attributes(dim, keepdim), {out});
  return out;
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  OpCall call(OpId::Argmin, x);
  Tensor out = ops::argmin(x, dim, keepdim);
  if (call.reported()) call.report({x}, arg_attributes(dim, keepdim), {out});
  return out;
}

}  // namespace rcuda
