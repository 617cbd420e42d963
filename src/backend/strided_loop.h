// Coalescing of same-shaped strided operands into the fewest dims, shared by the CPU loops and
// the CUDA kernels' host side: size-1 dims are dropped, dims are ordered by the output's strides
// (so permuted outputs are written sequentially), and neighbouring dims that are contiguous in
// every operand merge into one.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include "backend/dim_order.h"
#include "rcuda/core/small_vector.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::backend {

template <int N>
struct StridedLoop {
  DimVector sizes;                        // innermost last
  std::array<DimVector, N> byte_strides;  // per operand, per dim
  std::array<char*, N> data;
  int64_t numel = 0;
};

template <int N>
StridedLoop<N> make_loop(const std::array<Tensor, N>& operands) {
  const Tensor& out = operands[0];
  const int64_t ndim = out.dim();
  StridedLoop<N> loop;
  loop.numel = out.numel();
  for (int k = 0; k < N; ++k) loop.data[k] = static_cast<char*>(operands[k].data_ptr());

  DimVector order;
  for (int64_t d = 0; d < ndim; ++d)
    if (out.shape()[d] != 1) order.push_back(d);
  // Walk the output in memory order, so that permuted outputs are written sequentially.
  if (!out.is_contiguous()) order_by_decreasing_stride(order, out.strides());

  for (int64_t d : order) {
    const int64_t size = out.shape()[d];
    bool merge = !loop.sizes.empty();
    for (int k = 0; k < N && merge; ++k)
      merge = loop.byte_strides[k].back() ==
              operands[k].strides()[d] * static_cast<int64_t>(operands[k].element_size()) * size;
    if (merge) {
      loop.sizes.back() *= size;
      for (int k = 0; k < N; ++k)
        loop.byte_strides[k].back() =
            operands[k].strides()[d] * static_cast<int64_t>(operands[k].element_size());
    } else {
      loop.sizes.push_back(size);
      for (int k = 0; k < N; ++k)
        loop.byte_strides[k].push_back(operands[k].strides()[d] *
                                       static_cast<int64_t>(operands[k].element_size()));
    }
  }
  if (loop.sizes.empty()) {
    loop.sizes.push_back(1);
    for (int k = 0; k < N; ++k) loop.byte_strides[k].push_back(0);
  }
  return loop;
}

}  // namespace rcuda::backend
