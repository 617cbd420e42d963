// Sparse COO tensors (docs/sparse.md): the value type and the no-grad ops over it. The dense
// Tensor knows nothing of sparsity; a sparse tensor is two dense tensors and a size.
#pragma once

#include <cstdint>
#include <optional>

#include "rcuda/core/shape.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda {

// torch's sparse_coo layout: entry i sits at indices[:, i] and holds values[i] (a scalar, or a
// dense block of the last size.size() - sparse_dim() dims). Entries may repeat (their values
// add up) and come in any order unless `coalesced`, which means sorted by row-major position
// with no repeats.
struct SparseCooTensor {
  Tensor indices;  // Int64 [sparse_dim, nnz], contiguous
  Tensor values;   // [nnz, dense sizes...]
  Shape size;
  bool coalesced = false;

  bool defined() const { return indices.defined(); }
  int64_t nnz() const { return indices.size(1); }
  int64_t sparse_dim() const { return indices.size(0); }
  int64_t dense_dim() const { return values.dim() - 1; }
  int64_t dim() const { return static_cast<int64_t>(size.size()); }
  DType dtype() const { return values.dtype(); }
  Device device() const { return values.device(); }
};

namespace ops {

// A sparse tensor from its parts, as torch.sparse_coo_tensor: indices integral [sparse_dim, nnz]
// (converted to Int64), values [nnz, ...]; without `size`, each sparse size is the largest index
// plus one. Errors name "sparse_coo_tensor" and the argument: an index out of [0, size[d]) (read
// on the host), wrong dims, a size that does not match values, devices that differ.
SparseCooTensor sparse_coo_tensor(const Tensor& indices, const Tensor& values,
                                  std::optional<Shape> size = std::nullopt);

// The dense tensor (repeated entries summed).
Tensor to_dense(const SparseCooTensor& x);
// The nonzeros of x as a coalesced sparse tensor whose first `sparse_dim` dims are sparse
// (default all); a block of the remaining dims is kept when any element of it is nonzero.
SparseCooTensor to_sparse(const Tensor& x, std::optional<int64_t> sparse_dim = std::nullopt);
// Indices sorted by row-major position, repeats summed; x itself when already coalesced.
SparseCooTensor coalesce(const SparseCooTensor& x);
// Both members moved or converted (values to `dtype`), as Tensor::to.
SparseCooTensor to(const SparseCooTensor& x, Device device, DType dtype);

// a [n, m] (2 sparse dims, no dense dims) @ b [m, k] dense -> dense [n, k]; float32/float64.
Tensor sparse_mm(const SparseCooTensor& a, const Tensor& b);
// The gradients of sparse_mm: a^T @ grad ([m, k]), and for each stored entry i of the coalesced
// a, sum_j grad[row_i, j] * b[col_i, j] ([nnz]).
Tensor sparse_mm_backward_dense(const SparseCooTensor& a, const Tensor& grad);
Tensor sparse_mm_backward_values(const SparseCooTensor& a, const Tensor& b, const Tensor& grad);
// The gradient of to_dense with respect to x.values: grad at each entry's position.
Tensor to_dense_backward_values(const SparseCooTensor& x, const Tensor& grad);

}  // namespace ops
}  // namespace rcuda
