// Joining, splitting and indexing.
#pragma once

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

}  // namespace rcuda::ops
