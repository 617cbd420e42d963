// Shared by the row-wise nn kernels (nn_layer_norm.cu, nn_cross_entropy.cu): the statistics
// type, 16-byte row loads, and reductions across the threads of one row, which is either a
// warp (blockDim.x == 32, blockDim.y rows per block) or a whole block (blockDim.y == 1).
//
// Note [Row reductions]
// A row's threads each reduce their own elements, then combine through warp shuffles to lane
// 0 and, for a block, through shared memory, where every thread combines the warps' partials
// in warp order. Every thread of the row thus ends with the same bits, computed in a fixed
// order: the same launch gives the same result on every run, and the values a kernel writes
// agree with the statistics it stores.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/runtime.h"
#include "backend/dispatch.h"

namespace rcuda::cuda::nn {

// float64 statistics and arithmetic for float64, float32 for float32 and the half types.
template <typename T>
using StatsType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Elements per 16-byte load of T.
template <typename T>
constexpr int kVector = 16 / static_cast<int>(sizeof(T));

// V elements of T from p (16-byte aligned when V == kVector<T>), converted to A.
template <typename T, int V, typename A>
__device__ __forceinline__ void load(const T* p, A (&out)[V]) {
  if constexpr (V == 1) {
    out[0] = backend::convert<A>(*p);
  } else {
    const Pack<T, V> pack = *reinterpret_cast<const Pack<T, V>*>(p);
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = backend::convert<A>(pack.v[j]);
  }
}

template <typename T, int V, typename A>
__device__ __forceinline__ void store(T* p, const A (&in)[V]) {
  if constexpr (V == 1) {
    *p = backend::convert<T>(in[0]);
  } else {
    Pack<T, V> pack;
#pragma unroll
    for (int j = 0; j < V; ++j) pack.v[j] = backend::convert<T>(in[j]);
    *reinterpret_cast<Pack<T, V>*>(p) = pack;
  }
}

// Combines `value` across the row's threads with op (Note [Row reductions]); every thread of
// the row returns the result. `shared` holds 32 values; the block must not have diverged.
template <typename Acc, typename Op>
__device__ Acc row_reduce(Acc value, Op op, Acc* shared) {
  constexpr int kWords = (sizeof(Acc) + 3) / 4;
  auto shuffle = [](const Acc& v, int lane_or_delta, bool down) {
    unsigned words[kWords];
    memcpy(words, &v, sizeof(Acc));
#pragma unroll
    for (int k = 0; k < kWords; ++k)
      words[k] = down ? __shfl_down_sync(0xffffffffu, words[k], lane_or_delta)
                      : __shfl_sync(0xffffffffu, words[k], lane_or_delta);
    Acc r;
    memcpy(&r, words, sizeof(Acc));
    return r;
  };
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2) value = op(value, shuffle(value, delta, true));
  value = shuffle(value, 0, false);  // lane 0's, to the whole warp
  if (blockDim.x == 32) return value;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) shared[warp] = value;
  __syncthreads();
  Acc total = shared[0];
  for (int k = 1; k < warps; ++k) total = op(total, shared[k]);
  __syncthreads();  // shared may be reused by the caller
  return total;
}

template <typename A, int N>
struct Sums {
  A v[N];
};

template <typename A, int N>
struct AddSums {
  __device__ Sums<A, N> operator()(const Sums<A, N>& a, const Sums<A, N>& b) const {
    Sums<A, N> r;
#pragma unroll
    for (int k = 0; k < N; ++k) r.v[k] = a.v[k] + b.v[k];
    return r;
  }
};

inline int floor_pow2(int64_t n) {
  int p = 1;
  while (p * 2 <= n && p < (1 << 20)) p *= 2;
  return p;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How rows of `length` elements map onto threads: a warp per row (4 rows per block) up to
// 1024 elements, else a block of 128..1024 threads per row, each with about 8 loads.
struct RowLaunch {
  dim3 grid, block;
};

inline RowLaunch row_launch(int64_t rows, int64_t length, int vector) {
  RowLaunch l;
  if (length <= 1024) {
    l.block = dim3(32, 4);
  } else {
    const int threads = std::min(1024, std::max(128, floor_pow2(length / (vector * 8))));
    l.block = dim3(threads, 1);
  }
  const int64_t blocks = ceil_div(rows, l.block.y);
  RCUDA_CHECK(blocks <= 0x7fffffff, ShapeError, "cuda nn kernels: ", rows, " rows are too many");
  l.grid = dim3(static_cast<unsigned>(blocks));
  return l;
}

inline bool aligned_to(const void* p, size_t bytes) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace rcuda::cuda::nn
