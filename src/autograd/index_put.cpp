// Entry point of index_put_: writes through ops::put_ at the positions ops::index_put_positions
// finds, and keeps them for backward (grads/index_put.cpp).
#include "grads/index_put.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"

namespace rcuda {
namespace {

using autograd::OpCall;

// Writes self[indices] = values (or +=), recording when self or values requires grad.
void write_index_put(OpId op, const Tensor& self, const ops::IndexList& indices,
                     const Tensor& values, bool accumulate) {
  if (!OpCall::records(self, values)) {
    ops::index_put_(self, indices, values, accumulate);
    return;
  }
  autograd::check_not_view("index_put_", self, "index the tensor itself");
  const Tensor positions =
      autograd::below_autograd([&] { return ops::index_put_positions(self, indices, values); });
  auto node = autograd::make_node<autograd::IndexPutBackward>(op, self, values);
  node->positions = autograd::SavedTensor(positions);
  node->accumulate = accumulate;
  autograd::below_autograd(
      [&]() -> const Tensor& { return ops::put_(self, positions, values, accumulate); });
  autograd::set_history(self, node);
}

}  // namespace

const Tensor& index_put_(const Tensor& self, const ops::IndexList& indices, const Tensor& values,
                         bool accumulate) {
  OpCall call(OpId::IndexPut, self);
  autograd::check_inplace("index_put_", self);
  call.will_change(self);
  write_index_put(call.op(), self, indices, values, accumulate);
  if (call.reported()) {
    // self, then one input per index (undefined where the list takes a whole dim), then values.
    std::vector<Tensor> inputs{self};
    for (const std::optional<Tensor>& index : indices) inputs.push_back(index.value_or(Tensor()));
    inputs.push_back(values);
    call.report(inputs, {{"accumulate", accumulate}}, {self});
  }
  return self;
}

}  // namespace rcuda
