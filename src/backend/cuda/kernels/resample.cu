// pad and interpolate on the GPU (Note [Resampling primitives]; docs/resample-pad.md): our own
// kernels over the index rules of ../../resample_index.h, which the CPU loops share (cuDNN has
// no resampling backward; PyTorch runs its own kernels too). Forward: a thread per output
// element, in the output's memory order so that writes coalesce. Backward: a thread per input
// element gathers from the outputs that read it (pad: up to three runs per dim; interpolate:
// the outputs found by binary search over the monotone source index), so there are no atomics
// and the sums are deterministic, where PyTorch's backward kernels add with atomics.
// Arithmetic in float for float32 and the half types, double for float64.
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime.h"
#include "backend/dispatch.h"
#include "backend/resample_index.h"

namespace rcuda::cuda {
namespace {

using backend::ComputeType;
using backend::convert;
using backend::OutputRuns;
using backend::OutputSpan;
using backend::ResampleAxis;
using backend::Taps;

constexpr int kThreads = 256;

unsigned blocks_for(int64_t total) {
  return static_cast<unsigned>(std::min<int64_t>((total + kThreads - 1) / kThreads, 1 << 22));
}

// ---- pad ------------------------------------------------------------------------------------

// A 5-D [N, C, D, H, W] tensor's sizes and strides, by value.
struct Layout5 {
  int64_t size[5], stride[5];
};

Layout5 layout5(const Tensor& t) {
  Layout5 l;
  for (int d = 0; d < 5; ++d) {
    l.size[d] = t.shape()[d];
    l.stride[d] = t.strides()[d];
  }
  return l;
}

struct PadGeometry {
  PadMode mode;
  bool channels_last;
  int64_t before[3];
  Layout5 in, out;  // forward's input and output (backward: grad_in and grad_out)
};

PadGeometry pad_geometry(const PadArgs& a, const Tensor& in, const Tensor& out) {
  PadGeometry g;
  g.mode = a.mode;
  g.channels_last = a.channels_last;
  for (int k = 0; k < 3; ++k) g.before[k] = a.before[k];
  g.in = layout5(in);
  g.out = layout5(out);
  return g;
}

// The (n, c, d, h, w) of linear position i of a tensor of `size` walked in memory order.
__device__ __forceinline__ void position5(int64_t i, const int64_t* size, bool channels_last,
                                          int64_t* p) {
  const int order_contiguous[5] = {4, 3, 2, 1, 0}, order_last[5] = {1, 4, 3, 2, 0};
  const int* order = channels_last ? order_last : order_contiguous;  // fastest first
  for (int k = 0; k < 5; ++k) {
    const int d = order[k];
    p[d] = i % size[d];
    i /= size[d];
  }
}

template <typename T>
__global__ void pad_kernel(PadGeometry g, const T* __restrict__ x, T* __restrict__ y,
                           int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t p[5];
    position5(i, g.out.size, g.channels_last, p);
    int64_t src = p[0] * g.in.stride[0] + p[1] * g.in.stride[1], dst = 0;
    for (int k = 0; k < 3; ++k)
      src +=
          backend::pad_source(g.mode, p[k + 2], g.before[k], g.in.size[k + 2]) * g.in.stride[k + 2];
    for (int d = 0; d < 5; ++d) dst += p[d] * g.out.stride[d];
    y[dst] = x[src];
  }
}

template <typename T>
__global__ void pad_backward_kernel(PadGeometry g, const T* __restrict__ dy, T* __restrict__ dx,
                                    int64_t total) {
  using A = ComputeType<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t p[5];
    position5(i, g.in.size, g.channels_last, p);
    OutputRuns r[3];
    for (int k = 0; k < 3; ++k)
      r[k] = backend::pad_outputs_reading(g.mode, p[k + 2], g.before[k], g.in.size[k + 2],
                                          g.out.size[k + 2]);
    const int64_t* s = g.out.stride;
    const int64_t base = p[0] * s[0] + p[1] * s[1];
    A sum = 0;
    for (int u = 0; u < r[0].count; ++u)
      for (int64_t od = r[0].first[u]; od < r[0].end[u]; ++od)
        for (int v = 0; v < r[1].count; ++v)
          for (int64_t oh = r[1].first[v]; oh < r[1].end[v]; ++oh)
            for (int w = 0; w < r[2].count; ++w)
              for (int64_t ow = r[2].first[w]; ow < r[2].end[w]; ++ow)
                sum += convert<A>(dy[base + od * s[2] + oh * s[3] + ow * s[4]]);
    int64_t dst = 0;
    for (int d = 0; d < 5; ++d) dst += p[d] * g.in.stride[d];
    dx[dst] = convert<T>(sum);
  }
}

