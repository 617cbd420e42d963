// Host-visible entry point of kernels/lu_permutation.cu (the CUDA solver's one kernel).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace rcuda::cuda {

// perm [count, rows] (int64) from getrf's 1-based pivots [count, k] (int32): the identity with
// rows j and pivots[j] - 1 swapped for j = 0..k-1 in order, one thread per matrix.
void launch_lu_permutation(const int32_t* pivots, int64_t* perm, int64_t count, int64_t k,
                           int64_t rows, cudaStream_t stream);

}  // namespace rcuda::cuda
