// index_add on the GPU: out[.., index[i], ..] += src[.., i, ..] with one thread per source
// element and an atomic add into out (out and src seen as [outer, size, inner] around dim;
// neighbouring threads take neighbouring inner elements, so reads are coalesced). Repeated
// indices therefore add in an unspecified order: floating results may differ in their last
// bits between runs (as torch's index_add_ on CUDA). An index outside [0, size) is skipped and
// reported: the host raises IndexError at its next synchronisation (Note [Deferred device errors]
// in backend/cuda/device_errors.h), so the launch itself never waits for the device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_errors.h"
#include "backend/cuda/kernels/atomic_narrow.cuh"
#include "backend/cuda/kernels/device_errors.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/dispatch.h"

namespace rcuda::cuda {
namespace {

template <typename T>
__device__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                std::is_same_v<T, int32_t>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {  // two's complement: wraps as the CPU
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<T, Half>) {
    atomicAdd(reinterpret_cast<__half*>(p), __ushort_as_half(v.bits));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    // No bfloat16 atomics before sm_80.
    atomic_update_narrow(reinterpret_cast<uint16_t*>(p), [v](uint16_t c) {
      return BFloat16(static_cast<float>(BFloat16::from_bits(c)) + static_cast<float>(v)).bits;
    });
#else
    atomicAdd(reinterpret_cast<__nv_bfloat16*>(p), __ushort_as_bfloat16(v.bits));
#endif
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v) atomic_update_narrow(reinterpret_cast<uint8_t*>(p), [](uint8_t) { return uint8_t{1}; });
  } else {  // uint8, int8, int16: wrap, as the CPU
    atomic_add_narrow_integer(p, v);
  }
}

template <typename T, typename Index>
__global__ void index_add_kernel(T* out, const T* src, const int64_t* index, Index size,
                                 Index count, Index inner, Index total, int64_t dim,
                                 DeviceErrorRecord* record, const char* op) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    const Index k = e % inner, rest = e / inner;
    const Index i = rest % count, o = rest / count;
    const int64_t target = index[i];
    if (target < 0 || target >= static_cast<int64_t>(size)) {  // skipped (see above)
      report_index_error(record, op, target, dim, static_cast<int64_t>(size));
      continue;
    }
    atomic_add(out + (static_cast<int64_t>(o) * size + target) * inner + k, src[e]);
  }
}

template <typename T>
void index_add_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t total = src.numel();
  if (total == 0) return;
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.shape()[d];
  const int64_t size = out.shape()[dim], count = index.numel();
  const int device = out.device().index;
  DeviceGuard guard(device);
  check_device_errors(device);
  DeviceErrorRecord* record = device_error_record(device);
  const int grid = blocks_for(total, device);
  cudaStream_t stream = current_stream(device);
  if (total < (int64_t{1} << 31) && out.numel() < (int64_t{1} << 31)) {
    index_add_kernel<T, uint32_t><<<grid, kThreadsPerBlock, 0, stream>>>(
        out.data<T>(), src.data<T>(), index.data<int64_t>(), static_cast<uint32_t>(size),
        static_cast<uint32_t>(count), static_cast<uint32_t>(inner), static_cast<uint32_t>(total),
        dim, record, "index_add");
  } else {
    index_add_kernel<T, int64_t><<<grid, kThreadsPerBlock, 0, stream>>>(
        out.data<T>(), src.data<T>(), index.data<int64_t>(), size, count, inner, total, dim, record,
        "index_add");
  }
  RCUDA_CUDA_CHECK_LAUNCH();
  check_device_errors_after_launch(device);
}

}  // namespace

void CudaBackend::index_add(const Tensor& out, int64_t dim, const Tensor& index,
                            const Tensor& src) {
  backend::dispatch_all(out.dtype(),
                        [&](auto tag) { index_add_typed<decltype(tag)>(out, dim, index, src); });
}

}  // namespace rcuda::cuda
