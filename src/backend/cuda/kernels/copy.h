// Host-visible entry points of kernels/copy.cu.
#pragma once

#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::cuda {

// dst <- src on one device, converting dtype, any strides, same shape.
void device_copy(const Tensor& dst, const Tensor& src);

// Backend::cat on one device (its contract), up to kCatInputsPerLaunch inputs per launch.
void device_cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim);

}  // namespace rcuda::cuda
