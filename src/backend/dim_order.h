// The order in which the CPU loops and both reduction engines walk a tensor's dims.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "rcuda/core/small_vector.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::backend {

// `dims` (indices into `strides`) ordered by decreasing |stride|, ties kept in their order. An
// insertion sort: a tensor has a few dims, and std::stable_sort asks the heap for a buffer at
// every call, a cost every non-contiguous op and reduction would pay.
inline void order_by_decreasing_stride(DimVector& dims, const Strides& strides) {
  for (size_t i = 1; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    size_t j = i;
    for (; j > 0 && std::abs(strides[dims[j - 1]]) < std::abs(strides[d]); --j)
      dims[j] = dims[j - 1];
    dims[j] = d;
  }
}

}  // namespace rcuda::backend
