// The CUDA elementwise engine: runs f over N same-shaped operands (output first), as the CPU's
// loops.h does. Two paths:
//  - dense: every operand is contiguous or a broadcast scalar (all strides 0). Contiguous
//    operands are read and written 16 bytes at a time when their addresses allow it.
//  - strided: dims coalesced on the host (backend/strided_loop.h), offsets computed per element
//    with 32-bit index arithmetic when the tensor has fewer than 2^31 elements, dividing by each
//    dim's size through a multiply and a shift (Note [Division by a dim's size]).
// Functors take and return element values (`Out f(In...)`); they run on the device and may
// switch on a runtime op code: the op is uniform across the launch, so this costs a few
// instructions per element of a memory-bound loop and keeps one kernel per dtype (compile time).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>

#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/runtime.h"
#include "backend/strided_loop.h"
#include "rcuda/core/error.h"

namespace rcuda::cuda {

constexpr int kMaxDims = 10;

// Note [Division by a dim's size]
// A strided element's offsets come from dividing its linear index by each dim's size. A 32-bit
// division by a value known only at run time is a sequence of some twenty instructions on the
// GPU, and for a 4-d broadcast (a convolution's bias added over N, C, H, W) it made the strided
// path 2-3x slower than PyTorch's, which divides as here: by a multiply-high and a shift with
// a magic number computed on the host for each size (Granlund and Montgomery, "Division by
// invariant integers using multiplication", 1994). For a divisor d in [1, 2^31) let s be the
// least shift with 2^s >= d and m = floor(2^32 (2^s - d) / d) + 1; then for n < 2^31,
// floor(n / d) = (umulhi(n, m) + n) >> s, with the sum below 2^32.
struct FastDivisor {
  uint32_t divisor = 1, magic = 1;
  uint32_t shift = 0;

  FastDivisor() = default;
  explicit FastDivisor(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ uint32_t divide(uint32_t n) const {
    return (__umulhi(n, magic) + n) >> shift;
  }
};

// Dividends below this take FastDivisor::divide.
constexpr int64_t kFastDivisionLimit = int64_t{1} << 31;

template <int N>
struct StridedArgs {
  int ndim;
  int64_t sizes[kMaxDims];            // innermost last
  FastDivisor divisors[kMaxDims];     // the sizes, for 32-bit launches (Index = uint32_t)
  int64_t byte_strides[kMaxDims][N];  // per dim, per operand
  char* data[N];
};

// The index arithmetic (division by sizes) runs in Index, 32-bit when the element count allows;
// byte offsets are always 64-bit, since a strided view of few elements can span more than 4 GiB.
template <int N, typename Index>
__device__ __forceinline__ void element_offsets(const StridedArgs<N>& a, Index linear,
                                                int64_t (&offsets)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) offsets[k] = 0;
  for (int d = a.ndim - 1; d >= 0; --d) {
    Index i;
    if constexpr (sizeof(Index) == 4) {
      const Index quotient = a.divisors[d].divide(linear);
      i = linear - quotient * a.divisors[d].divisor;
      linear = quotient;
    } else {
      const Index size = static_cast<Index>(a.sizes[d]);
      i = linear % size;
      linear /= size;
    }
#pragma unroll
    for (int k = 0; k < N; ++k) offsets[k] += static_cast<int64_t>(i) * a.byte_strides[d][k];
  }
}

// Applies `apply(ptrs)` to every element through the strided path.
template <int N, typename Index, typename Apply>
__global__ void strided_kernel(StridedArgs<N> args, Index n, Apply apply) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t offsets[N];
    element_offsets<N, Index>(args, i, offsets);
    char* ptrs[N];
#pragma unroll
    for (int k = 0; k < N; ++k) ptrs[k] = args.data[k] + offsets[k];
    apply(ptrs);
  }
}

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Dense path for out = f(in...) where each input is contiguous or a scalar (is_scalar bit).
template <int V, typename Out, typename In, int NIn, typename F>
__global__ void dense_kernel(Out* out, std::array<const In*, NIn> in, unsigned scalar_mask,
                             int64_t n, F f) {
  const int64_t vectors = n / V;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t vi = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; vi < vectors;
       vi += stride) {
    In values[NIn][V];
#pragma unroll
    for (int k = 0; k < NIn; ++k) {
      if (scalar_mask & (1u << k)) {
#pragma unroll
        for (int j = 0; j < V; ++j) values[k][j] = in[k][0];
      } else {
        const Pack<In, V> p = reinterpret_cast<const Pack<In, V>*>(in[k])[vi];
#pragma unroll
        for (int j = 0; j < V; ++j) values[k][j] = p.v[j];
      }
    }
    Pack<Out, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if constexpr (NIn == 1)
        r.v[j] = f(values[0][j]);
      else if constexpr (NIn == 2)
        r.v[j] = f(values[0][j], values[1][j]);
      else
        r.v[j] = f(values[0][j], values[1][j], values[2][j]);
    }
    reinterpret_cast<Pack<Out, V>*>(out)[vi] = r;
  }
  // The tail that does not fill a vector.
  for (int64_t i = vectors * V + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    In x[NIn];
#pragma unroll
    for (int k = 0; k < NIn; ++k) x[k] = (scalar_mask & (1u << k)) ? in[k][0] : in[k][i];
    if constexpr (NIn == 1)
      out[i] = f(x[0]);
    else if constexpr (NIn == 2)
      out[i] = f(x[0], x[1]);
    else
      out[i] = f(x[0], x[1], x[2]);
  }
}

