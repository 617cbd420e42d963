// The gradients of a parameter list, checked and grouped by device, contiguous for the
// multi-tensor primitives (clip_grad.cpp, grad_scaler.cpp).
#pragma once

#include <utility>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::optim::detail {

// The gradients of `params` that exist, checked floating (errors name `op` and the index).
std::vector<Tensor> gradients_of(const std::vector<Tensor>& params, const char* op);

// Gradients of one device, contiguous for the primitives: a strided gradient is staged
// through a copy that write_back() returns to it.
struct DeviceGrads {
  Device device;
  std::vector<Tensor> grads, dense;
  std::vector<std::pair<Tensor, Tensor>> staged;
  void write_back() const;
};

std::vector<DeviceGrads> by_device(const std::vector<Tensor>& grads);

}  // namespace rcuda::optim::detail
