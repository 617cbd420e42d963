// In-place elementwise entry points: add_ and mul_ (Note [In-place ops] in docs/autograd.md).
#include "grads/elementwise.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {

using autograd::below_autograd;
using autograd::BinaryBackward;
using autograd::make_node;
using autograd::OpCall;
using autograd::SavedTensor;
using autograd::set_history;

namespace {

// Runs an in-place op and, when it must record, makes `node` the new grad_fn of self (its old
// history becomes the node's first input). Note [In-place ops] in docs/autograd.md.
template <typename Forward, typename Configure>
const Tensor& record_inplace(OpId id, BinaryOp kind, const Tensor& self, const Tensor& other,
                             const Attributes& attrs, Forward forward, Configure configure) {
  const char* op = op_name(id);
  autograd::check_inplace(op, self);
  OpCall call(id, self);
  call.will_change(self);
  if (!OpCall::records(self, other)) {
    forward();
  } else {
    autograd::check_not_view(op, self);
    auto node = make_node<BinaryBackward>(id, self, other);
    node->op = kind;
    node->in_place = true;
    configure(*node);
    below_autograd(forward);
    set_history(self, node);
  }
  // The changed tensor is the output: a trace takes it as the tensor's new value.
  if (call.reported()) call.report({self, other}, attrs, {self});
  return self;
}

}  // namespace

const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  Attributes attrs;
  if (alpha.to_double() != 1) attrs.set("alpha", alpha.to_double());
  return record_inplace(
      OpId::AddInplace, BinaryOp::Add, self, other, attrs,
      [&]() -> const Tensor& { return ops::add_(self, other, alpha); },
      [&](BinaryBackward& n) { n.alpha = alpha.to_double(); });
}

const Tensor& mul_(const Tensor& self, const Tensor& other) {
  // self's old value is needed for other's gradient: saved as a copy before the write.
  return record_inplace(
      OpId::MulInplace, BinaryOp::Mul, self, other, {},
      [&]() -> const Tensor& { return ops::mul_(self, other); },
      [&](BinaryBackward& n) {
        n.a = SavedTensor(below_autograd([&] { return ops::clone(self); }));
        n.b = SavedTensor(other);  // an alias: other may be self
      });
}

}  // namespace rcuda
