// Sizes and strides (in elements) of a tensor, and the arithmetic on them that views and
// broadcasting need. Element counts are checked for int64 overflow.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace rcuda {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

// Element count; throws ShapeError for negative sizes or a count past int64 (names `op`).
int64_t checked_numel(const Shape& shape, const char* op);
// The product of sizes: a Shape, or a DimVector (a backend's merged dims).
template <typename Sizes>
int64_t numel(const Sizes& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}
Strides contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"

// Wraps a possibly negative dim into [0, ndim); IndexError naming op and the valid range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// PyTorch's broadcasting: sizes aligned from the right, 1 stretches. ShapeError otherwise.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace rcuda
