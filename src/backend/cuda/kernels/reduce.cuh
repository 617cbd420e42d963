// The CUDA reduction engine shared by reduce.cu (reduce, var) and arg_reduce.cu. Semantics
// match the CPU backend (src/backend/cpu/reduce.cpp); the layout is the CPU's, Note [Reduction
// layout] in backend/reduction_layout.h: kept dims (one output each) and reduced dims, each
// coalesced on the host, then copied into the fixed-size Layout that kernels take by value.
//
// Note [CUDA reduction strategy]
// - Row mode (the innermost reduced dim has stride 1): a group of threads along x shares one
//   output; 32 lanes (a warp, 16 outputs per block) for short rows, 256 or 512 for long ones.
//   A single contiguous reduced run is read 16 bytes at a time, 4 loads in flight per thread.
// - Column mode (anything else, e.g. dim 0 of a row-major matrix): one output per thread along
//   x, so a warp reads 32 neighbouring outputs' elements at once (coalesced); threads along y
//   split the reduced range and meet in shared memory.
// - Few outputs: grid.y splits the reduced range too; each block writes a partial to a
//   workspace and a second kernel combines a row of partials in a fixed order.
// Every combine is a fixed tree or a fixed sequence, never an atomic: the same launch gives
// the same bits on every run. Accumulators: float for float32 and the half types, double for
// float64, wrapping uint64 for integers (Note [Compute types]).
//
// An op (the device half of a reduction) provides
//   using Acc; Acc identity(); Acc reduce(Acc, T x, int64_t index); Acc combine(Acc, Acc);
//   void store(Acc, int64_t out0_offset, int64_t out1_offset);
// reduce() sees one thread's elements in increasing index order; combine() may see partials in
// any order (arg_reduce compares indices to keep the first).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/runtime.h"
#include "backend/dispatch.h"
#include "backend/reduction_layout.h"
#include "rcuda/core/error.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::cuda::reduction {

// Accumulator of sums on the GPU: float for float32 and the half types (a tree order keeps
// float32 sums accurate), double for float64, wrapping uint64 for integers and bool.
template <typename T>
using GpuAccumulateType =
    std::conditional_t<std::is_same_v<T, double>, double,
                       std::conditional_t<backend::kIsFloating<T>, float, uint64_t>>;

template <typename C>
__host__ __device__ constexpr bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return v != v;
  else
    return false;
}

// Passed by value to every kernel; strides in elements.
struct Layout {
  int kept_ndim = 0, reduced_ndim = 0;
  int64_t kept_sizes[kMaxDims];
  int64_t kept_in_strides[kMaxDims];
  int64_t kept_out_strides[2][kMaxDims];  // values and (for arg_reduce) indices
  int64_t reduced_sizes[kMaxDims];
  int64_t reduced_strides[kMaxDims];
  FastDivisor reduced_divisors[kMaxDims];  // Note [Division by a dim's size] in launch.cuh
  int64_t num_outputs = 1, reduced_numel = 1;
  __host__ __device__ bool reduced_is_contiguous() const {
    return reduced_ndim == 1 && reduced_strides[0] == 1;
  }
};

// backend::make_reduction_layout, in arrays a kernel can take by value.
inline Layout make_layout(const Tensor& in, const Tensor& out0, const Tensor& out1) {
  const backend::ReductionLayout r = backend::make_reduction_layout(in, out0, out1);
  RCUDA_CHECK(r.kept_sizes.size() <= kMaxDims && r.reduced_sizes.size() <= kMaxDims, ShapeError,
              "cuda reduction: input of shape ", shape_str(in.shape()), " has more than ", kMaxDims,
              " kept or reduced dims that cannot be merged; make it contiguous first");
  Layout l;
  l.kept_ndim = static_cast<int>(r.kept_sizes.size());
  l.reduced_ndim = static_cast<int>(r.reduced_sizes.size());
  l.num_outputs = r.num_outputs;
  l.reduced_numel = r.reduced_numel;
  for (int d = 0; d < l.kept_ndim; ++d) {
    l.kept_sizes[d] = r.kept_sizes[d];
    l.kept_in_strides[d] = r.kept_in_strides[d];
    l.kept_out_strides[0][d] = r.kept_out_strides[0][d];
    l.kept_out_strides[1][d] = r.kept_out_strides[1][d];
  }
  for (int d = 0; d < l.reduced_ndim; ++d) {
    l.reduced_sizes[d] = r.reduced_sizes[d];
    l.reduced_strides[d] = r.reduced_strides[d];
    if (r.reduced_sizes[d] >= 1 && l.reduced_numel < kFastDivisionLimit)
      l.reduced_divisors[d] = FastDivisor(static_cast<uint32_t>(r.reduced_sizes[d]));
  }
  return l;
}

