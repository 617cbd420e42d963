// fp8 casts with amax (Note [Float8 casts with amax] in rcuda/backend/backend.h) and the
// delayed-scaling update on the GPU, bit for bit the CPU's (the scalar rules of
// backend/float8_scaling.h).
//
// The cast reads [M,K] once in 32 x 32 tiles: each row of a tile is one warp's coalesced read and
// the row-major write; the transposed write goes through a shared-memory tile, so that it is
// coalesced along M too. amax is reduced per block and raised with one atomic per block (an
// atomicMax on the bits, which order non-negative floats as integers, NaN above infinity), so the
// grid is sized to fill the device rather than one block per tile: atomics to one address
// serialise.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/runtime.h"
#include "backend/dispatch.h"
#include "backend/float8_scaling.h"

namespace rcuda::cuda {
namespace {

using backend::ComputeType;
using backend::convert;

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // blockDim (32, 8): each thread takes 4 rows of a tile

__device__ __forceinline__ float warp_amax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v = backend::nan_winning_max(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Both cast kernels run 8 warps a block: the block's largest |value| goes into *amax with one
// atomic (`tid`: the thread's index in the block, warp by warp).
constexpr int kWarpsPerBlock = 8;
__device__ __forceinline__ void raise_block_amax(float seen, float* amax, int tid) {
  __shared__ float warp_seen[kWarpsPerBlock];
  seen = warp_amax(seen);
  if (tid % 32 == 0) warp_seen[tid / 32] = seen;
  __syncthreads();
  if (tid < 32) {
    float v = tid < kWarpsPerBlock ? warp_seen[tid] : 0.0f;
    v = warp_amax(v);
    if (tid == 0 && v != 0.0f) atomicMax(reinterpret_cast<int*>(amax), __float_as_int(v));
  }
}
static_assert(kTile * kRowsPerPass == 32 * kWarpsPerBlock, "the scalar kernel's block is 8 warps");

template <typename T, typename F8>
__global__ void float8_cast_kernel(const T* in, uint8_t* out, uint8_t* out_t, float* amax,
                                   const float* scale, int64_t m, int64_t k) {
  __shared__ uint8_t tile[kTile][kTile + 4];
  const float s = *scale;
  const int64_t tiles_k = (k + kTile - 1) / kTile;
  const int64_t tiles = ((m + kTile - 1) / kTile) * tiles_k;
  const int tx = threadIdx.x, ty = threadIdx.y;
  float seen = 0.0f;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t row0 = (t / tiles_k) * kTile, col0 = (t % tiles_k) * kTile;
    const int64_t j = col0 + tx;
#pragma unroll
    for (int r = ty; r < kTile; r += kRowsPerPass) {
      const int64_t i = row0 + r;
      uint8_t bits = 0;
      if (i < m && j < k) {
        const float v = static_cast<float>(convert<ComputeType<T>>(in[i * k + j]));
        seen = backend::nan_winning_max(seen, fabsf(v));
        bits = backend::saturating_float8_bits<F8>(v, s);
        if (out) out[i * k + j] = bits;
      }
      tile[r][tx] = bits;
    }
    if (out_t) {
      __syncthreads();
      const int64_t i = row0 + tx;
#pragma unroll
      for (int c = ty; c < kTile; c += kRowsPerPass) {
        const int64_t jj = col0 + c;
        if (jj < k && i < m) out_t[jj * m + i] = tile[tx][c];
      }
      __syncthreads();  // the tile is rewritten by the next iteration
    }
  }
  raise_block_amax(seen, amax, ty * kTile + tx);
}

// Each row's largest finite fp8 value, for up to kMaxScaleRows rows, passed by value (no copy
// from the host to wait for, and nothing a captured graph would have to keep alive).
constexpr int kMaxScaleRows = 8;
struct Float8Maxima {
  float v[kMaxScaleRows];
};

// The same cast four columns at a time, for K and M multiples of 4 and an input aligned for
// 4-element loads (what fp8 layers pass): 64 x 64 tiles, 256 threads as 16 column groups of 4 by
// 16 rows; each thread loads 4 elements with one vector access and stores their 4 bytes as one
// word, row-major and, through the shared tile, transposed. The scalar kernel above moves one
// element (1 to 4 bytes) per access, which leaves most of the memory bandwidth unused.
constexpr int kWideTile = 64;

template <typename T, typename F8>
__global__ void float8_cast_wide_kernel(const T* in, uint8_t* out, uint8_t* out_t, float* amax,
                                        const float* scale, int64_t m, int64_t k) {
  __shared__ uint32_t tile[kWideTile][kWideTile / 4 + 1];  // [row][column group], padded
  const float s = *scale;
  const int64_t tiles_k = (k + kWideTile - 1) / kWideTile;
  const int64_t tiles = ((m + kWideTile - 1) / kWideTile) * tiles_k;
  const int tid = static_cast<int>(threadIdx.x);
  const int group = tid % 16, lane_row = tid / 16;
  float seen = 0.0f;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t row0 = (t / tiles_k) * kWideTile, col0 = (t % tiles_k) * kWideTile;
    const int64_t j = col0 + 4 * group;
#pragma unroll
    for (int r = lane_row; r < kWideTile; r += 16) {
      const int64_t i = row0 + r;
      uint32_t word = 0;
      if (i < m && j < k) {
        const Pack<T, 4> v = *reinterpret_cast<const Pack<T, 4>*>(in + i * k + j);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float x = static_cast<float>(convert<ComputeType<T>>(v.v[e]));
          seen = backend::nan_winning_max(seen, fabsf(x));
          word |= static_cast<uint32_t>(backend::saturating_float8_bits<F8>(x, s)) << (8 * e);
        }
        if (out) *reinterpret_cast<uint32_t*>(out + i * k + j) = word;
      }
      tile[r][group] = word;
    }
    if (out_t) {
      __syncthreads();
      const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&tile[0][0]);
      constexpr int kRowBytes = 4 * (kWideTile / 4 + 1);
      const int64_t i = row0 + 4 * group;  // 4 rows of the input: 4 bytes of an out_t row
#pragma unroll
      for (int c = lane_row; c < kWideTile; c += 16) {
        const int64_t jj = col0 + c;
        if (jj < k && i < m) {
          uint32_t word = 0;
#pragma unroll
          for (int e = 0; e < 4; ++e)
            word |= static_cast<uint32_t>(bytes[(4 * group + e) * kRowBytes + c]) << (8 * e);
          *reinterpret_cast<uint32_t*>(out_t + jj * m + i) = word;
        }
      }
      __syncthreads();
    }
  }
  raise_block_amax(seen, amax, tid);
}

