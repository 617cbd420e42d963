// The [rows, n] layout the row primitives take (Note [Row primitives] in rcuda/backend/backend.h):
// a dim moved last (the other dims keep their order) and made contiguous, and the way back.
#pragma once

#include <numeric>
#include <vector>

#include "rcuda/core/shape.h"
#include "rcuda/ops/copy.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// The permutation that moves dim d of an ndim-dim tensor last.
inline std::vector<int64_t> dim_last_order(int64_t d, int64_t ndim) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < ndim; ++i)
    if (i != d) order.push_back(i);
  order.push_back(d);
  return order;
}

// Its inverse: puts the last dim back at d.
inline std::vector<int64_t> dim_back_order(int64_t d, int64_t ndim) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < ndim; ++i) order.push_back(i < d ? i : (i == d ? ndim - 1 : i - 1));
  return order;
}

// x (ndim >= 1) as contiguous [rows, n] with dim d's n elements along each row.
inline Tensor to_rows(const Tensor& x, int64_t d) {
  const int64_t n = x.shape()[d];
  const Tensor moved = ops::contiguous(x.permute(dim_last_order(d, x.dim())));
  return moved.view({n == 0 ? 0 : x.numel() / n, n});
}

// rows [rows, m] back to x's layout with dim d of size m (contiguous).
inline Tensor from_rows(const Tensor& rows, const Shape& x_shape, int64_t d) {
  Shape moved;
  for (int64_t i = 0; i < static_cast<int64_t>(x_shape.size()); ++i)
    if (i != d) moved.push_back(x_shape[i]);
  moved.push_back(rows.shape()[1]);
  const int64_t ndim = static_cast<int64_t>(x_shape.size());
  return ops::contiguous(rows.view(moved).permute(dim_back_order(d, ndim)));
}

}  // namespace rcuda::ops