struct KeptOffsets {
  int64_t in = 0, out0 = 0, out1 = 0;
};

__device__ inline KeptOffsets kept_offsets(const Layout& l, int64_t output) {
  KeptOffsets k;
  for (int d = l.kept_ndim - 1; d >= 0; --d) {
    const int64_t size = l.kept_sizes[d];
    const int64_t i = output % size;
    output /= size;
    k.in += i * l.kept_in_strides[d];
    k.out0 += i * l.kept_out_strides[0][d];
    k.out1 += i * l.kept_out_strides[1][d];
  }
  return k;
}

// Offset of reduced element r (row-major over the reduced dims); division by multiplication
// below 2^31 elements, 32-bit division below 2^32.
__device__ inline int64_t reduced_offset(const Layout& l, int64_t r) {
  if (l.reduced_ndim == 1) return r * l.reduced_strides[0];
  int64_t offset = 0;
  if (l.reduced_numel < kFastDivisionLimit) {
    uint32_t rem = static_cast<uint32_t>(r);
    for (int d = l.reduced_ndim - 1; d >= 0; --d) {
      const uint32_t quotient = l.reduced_divisors[d].divide(rem);
      offset += static_cast<int64_t>(rem - quotient * l.reduced_divisors[d].divisor) *
                l.reduced_strides[d];
      rem = quotient;
    }
    return offset;
  }
  if (l.reduced_numel <= int64_t{0xffffffff}) {
    uint32_t rem = static_cast<uint32_t>(r);
    for (int d = l.reduced_ndim - 1; d >= 0; --d) {
      const uint32_t size = static_cast<uint32_t>(l.reduced_sizes[d]);
      offset += static_cast<int64_t>(rem % size) * l.reduced_strides[d];
      rem /= size;
    }
    return offset;
  }
  for (int d = l.reduced_ndim - 1; d >= 0; --d) {
    offset += (r % l.reduced_sizes[d]) * l.reduced_strides[d];
    r /= l.reduced_sizes[d];
  }
  return offset;
}

// The lines of a tensor along one dim (softmax, cumsum); strides in elements.
struct Lines {
  int ndim = 0;  // the other dims, merged where both tensors allow
  int64_t sizes[kMaxDims];
  int64_t in_strides[kMaxDims];
  int64_t out_strides[kMaxDims];
  int64_t count = 1, length = 1, in_stride = 0, out_stride = 0;  // along the dim
};

inline Lines make_lines(const Tensor& out, const Tensor& in, int64_t dim) {
  Lines l;
  if (in.dim() > 0) {
    l.length = in.shape()[dim];
    l.in_stride = in.strides()[dim];
    l.out_stride = out.strides()[dim];
  }
  for (int64_t d = 0; d < in.dim(); ++d) {
    const int64_t size = in.shape()[d];
    if (d == dim || size == 1) continue;
    if (l.ndim > 0 && l.in_strides[l.ndim - 1] == in.strides()[d] * size &&
        l.out_strides[l.ndim - 1] == out.strides()[d] * size) {
      l.sizes[l.ndim - 1] *= size;
      l.in_strides[l.ndim - 1] = in.strides()[d];
      l.out_strides[l.ndim - 1] = out.strides()[d];
      continue;
    }
    RCUDA_CHECK(l.ndim < kMaxDims, ShapeError, "cuda softmax/cumsum: input of shape ",
                shape_str(in.shape()), " has more than ", kMaxDims,
                " dims that cannot be merged; make it contiguous first");
    l.sizes[l.ndim] = size;
    l.in_strides[l.ndim] = in.strides()[d];
    l.out_strides[l.ndim] = out.strides()[d];
    ++l.ndim;
  }
  for (int d = 0; d < l.ndim; ++d) l.count *= l.sizes[d];
  return l;
}

