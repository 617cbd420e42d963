// cuBLASLt plumbing for the CUDA backend's matrix products (cublaslt.cpp): the status check and
// one handle per device. Other files that call cuBLASLt (fused epilogues, say) use these too.
#pragma once

#include <cublasLt.h>

#include "rcuda/core/error.h"

namespace rcuda::cuda {

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

// Throws CudaError naming the failing call, the cuBLAS status and the source location.
#define RCUDA_CUBLAS_CHECK(call)                                                          \
  do {                                                                                    \
    const cublasStatus_t rcuda_cublas_status_ = (call);                                   \
    if (rcuda_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                    \
      ::rcuda::cuda::throw_cublas_error(rcuda_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

// The device's cuBLASLt handle: created on first use (thread-safe), kept for the process.
// cuBLASLt takes the stream per call, so threads with different current streams share it.
cublasLtHandle_t lt_handle(int device);

}  // namespace rcuda::cuda
