// One cublasLtMatmul problem and its runner, shared by the CUDA backend's products:
// cublaslt_gemm.cpp (gemm, linear and its weight gradient) and cublaslt_fp8.cpp (scaled_gemm)
// describe a problem; cublaslt.cpp plans it (Note [cuBLASLt plans]) and runs it.
#pragma once

#include <cstdint>

#include "backend/cuda/cublaslt.h"

namespace rcuda::cuda {

// A matrix as cuBLASLt reads it: column-major rows x cols with leading dimension ld (for an
// operand: as stored, i.e. before `op` is applied), matrices batch_stride elements apart.
struct LtMatrix {
  cudaDataType_t type = CUDA_R_32F;
  cublasOperation_t op = CUBLAS_OP_N;  // operands only
  int64_t rows = 0, cols = 0, ld = 1, batch_stride = 0;
  void* data = nullptr;
};

// D = alpha * scale_a * scale_b * op(A) op(B) + beta * D, in place (C is D).
struct LtProblem {
  int device = 0;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale_type = CUDA_R_32F;
  LtMatrix a, b, d;
  int64_t batch = 1;
  const void* alpha = nullptr;  // host values of scale_type
  const void* beta = nullptr;
  const void* scale_a = nullptr;  // fp8 only: device float32 scales of A and B
  const void* scale_b = nullptr;
  const void* bias = nullptr;  // D's type, one per row of D (cuBLASLt's bias epilogue), or none
  // BIAS adds bias; BGRADB writes into it the sums of B over K, one per column of D.
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

// Runs p on the device's current stream, the batch in chunks of cuBLASLt's largest batch count
// (a fused bias-gradient epilogue only in one chunk). False, having run nothing, when the
// heuristic has no algorithm for a fused bias-gradient epilogue (BGRADB); CudaError when it has
// none for any other problem.
bool lt_matmul(const LtProblem& p);

// ValueError naming op when a size passes cuBLASLt's 32-bit limit.
void check_sizes(const char* op, int64_t m, int64_t n, int64_t k);

}  // namespace rcuda::cuda