__device__ inline void line_offsets(const Lines& l, int64_t line, int64_t& in, int64_t& out) {
  in = out = 0;
  for (int d = l.ndim - 1; d >= 0; --d) {
    const int64_t i = line % l.sizes[d];
    line /= l.sizes[d];
    in += i * l.in_strides[d];
    out += i * l.out_strides[d];
  }
}

// Shuffles any trivially copyable accumulator word by word.
template <typename Acc>
__device__ __forceinline__ Acc shuffle_down(const Acc& value, int delta) {
  constexpr int kWords = (sizeof(Acc) + 3) / 4;
  unsigned words[kWords] = {};
  memcpy(words, &value, sizeof(Acc));
#pragma unroll
  for (int k = 0; k < kWords; ++k) words[k] = __shfl_down_sync(0xffffffffu, words[k], delta);
  Acc result;
  memcpy(&result, words, sizeof(Acc));
  return result;
}

// Lane 0 gets the combination of the warp's 32 accumulators (a fixed tree).
template <typename Op, typename Acc>
__device__ __forceinline__ Acc warp_reduce(const Op& op, Acc acc) {
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2) acc = op.combine(acc, shuffle_down(acc, delta));
  return acc;
}

// Combines across threadIdx.x (a multiple of 32; blockDim.y == 1 when more than 32); the
// result is valid in threadIdx.x == 0. `shared` holds 32 accumulators.
template <typename Op, typename Acc>
__device__ Acc reduce_across_x(const Op& op, Acc acc, Acc* shared) {
  acc = warp_reduce(op, acc);
  if (blockDim.x == 32) return acc;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : op.identity();
    acc = warp_reduce(op, acc);
  }
  return acc;
}

// Elements first, first + step, ... below n of a row at `base` with any reduced layout; four
// loads are issued before the first is used.
template <typename T, typename Op, typename Acc>
__device__ Acc reduce_strided(const Op& op, Acc acc, const Layout& l, const T* base, int64_t first,
                              int64_t step, int64_t n) {
  int64_t r = first;
  for (; r + 3 * step < n; r += 4 * step) {
    T v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = base[reduced_offset(l, r + u * step)];
#pragma unroll
    for (int u = 0; u < 4; ++u) acc = op.reduce(acc, v[u], r + u * step);
  }
  for (; r < n; r += step) acc = op.reduce(acc, base[reduced_offset(l, r)], r);
  return acc;
}

// A contiguous row of n elements, lane `lane` of `lanes`: a scalar head up to the first
// 16-byte boundary, 16-byte packs (4 in flight), a scalar tail. Indices increase per thread.
template <typename T, typename Op, typename Acc>
__device__ Acc reduce_contiguous(const Op& op, Acc acc, const T* row, int64_t n, int64_t lane,
                                 int64_t lanes) {
  constexpr int V = 16 / sizeof(T);
  using P = Pack<T, V>;
  const auto misalignment = reinterpret_cast<uintptr_t>(row) & 15u;
  const int64_t aligned_start = static_cast<int64_t>(((16u - misalignment) & 15u) / sizeof(T));
  const int64_t head = aligned_start < n ? aligned_start : n;
  for (int64_t i = lane; i < head; i += lanes) acc = op.reduce(acc, row[i], i);
  const P* packs = reinterpret_cast<const P*>(row + head);
  const int64_t vectors = (n - head) / V;
  int64_t v = lane;
  for (; v + 3 * lanes < vectors; v += 4 * lanes) {
    P p[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) p[u] = packs[v + u * lanes];
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int j = 0; j < V; ++j) acc = op.reduce(acc, p[u].v[j], head + (v + u * lanes) * V + j);
  }
  for (; v < vectors; v += lanes) {
    const P p = packs[v];
#pragma unroll
    for (int j = 0; j < V; ++j) acc = op.reduce(acc, p.v[j], head + v * V + j);
  }
  for (int64_t i = head + vectors * V + lane; i < n; i += lanes) acc = op.reduce(acc, row[i], i);
  return acc;
}