template <typename T>
void pad_typed(const PadArgs& args, const Tensor& out, const Tensor& in) {
  const int device = in.device().index;
  DeviceGuard guard(device);
  const int64_t total = out.numel();
  pad_kernel<T><<<blocks_for(total), kThreads, 0, current_stream(device)>>>(
      pad_geometry(args, in, out), in.data<T>(), out.data<T>(), total);
  RCUDA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void pad_backward_typed(const PadArgs& args, const Tensor& grad_in, const Tensor& grad_out) {
  const int device = grad_in.device().index;
  DeviceGuard guard(device);
  const int64_t total = grad_in.numel();
  pad_backward_kernel<T><<<blocks_for(total), kThreads, 0, current_stream(device)>>>(
      pad_geometry(args, grad_in, grad_out), grad_out.data<T>(), grad_in.data<T>(), total);
  RCUDA_CUDA_CHECK_LAUNCH();
}

// ---- interpolate ----------------------------------------------------------------------------

template <typename A>
struct InterpolateGeometry {
  bool linear, channels_last;
  int64_t c;
  ResampleAxis<A> rows, cols;  // rows.in = H, rows.out = OH, cols likewise
};

template <typename A>
InterpolateGeometry<A> interpolate_geometry(const InterpolateArgs& a, const Tensor& in,
                                            const Tensor& out) {
  InterpolateGeometry<A> g;
  g.linear = a.mode == InterpolateMode::Linear;
  g.channels_last = a.channels_last;
  g.c = in.shape()[1];
  g.rows = backend::resample_axis<A>(a, in.shape()[2], out.shape()[2], a.scale_h);
  g.cols = backend::resample_axis<A>(a, in.shape()[3], out.shape()[3], a.scale_w);
  return g;
}

// Offset of (n, c, h, w) in a dense [N, C, height, width] tensor of the call's memory order.
template <typename A>
__device__ __forceinline__ int64_t offset4(const InterpolateGeometry<A>& g, int64_t n, int64_t c,
                                           int64_t h, int64_t w, int64_t height, int64_t width) {
  return g.channels_last ? ((n * height + h) * width + w) * g.c + c
                         : ((n * g.c + c) * height + h) * width + w;
}

// (n, c, h, w) of linear position i in memory order.
template <typename A>
__device__ __forceinline__ void position4(const InterpolateGeometry<A>& g, int64_t i,
                                          int64_t height, int64_t width, int64_t& n, int64_t& c,
                                          int64_t& h, int64_t& w) {
  if (g.channels_last) {
    c = i % g.c;
    i /= g.c;
    w = i % width;
    i /= width;
    h = i % height;
    n = i / height;
  } else {
    w = i % width;
    i /= width;
    h = i % height;
    i /= height;
    c = i % g.c;
    n = i / g.c;
  }
}

template <typename T, typename A>
__global__ void interpolate_kernel(InterpolateGeometry<A> g, const T* __restrict__ x,
                                   T* __restrict__ y, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t H = g.rows.in, W = g.cols.in;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t n, c, oh, ow;
    position4(g, i, g.rows.out, g.cols.out, n, c, oh, ow);
    const Taps<A> h = backend::resample_taps(g.rows, oh);
    const Taps<A> w = backend::resample_taps(g.cols, ow);
    if (!g.linear) {
      y[i] = x[offset4(g, n, c, h.i0, w.i0, H, W)];
      continue;
    }
    const A v00 = convert<A>(x[offset4(g, n, c, h.i0, w.i0, H, W)]);
    const A v01 = convert<A>(x[offset4(g, n, c, h.i0, w.i1, H, W)]);
    const A v10 = convert<A>(x[offset4(g, n, c, h.i1, w.i0, H, W)]);
    const A v11 = convert<A>(x[offset4(g, n, c, h.i1, w.i1, H, W)]);
    y[i] = convert<T>(h.l0 * (w.l0 * v00 + w.l1 * v01) + h.l1 * (w.l0 * v10 + w.l1 * v11));
  }
}

