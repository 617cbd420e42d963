// pool2d and pool2d_backward on the CPU: float32 through oneDNN where it computes PyTorch's
// result (pool_onednn.cpp), everything else through the loops here, a (sample, channel) plane
// per unit of work. Windows come from ../pool_window.h, shared with the CUDA kernels. Sums are
// accumulated in double; the backward adds into a double plane, then writes it once.
#include <cmath>
#include <limits>
#include <vector>

#include "backend/pool_window.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"
#include "onednn.h"
#include "plane.h"

namespace rcuda::cpu {
namespace {

using backend::PoolDim;
using backend::WindowSpan;

struct Geometry {
  int64_t planes;
  Plane in, out;
  PoolDim rows, cols;
};

Geometry geometry(const PoolArgs& a, const Tensor& in, const Tensor& out) {
  const int64_t n = in.shape()[0], c = in.shape()[1];
  const int64_t h = in.shape()[2], w = in.shape()[3], oh = out.shape()[2], ow = out.shape()[3];
  return {n * c,
          {c, h, w, a.channels_last},
          {c, oh, ow, a.channels_last},
          backend::pool_rows(a, h, oh),
          backend::pool_cols(a, w, ow)};
}

template <typename T>
void pool2d_typed(const PoolArgs& a, const Tensor& out, const Tensor& indices, const Tensor& in) {
  using C = ComputeType<T>;
  const Geometry g = geometry(a, in, out);
  const bool max = a.op == PoolOp::Max;
  const T* x = in.data<T>();
  T* y = out.data<T>();
  int64_t* idx = indices.defined() ? indices.data<int64_t>() : nullptr;
  // Elements read per plane: an adaptive window spans about in / out + 1 positions.
  const int64_t window = a.adaptive ? (g.rows.in / g.rows.out + 1) * (g.cols.in / g.cols.out + 1)
                                    : a.kernel_h * a.kernel_w;
  const int64_t cost = g.out.height * g.out.width * window;
  parallel_units(g.planes, cost, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const T* xp = x + g.in.base(p);
      const int64_t out_base = g.out.base(p);
      const int64_t xr = g.in.row_step(), xc = g.in.col_step();
      for (int64_t oh = 0; oh < g.out.height; ++oh) {
        const WindowSpan r = backend::window_span(oh, g.rows, a.adaptive, max);
        for (int64_t ow = 0; ow < g.out.width; ++ow) {
          const WindowSpan c = backend::window_span(ow, g.cols, a.adaptive, max);
          const int64_t o = out_base + oh * g.out.row_step() + ow * g.out.col_step();
          if (max) {
            C best = -std::numeric_limits<C>::infinity();
            int64_t best_index = -1;
            for (int64_t h = r.first; h < r.end; h += r.step)
              for (int64_t w = c.first; w < c.end; w += c.step) {
                const C v = convert<C>(xp[h * xr + w * xc]);
                if (v > best || std::isnan(v)) {  // NaN wins, as torch
                  best = v;
                  best_index = h * g.in.width + w;
                }
              }
            y[o] = convert<T>(best);
            if (idx) idx[o] = best_index;
          } else {
            double sum = 0;
            for (int64_t h = r.first; h < r.end; ++h)
              for (int64_t w = c.first; w < c.end; ++w)
                sum += static_cast<double>(convert<C>(xp[h * xr + w * xc]));
            y[o] = convert<T>(sum / static_cast<double>(backend::avg_divisor(a, r, c)));
          }
        }
      }
    }
  });
}

template <typename T>
void pool2d_backward_typed(const PoolArgs& a, const Tensor& grad_in, const Tensor& grad_out,
                           const Tensor& indices) {
  using C = ComputeType<T>;
  const Geometry g = geometry(a, grad_in, grad_out);
  const bool max = a.op == PoolOp::Max;
  const T* dy = grad_out.data<T>();
  T* dx = grad_in.data<T>();
  const int64_t* idx = max ? indices.data<int64_t>() : nullptr;
  const int64_t plane_size = g.in.height * g.in.width;
  parallel_units(
      g.planes, plane_size + g.out.height * g.out.width, [&](int64_t first, int64_t last) {
        std::vector<double> acc(static_cast<size_t>(plane_size));
        for (int64_t p = first; p < last; ++p) {
          std::fill(acc.begin(), acc.end(), 0.0);
          const int64_t out_base = g.out.base(p);
          for (int64_t oh = 0; oh < g.out.height; ++oh) {
            const WindowSpan r = backend::window_span(oh, g.rows, a.adaptive, max);
            for (int64_t ow = 0; ow < g.out.width; ++ow) {
              const int64_t o = out_base + oh * g.out.row_step() + ow * g.out.col_step();
              const double grad = static_cast<double>(convert<C>(dy[o]));
              if (max) {
                if (idx[o] >= 0) acc[static_cast<size_t>(idx[o])] += grad;
                continue;
              }
              const WindowSpan c = backend::window_span(ow, g.cols, a.adaptive, max);
              const double share = grad / static_cast<double>(backend::avg_divisor(a, r, c));
              for (int64_t h = r.first; h < r.end; ++h)
                for (int64_t w = c.first; w < c.end; ++w)
                  acc[static_cast<size_t>(h * g.in.width + w)] += share;
            }
          }
          T* dxp = dx + g.in.base(p);
          for (int64_t h = 0; h < g.in.height; ++h)
            for (int64_t w = 0; w < g.in.width; ++w)
              dxp[h * g.in.row_step() + w * g.in.col_step()] =
                  convert<T>(acc[static_cast<size_t>(h * g.in.width + w)]);
        }
      });
}

}  // namespace

void CpuBackend::pool2d(const PoolArgs& args, const Tensor& out, const Tensor& indices,
                        const Tensor& in) {
  if (onednn::try_pool2d(args, out, indices, in)) return;
  dispatch_floating(in.dtype(), "pool2d",
                    [&](auto tag) { pool2d_typed<decltype(tag)>(args, out, indices, in); });
}

void CpuBackend::pool2d_backward(const PoolArgs& args, const Tensor& grad_in,
                                 const Tensor& grad_out, const Tensor& indices) {
  if (onednn::try_pool2d_backward(args, grad_in, grad_out)) return;
  dispatch_floating(grad_in.dtype(), "pool2d_backward", [&](auto tag) {
    pool2d_backward_typed<decltype(tag)>(args, grad_in, grad_out, indices);
  });
}

}  // namespace rcuda::cpu
