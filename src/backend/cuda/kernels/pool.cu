// pool2d and pool2d_backward on the GPU (docs/pooling-normalization.md, "CUDA pooling"): our
// own kernels, as PyTorch's, with the windows of ../../pool_window.h that the CPU loops share.
// Forward: a thread per output element, in the output's memory order (width or channels
// fastest, so that writes coalesce). Backward: a thread per input element gathers from the
// windows that hold it (max: the outputs whose index names it; average: each window's share),
// so no atomics and a deterministic sum. Max pooling whose windows do not overlap (stride at
// least the dilated kernel's extent, as the usual 2x2 stride 2) takes a cheaper path instead:
// the gradient is zeroed and a thread per output element stores its gradient at the input its
// index names, which no other window holds (Note [Max pooling backward by scatter]).
// Positions are decomposed in 32-bit arithmetic when the tensors have fewer than 2^31
// elements: 64-bit division is a long instruction sequence on the GPU, and it made the
// gather backward of the MNIST CNN's pool (4.7M inputs) take 128 us on the H200.
// Arithmetic in float for float32 and the half types, double for float64.
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime.h"
#include "backend/dispatch.h"
#include "backend/pool_window.h"

namespace rcuda::cuda {
namespace {

using backend::ComputeType;
using backend::convert;
using backend::PoolDim;
using backend::WindowSpan;

// Everything a launch needs, by value.
struct Geometry {
  PoolArgs args;
  int64_t n, c;
  PoolDim rows, cols;  // rows.in = H, rows.out = OH, cols likewise
};

// Offset of (n, c, h, w) in a [N, C, height, width] tensor of either memory order.
__device__ __forceinline__ int64_t offset_of(const Geometry& g, int64_t n, int64_t c, int64_t h,
                                             int64_t w, int64_t height, int64_t width) {
  return g.args.channels_last ? ((n * height + h) * width + w) * g.c + c
                              : ((n * g.c + c) * height + h) * width + w;
}

// (n, c, h, w) of linear position i in memory order, divided in Index arithmetic (uint32_t
// when the tensor has fewer than 2^31 elements).
template <typename Index>
__device__ __forceinline__ void position_of(const Geometry& g, int64_t linear, int64_t height,
                                            int64_t width, int64_t& n, int64_t& c, int64_t& h,
                                            int64_t& w) {
  Index i = static_cast<Index>(linear);
  const Index channels = static_cast<Index>(g.c), rows = static_cast<Index>(height),
              cols = static_cast<Index>(width);
  if (g.args.channels_last) {
    c = i % channels;
    i /= channels;
    w = i % cols;
    i /= cols;
    h = i % rows;
    n = i / rows;
  } else {
    w = i % cols;
    i /= cols;
    h = i % rows;
    i /= rows;
    c = i % channels;
    n = i / channels;
  }
}

template <typename T, typename Index>
__global__ void pool2d_kernel(Geometry g, const T* __restrict__ x, T* __restrict__ y,
                              int64_t* __restrict__ indices, int64_t total) {
  using A = ComputeType<T>;
  const bool max = g.args.op == PoolOp::Max;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t n, c, oh, ow;
    position_of<Index>(g, i, g.rows.out, g.cols.out, n, c, oh, ow);
    const WindowSpan r = backend::window_span(oh, g.rows, g.args.adaptive, max);
    const WindowSpan s = backend::window_span(ow, g.cols, g.args.adaptive, max);
    if (max) {
      A best = -std::numeric_limits<A>::infinity();
      int64_t best_index = -1;
      for (int64_t h = r.first; h < r.end; h += r.step)
        for (int64_t w = s.first; w < s.end; w += s.step) {
          const A v = convert<A>(x[offset_of(g, n, c, h, w, g.rows.in, g.cols.in)]);
          if (v > best || v != v) {  // NaN wins, as torch
            best = v;
            best_index = h * g.cols.in + w;
          }
        }
      y[i] = convert<T>(best);
      if (indices) indices[i] = best_index;
    } else {
      A sum = 0;
      for (int64_t h = r.first; h < r.end; ++h)
        for (int64_t w = s.first; w < s.end; ++w)
          sum += convert<A>(x[offset_of(g, n, c, h, w, g.rows.in, g.cols.in)]);
      y[i] = convert<T>(sum / static_cast<A>(backend::avg_divisor(g.args, r, s)));
    }
  }
}

template <typename T, typename Index>
__global__ void pool2d_backward_kernel(Geometry g, const T* __restrict__ dy,
                                       const int64_t* __restrict__ indices, T* __restrict__ dx,
                                       int64_t total) {
  using A = ComputeType<T>;
  const bool max = g.args.op == PoolOp::Max;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t n, c, h, w;
    position_of<Index>(g, i, g.rows.in, g.cols.in, n, c, h, w);
    const backend::OutputRange rr = backend::outputs_containing(h, g.rows, g.args.adaptive);
    const backend::OutputRange cr = backend::outputs_containing(w, g.cols, g.args.adaptive);
    const int64_t self = h * g.cols.in + w;
    A sum = 0;
    for (int64_t oh = rr.first; oh < rr.end; ++oh)
      for (int64_t ow = cr.first; ow < cr.end; ++ow) {
        const int64_t o = offset_of(g, n, c, oh, ow, g.rows.out, g.cols.out);
        if (max) {
          if (indices[o] == self) sum += convert<A>(dy[o]);
          continue;
        }
        if (!backend::window_holds(oh, h, g.rows, g.args.adaptive, false) ||
            !backend::window_holds(ow, w, g.cols, g.args.adaptive, false))
          continue;
        const WindowSpan r = backend::window_span(oh, g.rows, g.args.adaptive, false);
        const WindowSpan s = backend::window_span(ow, g.cols, g.args.adaptive, false);
        sum += convert<A>(dy[o]) / static_cast<A>(backend::avg_divisor(g.args, r, s));
      }
    dx[i] = convert<T>(sum);
  }
}

