// dropout and masked_scale (its backward) on the GPU. A thread takes one Philox block, which
// decides 4 consecutive elements (Note [Dropout mask] in backend/dropout_mask.h, the CPU's
// mapping exactly, so a seed gives the same mask on both backends), and reads and writes those
// 4 elements with one vector access each where the addresses allow.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_updatable.cuh"
#include "backend/dispatch.h"
#include "backend/dropout_mask.h"
#include "rcuda/core/philox.h"

namespace rcuda::cuda {
namespace {

using backend::ComputeType;
using backend::convert;

// 4 mask bytes as one 32-bit word.
struct alignas(4) MaskPack {
  bool v[4];
};

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, bool* mask, int64_t n, philox::RoundKeys keys,
                               uint64_t offset, uint32_t threshold, ComputeType<T> scale,
                               bool vector) {
  using C = ComputeType<T>;
  const int64_t blocks = (n + 3) / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
       b += stride) {
    const philox::Uint4 r = philox::detail::block(keys, offset, static_cast<uint64_t>(b));
    const uint32_t lanes[4] = {r.x, r.y, r.z, r.w};
    const int64_t first = b * 4;
    if (vector && first + 4 <= n) {
      const Pack<T, 4> in = reinterpret_cast<const Pack<T, 4>*>(x)[b];
      Pack<T, 4> out;
      MaskPack keep;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        keep.v[k] = backend::dropout_keeps(lanes[k], threshold);
        out.v[k] = convert<T>(convert<C>(in.v[k]) * (keep.v[k] ? scale : C(0)));
      }
      reinterpret_cast<Pack<T, 4>*>(y)[b] = out;
      reinterpret_cast<MaskPack*>(mask)[b] = keep;
    } else {
      for (int k = 0; k < 4 && first + k < n; ++k) {
        const bool kept = backend::dropout_keeps(lanes[k], threshold);
        mask[first + k] = kept;
        y[first + k] = convert<T>(convert<C>(x[first + k]) * (kept ? scale : C(0)));
      }
    }
  }
}

template <typename T>
__global__ void masked_scale_kernel(const T* x, const bool* mask, T* y, int64_t n,
                                    ComputeType<T> scale, bool vector) {
  using C = ComputeType<T>;
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const int64_t first = g * 4;
    if (vector && first + 4 <= n) {
      const Pack<T, 4> in = reinterpret_cast<const Pack<T, 4>*>(x)[g];
      const MaskPack keep = reinterpret_cast<const MaskPack*>(mask)[g];
      Pack<T, 4> out;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        out.v[k] = convert<T>(convert<C>(in.v[k]) * (keep.v[k] ? scale : C(0)));
      reinterpret_cast<Pack<T, 4>*>(y)[g] = out;
    } else {
      for (int64_t i = first; i < first + 4 && i < n; ++i)
        y[i] = convert<T>(convert<C>(x[i]) * (mask[i] ? scale : C(0)));
    }
  }
}

template <typename T>
bool vector_access(const void* x, const void* y, const void* mask) {
  constexpr uintptr_t kPack = sizeof(Pack<T, 4>);
  return reinterpret_cast<uintptr_t>(x) % kPack == 0 &&
         reinterpret_cast<uintptr_t>(y) % kPack == 0 && reinterpret_cast<uintptr_t>(mask) % 4 == 0;
}

template <typename T>
void dropout_typed(const Tensor& out, const Tensor& mask, const Tensor& in, double p, uint64_t seed,
                   uint64_t offset) {
  const int64_t n = in.numel();
  if (n == 0) return;
  const int device = in.device().index;
  DeviceGuard guard(device);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  bool* m = mask.data<bool>();
  const int grid = blocks_for((n + 3) / 4, device);
  // Updatable: a graph replay draws its next mask (Note [Updatable launches]).
  launch_updatable(dropout_kernel<T>, grid, kThreadsPerBlock, 0, current_stream(device), x, y, m, n,
                   philox::detail::seed_keys(seed), offset, backend::dropout_threshold(p),
                   static_cast<ComputeType<T>>(1.0 / (1.0 - p)), vector_access<T>(x, y, m));
}

template <typename T>
void masked_scale_typed(const Tensor& out, const Tensor& in, const Tensor& mask, double scale) {
  const int64_t n = in.numel();
  if (n == 0) return;
  const int device = in.device().index;
  DeviceGuard guard(device);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const bool* m = mask.data<bool>();
  const int grid = blocks_for((n + 3) / 4, device);
  masked_scale_kernel<T><<<grid, kThreadsPerBlock, 0, current_stream(device)>>>(
      x, m, y, n, static_cast<ComputeType<T>>(scale), vector_access<T>(x, y, m));
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::dropout(const Tensor& out, const Tensor& mask, const Tensor& in, double p,
                          uint64_t seed, uint64_t offset) {
  backend::dispatch_floating(in.dtype(), "dropout", [&](auto tag) {
    dropout_typed<decltype(tag)>(out, mask, in, p, seed, offset);
  });
}

void CudaBackend::masked_scale(const Tensor& out, const Tensor& in, const Tensor& mask,
                               double scale) {
  backend::dispatch_floating(in.dtype(), "dropout_backward", [&](auto tag) {
    masked_scale_typed<decltype(tag)>(out, in, mask, scale);
  });
}

}  // namespace rcuda::cuda
