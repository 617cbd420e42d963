// cuDNN plumbing for the CUDA backend's layers (convolution, normalisation, RNN): the status
// check, a handle per thread and device bound to the current stream, and workspace from the
// stream-ordered pool. docs/convolution.md says which cuDNN API each layer uses and why.
#pragma once

#include <cudnn.h>

#include <cstddef>

#include "rcuda/tensor/tensor.h"

namespace rcuda::cuda {

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file,
                                    int line);

// Throws CudaError naming the failing call, the cuDNN status and the source location.
#define RCUDA_CUDNN_CHECK(call)                                                         \
  do {                                                                                  \
    const cudnnStatus_t rcuda_cudnn_status_ = (call);                                   \
    if (rcuda_cudnn_status_ != CUDNN_STATUS_SUCCESS)                                    \
      ::rcuda::cuda::throw_cudnn_error(rcuda_cudnn_status_, #call, __FILE__, __LINE__); \
  } while (0)

// The calling thread's cuDNN handle for `device`, bound to the device's current stream.
// A cuDNN handle holds its stream (cudnnSetStream), so threads with different current streams
// cannot share one: each thread gets its own per device, created on first use and kept for
// the thread's life (Note [cuDNN handles]).
cudnnHandle_t cudnn_handle(int device);

// `bytes` of scratch on `device` from the stream-ordered pool (an undefined tensor for 0): the
// memory returns to the pool when the tensor dies, after the work queued on the stream, so
// reuse is free and graph capture works.
Tensor cudnn_workspace(int device, size_t bytes);

}  // namespace rcuda::cuda
