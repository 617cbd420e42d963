// The recording entry points of sparse COO tensors (docs/sparse.md): the no-grad ops are in
// rcuda/ops/sparse.h; these record a node whose inputs are the sparse tensor's values and, for
// the product, the dense operand.
#pragma once

#include "rcuda/ops/sparse.h"

namespace rcuda {

// a [n, m] sparse @ b [m, k] dense (ops::sparse_mm), differentiable in b and in a.values.
Tensor sparse_mm(const SparseCooTensor& a, const Tensor& b);
// The dense tensor of x (ops::to_dense), differentiable in x.values.
Tensor to_dense(const SparseCooTensor& x);

}  // namespace rcuda
