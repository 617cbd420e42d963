// How a reduction lays out its input, shared by the CPU engine (cpu/reduce.cpp) and the CUDA one
// (cuda/kernels/reduce.cuh) so that both walk the same index spaces.
//
// Note [Reduction layout]
// A reduction sees `in` as two index spaces: the kept dims (one point per output element) and
// the reduced dims (where the output has size 1 and `in` does not). Size-1 dims belong to
// neither. Neighbouring kept dims merge where `in` and both outputs (values and, for
// arg_reduce, indices) allow; reduced dims are ordered by decreasing stride and merged, so the
// innermost reduced run is as long as memory allows. A space left without dims is one point
// (size 1, stride 0), so that both engines can index it like any other.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include "backend/dim_order.h"
#include "rcuda/core/small_vector.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::backend {

struct ReductionLayout {
  DimVector kept_sizes;                       // outermost first
  DimVector kept_in_strides;                  // in elements
  std::array<DimVector, 2> kept_out_strides;  // values and (for arg_reduce) indices
  DimVector reduced_sizes;                    // innermost last
  DimVector reduced_strides;
  int64_t num_outputs = 1;
  int64_t reduced_numel = 1;
};

// The layout of reducing `in` into out0 (and out1, the indices of arg_reduce; out0 again
// otherwise): both have in's rank, size 1 along the reduced dims, or out0 is 0-dim and every
// dim is reduced.
inline ReductionLayout make_reduction_layout(const Tensor& in, const Tensor& out0,
                                             const Tensor& out1) {
  ReductionLayout layout;
  DimVector reduced;
  const bool every_dim = out0.dim() == 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    const int64_t size = in.shape()[d];
    if (size == 1) continue;  // contributes nothing to either space
    if (every_dim || out0.shape()[d] == 1) {
      reduced.push_back(d);
      continue;
    }
    const int64_t in_stride = in.strides()[d];
    const int64_t out_stride[2] = {out0.strides()[d], out1.strides()[d]};
    const bool merge = !layout.kept_sizes.empty() &&
                       layout.kept_in_strides.back() == in_stride * size &&
                       layout.kept_out_strides[0].back() == out_stride[0] * size &&
                       layout.kept_out_strides[1].back() == out_stride[1] * size;
    if (merge) {
      layout.kept_sizes.back() *= size;
      layout.kept_in_strides.back() = in_stride;
      for (int k = 0; k < 2; ++k) layout.kept_out_strides[k].back() = out_stride[k];
    } else {
      layout.kept_sizes.push_back(size);
      layout.kept_in_strides.push_back(in_stride);
      for (int k = 0; k < 2; ++k) layout.kept_out_strides[k].push_back(out_stride[k]);
    }
  }
  order_by_decreasing_stride(reduced, in.strides());
  for (int64_t d : reduced) {
    const int64_t size = in.shape()[d], stride = in.strides()[d];
    if (!layout.reduced_sizes.empty() && layout.reduced_strides.back() == stride * size) {
      layout.reduced_sizes.back() *= size;
      layout.reduced_strides.back() = stride;
    } else {
      layout.reduced_sizes.push_back(size);
      layout.reduced_strides.push_back(stride);
    }
  }
  if (layout.kept_sizes.empty()) {
    layout.kept_sizes.push_back(1);
    layout.kept_in_strides.push_back(0);
    for (int k = 0; k < 2; ++k) layout.kept_out_strides[k].push_back(0);
  }
  if (layout.reduced_sizes.empty()) {
    layout.reduced_sizes.push_back(1);
    layout.reduced_strides.push_back(0);
  }
  layout.num_outputs = numel(layout.kept_sizes);
  layout.reduced_numel = numel(layout.reduced_sizes);
  return layout;
}

}  // namespace rcuda::backend
