// softmax / log_softmax along any dim on the GPU. Semantics match the CPU backend
// (src/backend/cpu/softmax_cumsum.cpp): max-subtracted, computed in float for the half types,
// a NaN anywhere turns its line to NaN, as does a line whose max is -inf or +inf.
//
// Note [Online softmax]
// One pass over a line keeps a running (max, sum of exp(x - max)) pair, rescaling the sum when
// the max grows; pairs from different threads combine the same way. A second pass writes
// exp(x - max) / sum (or x - max - log(sum)); it re-reads a line that was just read, mostly
// from L2, so memory sees about one read and one write. -inf elements contribute 0 while the
// max is still -inf (the CPU's exp(-inf - max) once the max is known); NaN skips the max
// (fmax) and poisons the sum, as on the CPU.
//
// Lines along a stride-1 dim ("rows") go to softmax_rows_kernel: a warp per row up to 1024
// elements, a block per row beyond, 16-byte accesses when every row is aligned. Other lines go
// to softmax_lines_kernel: a thread per line along x (neighbouring lines are neighbours in
// memory, so warps read coalesced) and threads along y splitting the line.
#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/reduce.cuh"

namespace rcuda::cuda {
namespace {

using backend::convert;
using reduction::ceil_div;
using reduction::floor_pow2;
using reduction::GpuAccumulateType;
using reduction::line_offsets;
using reduction::Lines;
using reduction::make_lines;

template <typename A>
struct Online {
  A max, sum;
};

template <typename A>
__device__ __forceinline__ A rescaled(A sum, A from, A to) {
  return from == to ? sum : sum * exp(from - to);
}

template <typename A>
__device__ __forceinline__ A exp_shifted(A x, A max) {
  return x == A(-INFINITY) ? A(0) : exp(x - max);
}

// The engine's op interface (reduce.cuh) for reduce_across_x.
template <typename A>
struct OnlineCombine {
  using Acc = Online<A>;
  __device__ Acc identity() const { return {A(-INFINITY), A(0)}; }
  __device__ Acc combine(Acc a, Acc b) const {
    const A m = fmax(a.max, b.max);
    return {m, rescaled(a.sum, a.max, m) + rescaled(b.sum, b.max, m)};
  }
};

// Adds n values to the running pair: one rescale for all of them.
template <typename A, int N>
__device__ __forceinline__ Online<A> add_values(Online<A> s, const A (&x)[N]) {
  A m = s.max;
#pragma unroll
  for (int j = 0; j < N; ++j) m = fmax(m, x[j]);
  A sum = rescaled(s.sum, s.max, m);
#pragma unroll
  for (int j = 0; j < N; ++j) sum += exp_shifted(x[j], m);
  return {m, sum};
}

template <typename T, typename A>
__device__ __forceinline__ T softmax_value(A x, Online<A> s, A scale, bool log) {
  return convert<T>(log ? (x - s.max) - scale : exp(x - s.max) * scale);
}

// First pass over a row: 16-byte packs (vectorised) or single elements, 4 loads in flight.
template <typename T, typename A>
__device__ Online<A> row_statistics(const T* x, int64_t n, int t, int g, bool vectorised) {
  Online<A> s{A(-INFINITY), A(0)};
  if (vectorised) {
    constexpr int V = 16 / sizeof(T);
    const Pack<T, V>* packs = reinterpret_cast<const Pack<T, V>*>(x);
    const int64_t vectors = n / V;
    int64_t v = t;
    for (; v + 3 * g < vectors; v += 4 * g) {
      Pack<T, V> p[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) p[u] = packs[v + u * g];
      A values[4 * V];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j) values[u * V + j] = convert<A>(p[u].v[j]);
      s = add_values(s, values);
    }
    for (; v < vectors; v += g) {
      const Pack<T, V> p = packs[v];
      A values[V];
#pragma unroll
      for (int j = 0; j < V; ++j) values[j] = convert<A>(p.v[j]);
      s = add_values(s, values);
    }
    return s;
  }
  int64_t i = t;
  for (; i + 3 * g < n; i += 4 * g) {
    A values[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) values[u] = convert<A>(x[i + u * g]);
    s = add_values(s, values);
  }
  for (; i < n; i += g) {
    const A values[1] = {convert<A>(x[i])};
    s = add_values(s, values);
  }
  return s;
}

// blockDim.x threads per row (32, or up to 512 with blockDim.y == 1), blockDim.y rows.
template <typename T>
__global__ void __launch_bounds__(512)
    softmax_rows_kernel(Lines l, const T* in, T* out, bool log, bool vectorised) {
  using A = GpuAccumulateType<T>;
  __shared__ Online<A> shared[32];
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < l.count;
  const int t = threadIdx.x, g = blockDim.x;
  const int64_t n = l.length;
  int64_t in_offset = 0, out_offset = 0;
  Online<A> s{A(-INFINITY), A(0)};
  if (active) {
    line_offsets(l, row, in_offset, out_offset);
    s = row_statistics<T, A>(in + in_offset, n, t, g, vectorised);
  }
  const OnlineCombine<A> op;
  s = reduction::reduce_across_x(op, s, shared);
  if (g == 32) {
    s.max = __shfl_sync(0xffffffffu, s.max, 0);
    s.sum = __shfl_sync(0xffffffffu, s.sum, 0);
  } else {
    __syncthreads();  // every warp has read its slot in reduce_across_x
    if (t == 0) shared[0] = s;
    __syncthreads();
    s = shared[0];
  }
  if (!active) return;
  const T* x = in + in_offset;
  T* y = out + out_offset;
  const A scale = log ? A(::log(s.sum)) : A(1) / s.sum;
  if (vectorised) {
    constexpr int V = 16 / sizeof(T);
    const Pack<T, V>* packs = reinterpret_cast<const Pack<T, V>*>(x);
    Pack<T, V>* out_packs = reinterpret_cast<Pack<T, V>*>(y);
    for (int64_t v = t; v < n / V; v += g) {
      const Pack<T, V> p = packs[v];
      Pack<T, V> r;
#pragma unroll
      for (int j = 0; j < V; ++j) r.v[j] = softmax_value<T>(convert<A>(p.v[j]), s, scale, log);
      out_packs[v] = r;
    }
  } else {
    for (int64_t i = t; i < n; i += g)
      y[i * l.out_stride] = softmax_value<T>(convert<A>(x[i]), s, scale, log);
  }
}

// A line per thread along x; blockDim.y (a power of two) threads split it.
template <typename T>
__global__ void __launch_bounds__(1024)
    softmax_lines_kernel(Lines l, const T* in, T* out, bool log) {
  using A = GpuAccumulateType<T>;
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  Online<A>* shared = reinterpret_cast<Online<A>*>(dynamic_shared);
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool active = line < l.count;
  const int bx = blockDim.x, x_index = threadIdx.x, y_index = threadIdx.y, by = blockDim.y;
  const int64_t n = l.length, is = l.in_stride;
  int64_t in_offset = 0, out_offset = 0;
  Online<A> s{A(-INFINITY), A(0)};
  if (active) {
    line_offsets(l, line, in_offset, out_offset);
    const T* x = in + in_offset;
    int64_t k = y_index;
    for (; k + 3 * by < n; k += 4 * by) {
      A values[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) values[u] = convert<A>(x[(k + u * by) * is]);
      s = add_values(s, values);
    }
    for (; k < n; k += by) {
      const A values[1] = {convert<A>(x[k * is])};
      s = add_values(s, values);
    }
  }
  const OnlineCombine<A> op;
  shared[y_index * bx + x_index] = s;
  __syncthreads();
  for (int half = by / 2; half > 0; half /= 2) {
    if (y_index < half)
      shared[y_index * bx + x_index] =
          op.combine(shared[y_index * bx + x_index], shared[(y_index + half) * bx + x_index]);
    __syncthreads();
  }
  s = shared[x_index];
  if (!active) return;
  const A scale = log ? A(::log(s.sum)) : A(1) / s.sum;
  const T* x = in + in_offset;
  T* y = out + out_offset;
  for (int64_t k = y_index; k < n; k += by)
    y[k * l.out_stride] = softmax_value<T>(convert<A>(x[k * is]), s, scale, log);
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <typename T>
void softmax_typed(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  using A = GpuAccumulateType<T>;
  const Lines l = make_lines(out, in, dim);
  if (l.count == 0 || l.length == 0) return;
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  if (l.in_stride == 1 && l.length >= 32) {
    constexpr int V = 16 / sizeof(T);
    bool vectorised = l.out_stride == 1 && l.length % V == 0 && aligned16(x) && aligned16(y);
    for (int d = 0; d < l.ndim; ++d)
      vectorised = vectorised && l.in_strides[d] % V == 0 && l.out_strides[d] % V == 0;
    const dim3 block = l.length <= 1024
                           ? dim3(32, 8)
                           : dim3(std::min(512, std::max(128, floor_pow2(l.length / 16))), 1);
    const int64_t blocks = ceil_div(l.count, block.y);
    RCUDA_CHECK(blocks <= 0x7fffffff, ShapeError, "softmax: ", l.count, " rows are too many");
    softmax_rows_kernel<T>
        <<<static_cast<unsigned>(blocks), block, 0, stream>>>(l, x, y, log, vectorised);
  } else {
    const int64_t sms = multiprocessors(device);
    int bx = 256;
    while (bx > 32 && ceil_div(l.count, bx) < 2 * sms) bx /= 2;
    const int by = std::min(1024 / bx, floor_pow2(std::max<int64_t>(1, l.length / 16)));
    const int64_t blocks = ceil_div(l.count, bx);
    RCUDA_CHECK(blocks <= 0x7fffffff, ShapeError, "softmax: ", l.count, " lines are too many");
    const size_t shared = static_cast<size_t>(bx) * by * sizeof(Online<A>);
    softmax_lines_kernel<T>
        <<<static_cast<unsigned>(blocks), dim3(bx, by), shared, stream>>>(l, x, y, log);
  }
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  backend::dispatch_floating(in.dtype(), log ? "log_softmax" : "softmax",
                             [&](auto tag) { softmax_typed<decltype(tag)>(out, in, dim, log); });
}

}  // namespace rcuda::cuda
