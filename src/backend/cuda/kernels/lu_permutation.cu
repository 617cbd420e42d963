// getrf's row interchanges as a permutation (Solver::pivots_to_permutation). The swaps are
// sequential within a matrix, so each thread takes one matrix of the batch.
#include "backend/cuda/kernels/lu_permutation.h"
#include "backend/cuda/runtime.h"

namespace rcuda::cuda {
namespace {

__global__ void lu_permutation_kernel(const int32_t* pivots, int64_t* perm, int64_t count,
                                      int64_t k, int64_t rows) {
  const int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (b >= count) return;
  int64_t* p = perm + b * rows;
  const int32_t* piv = pivots + b * k;
  for (int64_t r = 0; r < rows; ++r) p[r] = r;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t other = piv[j] - 1;
    const int64_t t = p[j];
    p[j] = p[other];
    p[other] = t;
  }
}

}  // namespace

void launch_lu_permutation(const int32_t* pivots, int64_t* perm, int64_t count, int64_t k,
                           int64_t rows, cudaStream_t stream) {
  constexpr int kThreads = 128;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  lu_permutation_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(pivots, perm, count,
                                                                                k, rows);
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace rcuda::cuda
