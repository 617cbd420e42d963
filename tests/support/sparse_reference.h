// Inputs for the sparse COO tests (tests/ops/test_sparse.cpp, tests/cuda/test_cuda_sparse.cpp).
#pragma once

#include <vector>

#include "support/reference.h"

namespace rcuda::test {

// A random [2, nnz] index list inside [rows, cols], repeats likely when nnz is large.
inline Tensor random_indices(int64_t rows, int64_t cols, int64_t nnz) {
  std::vector<double> idx(static_cast<size_t>(2 * nnz));
  for (int64_t i = 0; i < nnz; ++i) {
    idx[static_cast<size_t>(i)] = static_cast<double>(rng()() % static_cast<uint64_t>(rows));
    idx[static_cast<size_t>(nnz + i)] = static_cast<double>(rng()() % static_cast<uint64_t>(cols));
  }
  return tensor_of(idx, {2, nnz}, DType::Int64);
}

}  // namespace rcuda::test
