// What the CPU and CUDA indexing primitives (index_select, gather, scatter) share, so that the
// two cannot drift apart: the bounds rule and its message, the dispatch by element width, and
// the views that make index_select and gather elementwise loops.
//
// Note [Indexing through a zero stride]
// gather reads in[.., index[pos], ..] for every position pos of out. Seeing `in` through out's
// shape with stride 0 along dim (through_dim) turns that into an elementwise loop over (out, in,
// index): each element's source is the in pointer plus index * stride(dim). index_select is the
// same loop with its 1-D index spread over out's shape by zero strides (index_select_as_gather).
#pragma once

#include <cstddef>
#include <cstdint>

#include "rcuda/core/error.h"
#include "rcuda/core/macros.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::backend {

// Indexing moves elements without converting them, so copies are instantiated per element
// width rather than per dtype: f(U{}) with U the unsigned integer of that width.
template <typename F>
void dispatch_width(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      break;
  }
  throw DTypeError(detail::concat("index: unsupported element size ", element_size));
}

// 0 <= index < size. Negative indices are rejected, as torch does for these ops.
RCUDA_HOST_DEVICE inline bool index_in_bounds(int64_t index, int64_t size) {
  return static_cast<uint64_t>(index) < static_cast<uint64_t>(size);
}

// The error both backends throw for an index outside [0, size) along dim.
inline IndexError index_out_of_bounds(const char* op, int64_t index, int64_t dim, int64_t size) {
  return IndexError(detail::concat(op, ": index ", index, " is out of bounds for dim ", dim,
                                   " with size ", size));
}

// t seen through `shape` with stride 0 along dim (Note [Indexing through a zero stride]).
inline Tensor through_dim(const Tensor& t, const Shape& shape, int64_t dim) {
  Strides strides = t.strides();
  strides[dim] = 0;
  return t.as_strided(shape, strides, t.offset());
}

// index_select's 1-D index as gather's: spread over out's shape, stride 0 except along dim.
inline Tensor index_select_as_gather(const Tensor& index, const Shape& out_shape, int64_t dim) {
  Strides spread(out_shape.size(), 0);
  spread[dim] = index.stride(0);
  return index.as_strided(out_shape, spread, index.offset());
}

}  // namespace rcuda::backend
