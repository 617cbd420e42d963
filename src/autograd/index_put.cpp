// Entry point of index_put_: writes through ops::put_ at the positions ops::index_put_positions
// finds, and keeps them for backward (grads/index_put.cpp).
#include "grads/index_put.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"

namespace rcuda {

const Tensor& index_put_(const Tensor& self, const ops::IndexList& indices, const Tensor& values,
                         bool accumulate) {
  autograd::check_inplace("index_put_", self);
  if (!autograd::should_record(self, values))
    return ops::index_put_(self, indices, values, accumulate);
  autograd::check_not_view("index_put_", self, "index the tensor itself");
  const Tensor positions =
      autograd::below_autograd([&] { return ops::index_put_positions(self, indices, values); });
  auto node = autograd::make_node<autograd::IndexPutBackward>(self, values);
  node->positions = autograd::SavedTensor(positions);
  node->accumulate = accumulate;
  autograd::below_autograd(
      [&]() -> const Tensor& { return ops::put_(self, positions, values, accumulate); });
  autograd::set_history(self, node);
  return self;
}

}  // namespace rcuda