// One warp a row: the row's max, its new scale, then the roll (Note [Delayed scaling]).
// Scales are [R] vectors with a stride each (Note [Float8 casts with amax]).
struct ScaleVectors {
  const float* scale;
  float* new_scale;
  float* new_scale_inv;
  int64_t scale_stride, new_scale_stride, new_scale_inv_stride;
};

__global__ void float8_update_scales_kernel(float* history, ScaleVectors v, Float8Maxima fp8_max,
                                            int rows, int64_t length, float margin_factor) {
  const int r = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  if (r >= rows) return;
  float* h = history + r * length;
  float amax = 0.0f;
  for (int64_t i = lane; i < length; i += 32) amax = backend::nan_winning_max(amax, h[i]);
  amax = warp_amax(amax);
  if (lane == 0) {
    const float s =
        backend::delayed_scale(amax, v.scale[r * v.scale_stride], fp8_max.v[r], margin_factor);
    v.new_scale[r * v.new_scale_stride] = s;
    v.new_scale_inv[r * v.new_scale_inv_stride] = 1.0f / s;
  }
  // Roll from the end in chunks of 32: each chunk reads its sources before any lane writes, and
  // the chunk below only writes slots this chunk has already read.
  for (int64_t top = length - 1; top > 0; top -= 32) {
    const int64_t i = top - lane;
    const float v = i > 0 ? h[i - 1] : 0.0f;
    __syncwarp();
    if (i > 0) h[i] = v;
    __syncwarp();
  }
  if (lane == 0) h[0] = 0.0f;
}

}  // namespace

