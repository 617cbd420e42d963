// The backward node of the pools (entry points in src/autograd/pool.cpp).
#pragma once

#include "rcuda/autograd/node.h"
#include "rcuda/ops/pool.h"

namespace rcuda::autograd {

// Every pool, fixed or adaptive, max or average: one formula, ops::pool_backward, from the
// forward's options, the input's shape and memory format, and (max) its indices.
struct PoolBackward final : Node {
  ops::PoolOptions options;
  Shape input_shape;
  bool channels_last = false;
  SavedTensor indices;  // max pools
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  void release_saved() override { indices.release(); }
};

}  // namespace rcuda::autograd
