// Host-visible entry points of kernels/copy.cu.
#pragma once

#include "rcuda/tensor/tensor.h"

namespace rcuda::cuda {

// dst <- src on one device, converting dtype, any strides, same shape.
void device_copy(const Tensor& dst, const Tensor& src);

}  // namespace rcuda::cuda