// Row mode: blockDim.x lanes per output, blockDim.y outputs per block, grid.y splits a row.
// With grid.y > 1 each block writes partials[output * grid.y + blockIdx.y].
template <typename T, typename Op>
__global__ void __launch_bounds__(512)
    reduce_rows_kernel(Layout l, const T* in, Op op, typename Op::Acc* partials) {
  using Acc = typename Op::Acc;
  __shared__ alignas(16) unsigned char shared_bytes[32 * sizeof(Acc)];
  const int64_t output = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const int64_t lane = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t lanes = static_cast<int64_t>(gridDim.y) * blockDim.x;
  Acc acc = op.identity();
  const bool active = output < l.num_outputs;
  if (active) {
    const T* row = in + kept_offsets(l, output).in;
    acc = l.reduced_is_contiguous() ? reduce_contiguous(op, acc, row, l.reduced_numel, lane, lanes)
                                    : reduce_strided(op, acc, l, row, lane, lanes, l.reduced_numel);
  }
  acc = reduce_across_x(op, acc, reinterpret_cast<Acc*>(shared_bytes));
  if (!active || threadIdx.x != 0) return;
  if (gridDim.y == 1) {
    const KeptOffsets k = kept_offsets(l, output);
    op.store(acc, k.out0, k.out1);
  } else {
    partials[output * gridDim.y + blockIdx.y] = acc;
  }
}

// Column mode: one output per thread along x; threads along y (a power of two) and grid.y
// split the reduced range; blockDim.x * blockDim.y accumulators of dynamic shared memory.
template <typename T, typename Op>
__global__ void __launch_bounds__(512)
    reduce_columns_kernel(Layout l, const T* in, Op op, typename Op::Acc* partials) {
  using Acc = typename Op::Acc;
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  Acc* shared = reinterpret_cast<Acc*>(dynamic_shared);
  const int64_t output = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  const int64_t step = static_cast<int64_t>(gridDim.y) * blockDim.y;
  const bool active = output < l.num_outputs;
  Acc acc = op.identity();
  if (active)
    acc = reduce_strided(op, acc, l, in + kept_offsets(l, output).in, first, step, l.reduced_numel);
  if (blockDim.y > 1) {
    const int x = threadIdx.x, bx = blockDim.x;
    shared[threadIdx.y * bx + x] = acc;
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s /= 2) {
      if (threadIdx.y < s)
        shared[threadIdx.y * bx + x] =
            op.combine(shared[threadIdx.y * bx + x], shared[(threadIdx.y + s) * bx + x]);
      __syncthreads();
    }
    acc = shared[x];
  }
  if (!active || threadIdx.y != 0) return;
  if (gridDim.y == 1) {
    const KeptOffsets k = kept_offsets(l, output);
    op.store(acc, k.out0, k.out1);
  } else {
    partials[output * gridDim.y + blockIdx.y] = acc;
  }
}