template <typename T, typename A>
__global__ void interpolate_backward_kernel(InterpolateGeometry<A> g, const T* __restrict__ dy,
                                            T* __restrict__ dx, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t OH = g.rows.out, OW = g.cols.out;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t n, c, h, w;
    position4(g, i, g.rows.in, g.cols.in, n, c, h, w);
    const OutputSpan sh = backend::outputs_reading(g.rows, h);
    const OutputSpan sw = backend::outputs_reading(g.cols, w);
    A sum = 0;
    for (int64_t oh = sh.first; oh < sh.end; ++oh) {
      const A wh = backend::tap_weight(backend::resample_taps(g.rows, oh), h);
      if (wh == A(0)) continue;
      A row = 0;
      for (int64_t ow = sw.first; ow < sw.end; ++ow) {
        const A ww = backend::tap_weight(backend::resample_taps(g.cols, ow), w);
        if (ww == A(0)) continue;
        row += ww * convert<A>(dy[offset4(g, n, c, oh, ow, OH, OW)]);
      }
      sum += wh * row;
    }
    dx[i] = convert<T>(sum);
  }
}

template <typename T>
void interpolate_typed(const InterpolateArgs& args, const Tensor& out, const Tensor& in) {
  using A = ComputeType<T>;
  const int device = in.device().index;
  DeviceGuard guard(device);
  const int64_t total = out.numel();
  interpolate_kernel<T, A><<<blocks_for(total), kThreads, 0, current_stream(device)>>>(
      interpolate_geometry<A>(args, in, out), in.data<T>(), out.data<T>(), total);
  RCUDA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void interpolate_backward_typed(const InterpolateArgs& args, const Tensor& grad_in,
                                const Tensor& grad_out) {
  using A = ComputeType<T>;
  const int device = grad_in.device().index;
  DeviceGuard guard(device);
  const int64_t total = grad_in.numel();
  interpolate_backward_kernel<T, A><<<blocks_for(total), kThreads, 0, current_stream(device)>>>(
      interpolate_geometry<A>(args, grad_in, grad_out), grad_out.data<T>(), grad_in.data<T>(),
      total);
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::pad(const PadArgs& args, const Tensor& out, const Tensor& in) {
  backend::dispatch_all(in.dtype(), [&](auto tag) { pad_typed<decltype(tag)>(args, out, in); });
}

void CudaBackend::pad_backward(const PadArgs& args, const Tensor& grad_in, const Tensor& grad_out) {
  backend::dispatch_floating(grad_in.dtype(), "pad_backward", [&](auto tag) {
    pad_backward_typed<decltype(tag)>(args, grad_in, grad_out);
  });
}

void CudaBackend::interpolate(const InterpolateArgs& args, const Tensor& out, const Tensor& in) {
  backend::dispatch_floating(in.dtype(), "interpolate",
                             [&](auto tag) { interpolate_typed<decltype(tag)>(args, out, in); });
}

void CudaBackend::interpolate_backward(const InterpolateArgs& args, const Tensor& grad_in,
                                       const Tensor& grad_out) {
  backend::dispatch_floating(grad_in.dtype(), "interpolate_backward", [&](auto tag) {
    interpolate_backward_typed<decltype(tag)>(args, grad_in, grad_out);
  });
}

}  // namespace rcuda::cuda
