// Backward node of index_put_ (entry point in src/autograd/index_put.cpp).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

// Inputs: self (its history before the write) and values. The positions written (row-major
// offsets in self, in the selection's shape: ops::index_put_positions) are kept instead of the
// indices, so backward needs no mask expansion and reads nothing on the host.
struct IndexPutBackward final : Node {
  SavedTensor positions;
  bool accumulate = false;
  const char* name() const override { return "IndexPutBackward"; }
  TensorList apply(TensorList&& grads) override;
  void release_saved() override { positions.release(); }
};

}  // namespace rcuda::autograd