// One warp per output combines its `splits` partials (lane-strided, then a fixed tree).
template <typename Op>
__global__ void combine_partials_kernel(Layout l, Op op, const typename Op::Acc* partials,
                                        int splits) {
  using Acc = typename Op::Acc;
  const int64_t output = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (output >= l.num_outputs) return;  // uniform across the warp
  Acc acc = op.identity();
  for (int s = threadIdx.x; s < splits; s += 32)
    acc = op.combine(acc, partials[output * splits + s]);
  acc = warp_reduce(op, acc);
  if (threadIdx.x != 0) return;
  const KeptOffsets k = kept_offsets(l, output);
  op.store(acc, k.out0, k.out1);
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int floor_pow2(int64_t n) {
  int p = 1;
  while (p * 2 <= n && p < (1 << 20)) p *= 2;
  return p;
}

// Runs op over the layout of `in` (Note [CUDA reduction strategy]).
template <typename T, typename Op>
void run_reduction(const Layout& l, const Tensor& in, const Op& op) {
  using Acc = typename Op::Acc;
  const int64_t outputs = l.num_outputs, n = l.reduced_numel;
  if (outputs == 0) return;
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const int64_t sms = multiprocessors(device);
  const T* data = in.data<T>();
  const bool row_mode = l.reduced_strides[l.reduced_ndim - 1] == 1 && n >= 32;

  dim3 block;
  int64_t grid_x = 1;
  size_t shared = 0;
  int64_t splits = 1;
  if (row_mode) {
    if (n <= 1024 && outputs >= 16 * sms) {
      block = dim3(32, 16);
    } else {
      block = dim3(n >= 16384 ? 512 : 256, 1);
      const int64_t target = sms * (2048 / block.x);  // blocks resident at once
      // At least 16 elements per thread before splitting a row over blocks (four 16-byte
      // loads of float32). With 64, a convolution's bias gradient (64 channels of 73,728
      // elements) ran on 128 blocks of the H200's 132 multiprocessors, a quarter of the
      // threads they hold, and took 34 us instead of a few.
      if (outputs < target)
        splits = std::max<int64_t>(1, std::min(ceil_div(target, outputs), n / (block.x * 16)));
    }
    grid_x = ceil_div(outputs, block.y);
  } else {
    const int bx = outputs >= 256 ? 256 : outputs >= 128 ? 128 : outputs >= 64 ? 64 : 32;
    const int by = std::min(512 / bx, floor_pow2(std::max<int64_t>(1, n / 16)));
    block = dim3(bx, by);
    shared = static_cast<size_t>(bx) * by * sizeof(Acc);
    const int64_t blocks_x = ceil_div(outputs, bx);
    const int64_t target = sms * (2048 / (bx * by));
    if (blocks_x < target)
      splits = std::max<int64_t>(1, std::min(ceil_div(target, blocks_x), n / (by * 32)));
    grid_x = blocks_x;
  }
  splits = std::min<int64_t>(splits, 1024);
  RCUDA_CHECK(grid_x <= 0x7fffffff, ShapeError, "cuda reduction: ", outputs,
              " outputs are too many for one launch");
  const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(splits));

  Tensor workspace;
  Acc* partials = nullptr;
  if (splits > 1) {
    workspace = Tensor::empty({outputs * splits * static_cast<int64_t>(sizeof(Acc))}, DType::UInt8,
                              in.device());
    partials = static_cast<Acc*>(workspace.data_ptr());
  }
  // Through the driver (Note [Launching through the driver] in backend/cuda/kernel_launch.h).
  if (row_mode) {
    static const KernelLauncher launcher(&reduce_rows_kernel<T, Op>);
    launcher.launch(device, grid, block, 0, stream, l, data, op, partials);
  } else {
    static const KernelLauncher launcher(&reduce_columns_kernel<T, Op>);
    launcher.launch(device, grid, block, shared, stream, l, data, op, partials);
  }
  if (splits > 1) {
    static const KernelLauncher launcher(&combine_partials_kernel<Op>);
    launcher.launch(device, static_cast<unsigned>(ceil_div(outputs, 8)), dim3(32, 8), 0, stream, l,
                    op, partials, static_cast<int>(splits));
  }
  // The workspace goes back to the stream-ordered pool after the kernels that use it.
}

}  // namespace rcuda::cuda::reduction