void CudaBackend::float8_cast(const Tensor& out, const Tensor& out_t, const Tensor& amax,
                              const Tensor& in, const Tensor& scale) {
  const int64_t m = in.size(0), k = in.size(1);
  if (m == 0 || k == 0) return;
  const int device = in.device().index;
  DeviceGuard guard(device);
  const int64_t tiles = ((m + kTile - 1) / kTile) * ((k + kTile - 1) / kTile);
  const int grid = blocks_for(tiles, device, 1, 8);
  const DType f8 = out.defined() ? out.dtype() : out_t.dtype();
  uint8_t* row = out.defined() ? static_cast<uint8_t*>(out.data_ptr()) : nullptr;
  uint8_t* col = out_t.defined() ? static_cast<uint8_t*>(out_t.data_ptr()) : nullptr;
  backend::dispatch_floating(in.dtype(), "float8_cast", [&](auto tag) {
    using T = decltype(tag);
    const bool wide = k % 4 == 0 && m % 4 == 0 &&
                      reinterpret_cast<uintptr_t>(in.data_ptr()) % sizeof(Pack<T, 4>) == 0;
    if (wide) {
      const int64_t wide_tiles =
          ((m + kWideTile - 1) / kWideTile) * ((k + kWideTile - 1) / kWideTile);
      const int wide_grid = blocks_for(wide_tiles, device, 1, 8);
      if (f8 == DType::Float8E4M3FN)
        float8_cast_wide_kernel<T, Float8E4M3FN><<<wide_grid, 256, 0, current_stream(device)>>>(
            in.data<T>(), row, col, amax.data<float>(), scale.data<float>(), m, k);
      else
        float8_cast_wide_kernel<T, Float8E5M2><<<wide_grid, 256, 0, current_stream(device)>>>(
            in.data<T>(), row, col, amax.data<float>(), scale.data<float>(), m, k);
      RCUDA_CUDA_CHECK_LAUNCH();
      return;
    }
    const dim3 block(kTile, kRowsPerPass);
    if (f8 == DType::Float8E4M3FN)
      float8_cast_kernel<T, Float8E4M3FN><<<grid, block, 0, current_stream(device)>>>(
          in.data<T>(), row, col, amax.data<float>(), scale.data<float>(), m, k);
    else
      float8_cast_kernel<T, Float8E5M2><<<grid, block, 0, current_stream(device)>>>(
          in.data<T>(), row, col, amax.data<float>(), scale.data<float>(), m, k);
    RCUDA_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::float8_update_scales(const Tensor& amax_history, const Tensor& scale,
                                       const Tensor& new_scale, const Tensor& new_scale_inv,
                                       const std::vector<double>& fp8_max, double margin) {
  const int rows = static_cast<int>(amax_history.size(0));
  RCUDA_CHECK(rows <= kMaxScaleRows, ValueError, "float8_update_scales: at most ", kMaxScaleRows,
              " rows, got ", rows);
  if (rows == 0) return;
  const int device = amax_history.device().index;
  DeviceGuard guard(device);
  Float8Maxima maxima{};
  for (int r = 0; r < rows; ++r) maxima.v[r] = static_cast<float>(fp8_max[static_cast<size_t>(r)]);
  const ScaleVectors vectors{scale.data<float>(),         new_scale.data<float>(),
                             new_scale_inv.data<float>(), scale.stride(0),
                             new_scale.stride(0),         new_scale_inv.stride(0)};
  float8_update_scales_kernel<<<1, 32 * rows, 0, current_stream(device)>>>(
      amax_history.data<float>(), vectors, maxima, rows, amax_history.size(1),
      static_cast<float>(std::exp2(margin)));
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace rcuda::cuda
