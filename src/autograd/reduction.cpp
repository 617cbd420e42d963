// Entry points of reductions.
#include "grads/reduction.h"
#include "rcuda/autograd/api.h"
#include "record.h"

namespace rcuda {

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim, std::optional<DType> dtype) {
  if (!autograd::should_record(x)) return ops::sum(x, dims, keepdim, dtype);
  Tensor out = autograd::below_autograd([&] { return ops::sum(x, dims, keepdim, dtype); });
  auto node = autograd::make_node<autograd::SumBackward>(x);
  node->dims = dims;
  node->keepdim = keepdim;
  autograd::set_history(out, node);
  return out;
}

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
  if (!autograd::should_record(x)) return ops::mean(x, dims, keepdim);
  Tensor out = autograd::below_autograd([&] { return ops::mean(x, dims, keepdim); });
  auto node = autograd::make_node<autograd::SumBackward>(x);
  node->dims = dims;
  node->keepdim = keepdim;
  node->mean = true;
  autograd::set_history(out, node);
  return out;
}

}  // namespace rcuda