// Note [Max pooling backward by scatter]
// When no input lies in two windows, the gradient of max pooling is dy moved to the positions
// that the forward's indices name, and zero elsewhere: a memset and one store per output,
// with no search over the windows holding each input. Each input receives at most one store,
// so the result is deterministic, as the gather's. An index of -1 (a window of -inf alone,
// where no element beat the initial -inf) stores nothing, as the gather adds nothing for it.
template <typename T, typename Index>
__global__ void max_pool2d_scatter_kernel(Geometry g, const T* __restrict__ dy,
                                          const int64_t* __restrict__ indices, T* __restrict__ dx,
                                          int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += step) {
    const int64_t index = indices[o];
    if (index < 0) continue;
    int64_t n, c, oh, ow;
    position_of<Index>(g, o, g.rows.out, g.cols.out, n, c, oh, ow);
    const Index plane_index = static_cast<Index>(index), cols = static_cast<Index>(g.cols.in);
    const int64_t h = plane_index / cols, w = plane_index % cols;
    dx[offset_of(g, n, c, h, w, g.rows.in, g.cols.in)] = dy[o];
  }
}

// Whether no input lies in two windows of this dim (plain, not adaptive, windows).
bool windows_disjoint(const PoolDim& d) { return d.stride >= (d.kernel - 1) * d.dilation + 1; }

Geometry geometry(const PoolArgs& args, const Tensor& in, const Tensor& out) {
  const int64_t h = in.shape()[2], w = in.shape()[3], oh = out.shape()[2], ow = out.shape()[3];
  return {args, in.shape()[0], in.shape()[1], backend::pool_rows(args, h, oh),
          backend::pool_cols(args, w, ow)};
}

constexpr int kThreads = 256;

