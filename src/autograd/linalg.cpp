// Entry points of matrix products.
#include "grads/linalg.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/autocast.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

template <typename Forward>
Tensor record_product(const char* name, const Tensor& a, const Tensor& b, Forward forward) {
  if (!autograd::should_record(a, b)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::MatmulBackward>(a, b);
  node->name_ = name;
  // Each operand is needed only for the other's gradient.
  if (autograd::needs_grad(b)) node->a = autograd::SavedTensor(a, autograd::SavedTensor::kInput);
  if (autograd::needs_grad(a)) node->b = autograd::SavedTensor(b, autograd::SavedTensor::kInput);
  autograd::set_history(out, node);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (autocast::Region cast{"matmul", a}) return matmul(cast(a), cast(b));
  return record_product("MatmulBackward", a, b, [&] { return ops::matmul(a, b); });
}
Tensor mm(const Tensor& a, const Tensor& b) {
  if (autocast::Region cast{"mm", a}) return mm(cast(a), cast(b));
  return record_product("MmBackward", a, b, [&] { return ops::mm(a, b); });
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  if (autocast::Region cast{"bmm", a}) return bmm(cast(a), cast(b));
  return record_product("BmmBackward", a, b, [&] { return ops::bmm(a, b); });
}

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
             const Scalar& alpha) {
  if (autocast::Region cast{"addmm", a}) return addmm(cast(input), cast(a), cast(b), beta, alpha);
  if (!autograd::should_record(input, a, b)) return ops::addmm(input, a, b, beta, alpha);
  Tensor out = autograd::below_autograd([&] { return ops::addmm(input, a, b, beta, alpha); });
  auto node = autograd::make_node<autograd::AddmmBackward>(input, a, b);
  node->beta = beta.to_double();
  node->alpha = alpha.to_double();
  if (autograd::needs_grad(b)) node->a = autograd::SavedTensor(a, autograd::SavedTensor::kInput);
  if (autograd::needs_grad(a)) node->b = autograd::SavedTensor(b, autograd::SavedTensor::kInput);
  autograd::set_history(out, node);
  return out;
}

}  // namespace rcuda
