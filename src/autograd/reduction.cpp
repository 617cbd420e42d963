// Entry points of reductions, softmax and cumsum (Note [Recording] in rcuda/autograd/record.h).
#include "grads/reduction.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/autocast.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

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
Tensor record_reduction(ReductionKind kind, const Tensor& x, const Dims& dims, bool keepdim,
                        double arg, Forward forward) {
  if (!autograd::should_record(x)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::ReductionBackward>(x);
  node->kind = kind;
  node->dims = dims;
  node->keepdim = keepdim;
  node->correction = arg;
  node->p = arg;
  node->x = autograd::SavedTensor(x);
  if (reads_result(kind)) node->out = autograd::SavedTensor(out);
  autograd::set_history(out, std::move(node));
  return out;
}

// max/min along dim: the node has two outputs; indices (int64) get no history.
std::pair<Tensor, Tensor> record_arg_reduce(bool is_max, const Tensor& x, int64_t dim,
                                            bool keepdim) {
  const auto forward = [&] {
    return is_max ? ops::max(x, dim, keepdim) : ops::min(x, dim, keepdim);
  };
  if (!autograd::should_record(x)) return forward();
  std::pair<Tensor, Tensor> out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::ArgReduceBackward>(x);
  node->set_num_outputs(2);
  node->is_max = is_max;
  node->dim = dim;
  node->keepdim = keepdim;
  node->indices = autograd::SavedTensor(out.second);
  autograd::set_history(out.first, node, 0);
  autograd::set_history(out.second, node, 1);
  return out;
}

Tensor record_softmax(bool log, const Tensor& x, int64_t dim) {
  const auto forward = [&] { return log ? ops::log_softmax(x, dim) : ops::softmax(x, dim); };
  if (!autograd::should_record(x)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::SoftmaxBackward>(x);
  node->log = log;
  node->dim = dim;
  node->out = autograd::SavedTensor(out);
  autograd::set_history(out, node);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim, std::optional<DType> dtype) {
  if (autocast::Region cast{"sum", x}) return sum(cast(x), dims, keepdim, dtype);
  if (!autograd::should_record(x)) return ops::sum(x, dims, keepdim, dtype);
  Tensor out = autograd::below_autograd([&] { return ops::sum(x, dims, keepdim, dtype); });
  auto node = autograd::make_node<autograd::SumBackward>(x);
  node->dims = dims;
  node->keepdim = keepdim;
  autograd::set_history(out, std::move(node));
  return out;
}

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
  if (!autograd::should_record(x)) return ops::mean(x, dims, keepdim);
  Tensor out = autograd::below_autograd([&] { return ops::mean(x, dims, keepdim); });
  auto node = autograd::make_node<autograd::SumBackward>(x);
  node->dims = dims;
  node->keepdim = keepdim;
  node->mean = true;
  autograd::set_history(out, std::move(node));
  return out;
}

Tensor prod(const Tensor& x, const Dims& dims, bool keepdim) {
  if (autocast::Region cast{"prod", x}) return prod(cast(x), dims, keepdim);
  return record_reduction(ReductionKind::Prod, x, dims, keepdim, 0,
                          [&] { return ops::prod(x, dims, keepdim); });
}

Tensor max(const Tensor& x) {
  return record_reduction(ReductionKind::Max, x, {}, false, 0, [&] { return ops::max(x); });
}
Tensor min(const Tensor& x) {
  return record_reduction(ReductionKind::Min, x, {}, false, 0, [&] { return ops::min(x); });
}
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return record_arg_reduce(true, x, dim, keepdim);
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return record_arg_reduce(false, x, dim, keepdim);
}

Tensor var(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  return record_reduction(ReductionKind::Var, x, dims, keepdim, correction,
                          [&] { return ops::var(x, dims, correction, keepdim); });
}
Tensor std(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  return record_reduction(ReductionKind::Std, x, dims, keepdim, correction,
                          [&] { return ops::std(x, dims, correction, keepdim); });
}

Tensor norm(const Tensor& x, double p, const Dims& dims, bool keepdim) {
  if (autocast::Region cast{"norm", x}) return norm(cast(x), p, dims, keepdim);
  return record_reduction(ReductionKind::Norm, x, dims, keepdim, p,
                          [&] { return ops::norm(x, p, dims, keepdim); });
}

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
  return record_reduction(ReductionKind::Logsumexp, x, dims, keepdim, 0,
                          [&] { return ops::logsumexp(x, dims, keepdim); });
}

Tensor softmax(const Tensor& x, int64_t dim) {
  if (autocast::Region cast{"softmax", x}) return softmax(cast(x), dim);
  return record_softmax(false, x, dim);
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  if (autocast::Region cast{"log_softmax", x}) return log_softmax(cast(x), dim);
  return record_softmax(true, x, dim);
}

Tensor cumsum(const Tensor& x, int64_t dim) {
  if (autocast::Region cast{"cumsum", x}) return cumsum(cast(x), dim);
  if (!autograd::should_record(x)) return ops::cumsum(x, dim);
  Tensor out = autograd::below_autograd([&] { return ops::cumsum(x, dim); });
  auto node = autograd::make_node<autograd::CumsumBackward>(x);
  node->dim = dim;
  autograd::set_history(out, node);
  return out;
}

}  // namespace rcuda