inline bool all_strides_zero(const Tensor& t) {
  for (int64_t s : t.strides())
    if (s != 0) return false;
  return true;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <int N>
StridedArgs<N> strided_args(const std::array<Tensor, N>& operands) {
  const backend::StridedLoop<N> loop = backend::make_loop<N>(operands);
  RCUDA_CHECK(static_cast<int>(loop.sizes.size()) <= kMaxDims, ShapeError,
              "cuda elementwise: tensors with more than ", kMaxDims,
              " dims that cannot be merged are not supported (got ", loop.sizes.size(),
              "); make the inputs contiguous first");
  StridedArgs<N> a{};
  a.ndim = static_cast<int>(loop.sizes.size());
  // Sizes past 2^31 only occur in launches with Index = int64_t, which divide plainly.
  for (int d = 0; d < a.ndim; ++d) {
    a.sizes[d] = loop.sizes[d];
    if (loop.sizes[d] >= 1 && loop.sizes[d] < kFastDivisionLimit)
      a.divisors[d] = FastDivisor(static_cast<uint32_t>(loop.sizes[d]));
    for (int k = 0; k < N; ++k) a.byte_strides[d][k] = loop.byte_strides[k][d];
  }
  for (int k = 0; k < N; ++k) a.data[k] = loop.data[k];
  return a;
}

// Runs apply(char* ptrs[N]) over every element of same-shaped operands (strided path only);
// used where the dense path does not apply (mixed dtypes, where with bool conditions...).
template <int N, typename Apply>
void launch_strided(const std::array<Tensor, N>& operands, Apply apply) {
  const int64_t n = operands[0].numel();
  if (n == 0) return;
  const int device = operands[0].device().index;
  DeviceGuard guard(device);
  const StridedArgs<N> args = strided_args<N>(operands);
  const int blocks = blocks_for(n, device);
  cudaStream_t stream = current_stream(device);
  // Through the driver (Note [Launching through the driver] in backend/cuda/kernel_launch.h).
  if (n < (int64_t{1} << 31)) {
    static const KernelLauncher launcher(&strided_kernel<N, uint32_t, Apply>);
    launcher.launch(device, blocks, kThreadsPerBlock, 0, stream, args, static_cast<uint32_t>(n),
                    apply);
  } else {
    static const KernelLauncher launcher(&strided_kernel<N, int64_t, Apply>);
    launcher.launch(device, blocks, kThreadsPerBlock, 0, stream, args, n, apply);
  }
}

// out = f(inputs...) with all inputs of dtype In and the output of dtype Out.
template <typename Out, typename In, int NIn, typename F>
void launch_map(const Tensor& out, const std::array<Tensor, NIn>& inputs, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  // Flat indexing serves operands that are all contiguous, or that all share the output's
  // dense permuted layout (channels-last activations: Note [Elementwise outputs keep
  // channels-last] in src/ops/ops_util.h).
  const bool out_contiguous = out.is_contiguous();
  bool dense = out_contiguous || out.is_non_overlapping_and_dense();
  unsigned scalar_mask = 0;
  for (int k = 0; k < NIn; ++k) {
    if (all_strides_zero(inputs[k]))
      scalar_mask |= 1u << k;
    else
      dense = dense && ((out_contiguous && inputs[k].is_contiguous()) ||
                        inputs[k].strides() == out.strides());
  }
  if (dense) {
    const int device = out.device().index;
    DeviceGuard guard(device);
    std::array<const In*, NIn> in;
    bool vectorisable = aligned16(out.data_ptr());
    for (int k = 0; k < NIn; ++k) {
      in[k] = static_cast<const In*>(inputs[k].data_ptr());
      vectorisable = vectorisable && ((scalar_mask >> k) & 1u ? true : aligned16(in[k]));
    }
    // 16-byte accesses for the wider of the two types.
    constexpr int V = 16 / (sizeof(Out) > sizeof(In) ? sizeof(Out) : sizeof(In));
    cudaStream_t stream = current_stream(device);
    Out* o = static_cast<Out*>(out.data_ptr());
    if (vectorisable) {
      static const KernelLauncher launcher(&dense_kernel<V, Out, In, NIn, F>);
      launcher.launch(device, blocks_for(n / V + 1, device), kThreadsPerBlock, 0, stream, o, in,
                      scalar_mask, n, f);
    } else {
      static const KernelLauncher launcher(&dense_kernel<1, Out, In, NIn, F>);
      launcher.launch(device, blocks_for(n, device), kThreadsPerBlock, 0, stream, o, in,
                      scalar_mask, n, f);
    }
    return;
  }
  std::array<Tensor, NIn + 1> operands;
  operands[0] = out;
  for (int k = 0; k < NIn; ++k) operands[k + 1] = inputs[k];
  launch_strided<NIn + 1>(operands, [f] __device__(char** p) {
    if constexpr (NIn == 1) {
      *reinterpret_cast<Out*>(p[0]) = f(*reinterpret_cast<const In*>(p[1]));
    } else if constexpr (NIn == 2) {
      *reinterpret_cast<Out*>(p[0]) =
          f(*reinterpret_cast<const In*>(p[1]), *reinterpret_cast<const In*>(p[2]));
    } else {
      *reinterpret_cast<Out*>(p[0]) =
          f(*reinterpret_cast<const In*>(p[1]), *reinterpret_cast<const In*>(p[2]),
            *reinterpret_cast<const In*>(p[3]));
    }
  });
}

}  // namespace rcuda::cuda