// Whether positions in both tensors can be decomposed in 32-bit arithmetic.
bool fits_32_bits(const Tensor& a, const Tensor& b) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  return a.numel() < kLimit && b.numel() < kLimit;
}

unsigned blocks_for(int64_t total) {
  return static_cast<unsigned>(std::min<int64_t>((total + kThreads - 1) / kThreads, 1 << 22));
}

template <typename T>
void pool2d_typed(const PoolArgs& args, const Tensor& out, const Tensor& indices,
                  const Tensor& in) {
  const int device = in.device().index;
  DeviceGuard guard(device);
  const Geometry g = geometry(args, in, out);
  const int64_t total = out.numel();
  int64_t* index_data = indices.defined() ? indices.data<int64_t>() : nullptr;
  cudaStream_t stream = current_stream(device);
  if (fits_32_bits(in, out)) {
    pool2d_kernel<T, uint32_t><<<blocks_for(total), kThreads, 0, stream>>>(
        g, in.data<T>(), out.data<T>(), index_data, total);
  } else {
    pool2d_kernel<T, int64_t><<<blocks_for(total), kThreads, 0, stream>>>(
        g, in.data<T>(), out.data<T>(), index_data, total);
  }
  RCUDA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void pool2d_backward_typed(const PoolArgs& args, const Tensor& grad_in, const Tensor& grad_out,
                           const Tensor& indices) {
  const int device = grad_in.device().index;
  DeviceGuard guard(device);
  const Geometry g = geometry(args, grad_in, grad_out);
  cudaStream_t stream = current_stream(device);
  const bool small = fits_32_bits(grad_in, grad_out);
  if (args.op == PoolOp::Max && !args.adaptive && windows_disjoint(g.rows) &&
      windows_disjoint(g.cols)) {
    RCUDA_CUDA_CHECK(cudaMemsetAsync(grad_in.data_ptr(), 0,
                                     static_cast<size_t>(grad_in.numel()) * grad_in.element_size(),
                                     stream));
    const int64_t outputs = grad_out.numel();
    if (outputs == 0) return;
    if (small) {
      max_pool2d_scatter_kernel<T, uint32_t><<<blocks_for(outputs), kThreads, 0, stream>>>(
          g, grad_out.data<T>(), indices.data<int64_t>(), grad_in.data<T>(), outputs);
    } else {
      max_pool2d_scatter_kernel<T, int64_t><<<blocks_for(outputs), kThreads, 0, stream>>>(
          g, grad_out.data<T>(), indices.data<int64_t>(), grad_in.data<T>(), outputs);
    }
    RCUDA_CUDA_CHECK_LAUNCH();
    return;
  }
  const int64_t total = grad_in.numel();
  const int64_t* index_data = args.op == PoolOp::Max ? indices.data<int64_t>() : nullptr;
  if (small) {
    pool2d_backward_kernel<T, uint32_t><<<blocks_for(total), kThreads, 0, stream>>>(
        g, grad_out.data<T>(), index_data, grad_in.data<T>(), total);
  } else {
    pool2d_backward_kernel<T, int64_t><<<blocks_for(total), kThreads, 0, stream>>>(
        g, grad_out.data<T>(), index_data, grad_in.data<T>(), total);
  }
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::pool2d(const PoolArgs& args, const Tensor& out, const Tensor& indices,
                         const Tensor& in) {
  backend::dispatch_floating(
      in.dtype(), "pool2d", [&](auto tag) { pool2d_typed<decltype(tag)>(args, out, indices, in); });
}

void CudaBackend::pool2d_backward(const PoolArgs& args, const Tensor& grad_in,
                                  const Tensor& grad_out, const Tensor& indices) {
  backend::dispatch_floating(grad_in.dtype(), "pool2d_backward", [&](auto tag) {
    pool2d_backward_typed<decltype(tag)>(args, grad_in, grad_out, indices);
  });
}

}  // namespace rcuda::cuda
