// Entry points of matrix products.
#include "grads/linalg.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::OpCall;

template <typename Forward>
Tensor record_product(OpId op, const char* name, const Tensor& a, const Tensor& b,
                      Forward forward) {
  if (!OpCall::records(a, b)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::MatmulBackward>(op, a, b);
  node->name_ = name;
  // Each operand is needed only for the other's gradient.
  if (autograd::needs_grad(b)) node->a = autograd::SavedTensor(a, autograd::SavedTensor::kInput);
  if (autograd::needs_grad(a)) node->b = autograd::SavedTensor(b, autograd::SavedTensor::kInput);
  autograd::set_history(out, node);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  OpCall call(OpId::Matmul, a);
  if (call.autocasts()) return matmul(call.cast(a), call.cast(b));
  Tensor out = record_product(call.op(), "MatmulBackward", a, b, [&] { return ops::matmul(a, b); });
  if (call.reported()) call.report({a, b}, {}, {out});
  return out;
}
Tensor mm(const Tensor& a, const Tensor& b) {
  OpCall call(OpId::Mm, a);
  if (call.autocasts()) return mm(call.cast(a), call.cast(b));
  Tensor out = record_product(call.op(), "MmBackward", a, b, [&] { return ops::mm(a, b); });
  if (call.reported()) call.report({a, b}, {}, {out});
  return out;
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  OpCall call(OpId::Bmm, a);
  if (call.autocasts()) return bmm(call.cast(a), call.cast(b));
  Tensor out = record_product(call.op(), "BmmBackward", a, b, [&] { return ops::bmm(a, b); });
  if (call.reported()) call.report({a, b}, {}, {out});
  return out;
}

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
             const Scalar& alpha) {
  OpCall call(OpId::Addmm, a);
  if (call.autocasts()) return addmm(call.cast(input), call.cast(a), call.cast(b), beta, alpha);
  Tensor out;
  if (!OpCall::records(input, a, b)) {
    out = ops::addmm(input, a, b, beta, alpha);
  } else {
    out = autograd::below_autograd([&] { return ops::addmm(input, a, b, beta, alpha); });
    auto node = autograd::make_node<autograd::AddmmBackward>(call.op(), input, a, b);
    node->beta = beta.to_double();
    node->alpha = alpha.to_double();
    if (autograd::needs_grad(b)) node->a = autograd::SavedTensor(a, autograd::SavedTensor::kInput);
    if (autograd::needs_grad(a)) node->b = autograd::SavedTensor(b, autograd::SavedTensor::kInput);
    autograd::set_history(out, node);
  }
  if (call.reported())
    call.report({input, a, b}, {{"beta", beta.to_double()}, {"alpha", alpha.to_double()}}, {out});
  return out;
}

}  // namespace rcuda
