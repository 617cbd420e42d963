// Backward nodes of reductions (entry points in src/autograd/reduction.cpp).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

// sum and mean over `dims` (empty: all): the gradient spreads evenly back over the reduced dims.
struct SumBackward final : Node {
  std::vector<int64_t> dims;
  bool keepdim = false;
  bool mean = false;
  const char* name() const override { return mean ? "MeanBackward" : "SumBackward"; }
  TensorList apply(TensorList&& grads) override;
};

// The gradient of a reduction's output, in keepdim form (size 1 in each reduced dim) so that it
// broadcasts against the input: undoes keepdim = false.
Tensor unsqueeze_reduced(const Tensor& grad, const Shape& input_shape,
                         const std::vector<int64_t>& dims, bool keepdim);

}  // namespace rcuda::autograd
