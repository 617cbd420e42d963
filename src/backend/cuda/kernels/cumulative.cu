// cumulative and cumulative_backward on the GPU: one thread per row running the formulas the CPU
// backend shares (backend/row_scan.h). A row is a sequential dependency; the rows these ops see
// in training (cummax over a sequence, cumprod of a few hundred factors) are short, so one
// thread each keeps the result identical to the CPU's without a scan operator per op.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/dispatch.h"
#include "backend/row_scan.h"

namespace rcuda::cuda {
namespace {

template <typename T>
__global__ void scan_rows_kernel(Backend::CumulativeOp op, T* out, int64_t* indices, const T* in,
                                 int64_t rows, int64_t n) {
  const int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (r >= rows) return;
  backend::scan_row<T>(op, out + r * n, indices ? indices + r * n : nullptr, in + r * n, n);
}

template <typename T>
__global__ void scan_rows_backward_kernel(Backend::CumulativeOp op, T* grad_in, const T* grad_out,
                                          const T* in, const T* out, int64_t rows, int64_t n) {
  const int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (r >= rows) return;
  backend::scan_row_backward<T>(op, grad_in + r * n, grad_out + r * n, in + r * n, out + r * n, n);
}

constexpr int kRowThreads = 128;

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowThreads - 1) / kRowThreads);
}

}  // namespace

void CudaBackend::cumulative(CumulativeOp op, const Tensor& out, const Tensor& indices,
                             const Tensor& in) {
  const int64_t rows = in.shape()[0], n = in.shape()[1];
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  backend::dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    scan_rows_kernel<T><<<row_blocks(rows), kRowThreads, 0, stream>>>(
        op, out.data<T>(), indices.defined() ? indices.data<int64_t>() : nullptr, in.data<T>(),
        rows, n);
  });
  RCUDA_CUDA_CHECK_LAUNCH();
}

void CudaBackend::cumulative_backward(CumulativeOp op, const Tensor& grad_in,
                                      const Tensor& grad_out, const Tensor& in, const Tensor& out) {
  const int64_t rows = in.shape()[0], n = in.shape()[1];
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  backend::dispatch_floating(in.dtype(), "cumulative_backward", [&](auto tag) {
    using T = decltype(tag);
    scan_rows_backward_kernel<T><<<row_blocks(rows), kRowThreads, 0, stream>>>(
        op, grad_in.data<T>(), grad_out.data<T>(), in.data<T>(), out.data<T>(), rows, n);
  });
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace rcuda::cuda
