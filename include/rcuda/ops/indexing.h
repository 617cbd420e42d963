// Joining, splitting and indexing.
#pragma once

#include <optional>
#include <vector>

#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// Joins along dim; dtypes promote; 1-D empty tensors are skipped, as torch.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Views of `split_size` elements along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// Copies of x with src's elements written (or added) at index along dim.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
// x[mask]: 1-D, the elements where mask (broadcast to x) is true.
Tensor masked_select(const Tensor& x, const Tensor& mask);
Tensor nonzero(const Tensor& x);
// int64 classes in [0, num_classes) -> int64 one-hot in a new last dim; -1 infers max + 1.
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);

// ---- advanced indexing: self[indices] = values (src/ops/index_put.cpp) ---------------------
// Note [Index lists]
// indices[k] indexes the next dim(s) of self, as torch's index_put_: an int64 tensor one dim
// (negative positions count from the end), a bool mask as many dims as it has (the positions of
// its true elements in row-major order; its shape must be those dims' sizes), std::nullopt the
// whole dim; dims after the last entry are whole. The int64 tensors (a mask as its count of
// true elements) broadcast together to a shape B, and the selection keeps self's whole dims
// with B in place of the indexed ones when those are adjacent, or B first when a whole dim
// separates them (numpy's rule). Expanding a mask or checking an index's range reads it on the
// host (one synchronisation each on CUDA).
using IndexList = std::vector<std::optional<Tensor>>;

// In place: self[indices] = values, or += with accumulate (duplicate positions then add up;
// without it one of them wins, unspecified which). values has self's dtype and device and
// broadcasts to the selection's shape. Returns self.
const Tensor& index_put_(const Tensor& self, const IndexList& indices, const Tensor& values,
                         bool accumulate = false);
// The positions index_put_(self, indices, values) writes, after all its checks (errors name
// index_put_): int64, in the selection's shape, each the row-major offset of an element of self.
// For callers that write through put_ and keep the positions (autograd: backward then needs no
// masks expanded and reads nothing on the host).
Tensor index_put_positions(const Tensor& self, const IndexList& indices, const Tensor& values);
// In place: self seen as 1-D, self[positions] = values (or +=), as torch's put_; positions are
// int64 in [0, numel), values broadcast to their shape. Returns self.
const Tensor& put_(const Tensor& self, const Tensor& positions, const Tensor& values,
                   bool accumulate = false);

}  // namespace rcuda::ops
