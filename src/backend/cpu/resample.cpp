// pad and interpolate on the CPU (Note [Resampling primitives]): own loops over the index rules
// of ../resample_index.h, which the CUDA kernels share. The forward passes read the input
// through per-dimension tables of source positions; the backward passes gather, for each input
// element, from the outputs that read it (the same gather the GPU runs, so the shared rules are
// exercised here), accumulating in float64. Parallel over rows of the output or input.
// Built with -ffp-contract=off (src/CMakeLists.txt): the tap formulas must round as the GPU's.
#include <array>
#include <vector>

#include "backend/resample_index.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"
#include "plane.h"

namespace rcuda::cpu {
namespace {

using backend::OutputRuns;
using backend::OutputSpan;
using backend::ResampleAxis;
using backend::Taps;

// A [N, C, D, H, W] walk as rows: the row is the dim that is fastest in memory (W, or C when
// channels-last), the other four dims number the rows.
struct RowWalk {
  std::array<int64_t, 5> size;
  std::array<int, 5> order;  // dims from slowest to fastest; order[4] is the row's dim
  int64_t rows() const { return size[order[0]] * size[order[1]] * size[order[2]] * size[order[3]]; }
  int64_t row_length() const { return size[order[4]]; }
  // The index of row r in each dim (the row's own dim left 0).
  std::array<int64_t, 5> position(int64_t r) const {
    std::array<int64_t, 5> p{0, 0, 0, 0, 0};
    for (int k = 3; k >= 0; --k) {
      p[order[k]] = r % size[order[k]];
      r /= size[order[k]];
    }
    return p;
  }
};

RowWalk row_walk(const Tensor& t, bool channels_last) {
  RowWalk w;
  for (int d = 0; d < 5; ++d) w.size[d] = t.shape()[d];
  w.order = channels_last ? std::array<int, 5>{0, 2, 3, 4, 1} : std::array<int, 5>{0, 1, 2, 3, 4};
  return w;
}

int64_t offset(const std::array<int64_t, 5>& index, const Strides& strides) {
  int64_t o = 0;
  for (int d = 0; d < 5; ++d) o += index[d] * strides[d];
  return o;
}

template <typename T>
void pad_typed(const PadArgs& a, const Tensor& out, const Tensor& in) {
  // Source tables: for each output position of spatial dim k (tensor dim k + 2), its input one.
  std::array<std::vector<int64_t>, 3> source;
  for (int k = 0; k < 3; ++k) {
    const int64_t size = in.shape()[k + 2], out_size = out.shape()[k + 2];
    source[k].resize(static_cast<size_t>(out_size));
    for (int64_t o = 0; o < out_size; ++o)
      source[k][o] = backend::pad_source(a.mode, o, a.before[k], size);
  }
  const RowWalk walk = row_walk(out, a.channels_last);
  const int row_dim = walk.order[4];
  const Strides &is = in.strides(), &os = out.strides();
  const T* x = in.data<T>();
  T* y = out.data<T>();
  parallel_units(walk.rows(), walk.row_length(), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const std::array<int64_t, 5> p = walk.position(r);
      std::array<int64_t, 5> src = p;
      for (int k = 0; k < 3; ++k) src[k + 2] = source[k][p[k + 2]];
      src[row_dim] = 0;  // the row's positions come from its own table below
      const int64_t in_base = offset(src, is);
      const int64_t out_base = offset(p, os);
      const int64_t n = walk.row_length(), ostep = os[row_dim], istep = is[row_dim];
      if (row_dim >= 2) {
        const std::vector<int64_t>& s = source[row_dim - 2];
        for (int64_t j = 0; j < n; ++j) y[out_base + j * ostep] = x[in_base + s[j] * istep];
      } else {
        for (int64_t j = 0; j < n; ++j) y[out_base + j * ostep] = x[in_base + j * istep];
      }
    }
  });
}

template <typename T>
void pad_backward_typed(const PadArgs& a, const Tensor& grad_in, const Tensor& grad_out) {
  using C = ComputeType<T>;
  // For each input position of spatial dim k, the output runs that read it.
  std::array<std::vector<OutputRuns>, 3> runs;
  for (int k = 0; k < 3; ++k) {
    const int64_t size = grad_in.shape()[k + 2], out_size = grad_out.shape()[k + 2];
    runs[k].resize(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i)
      runs[k][i] = backend::pad_outputs_reading(a.mode, i, a.before[k], size, out_size);
  }
  const RowWalk walk = row_walk(grad_in, a.channels_last);
  const int row_dim = walk.order[4];
  const Strides &gs = grad_out.strides(), &is = grad_in.strides();
  const T* dy = grad_out.data<T>();
  T* dx = grad_in.data<T>();
  parallel_units(walk.rows(), walk.row_length(), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      std::array<int64_t, 5> p = walk.position(r);
      for (int64_t j = 0; j < walk.row_length(); ++j) {
        p[row_dim] = j;
        const OutputRuns &rd = runs[0][p[2]], &rh = runs[1][p[3]], &rw = runs[2][p[4]];
        const int64_t base = p[0] * gs[0] + p[1] * gs[1];
        double sum = 0;
        for (int u = 0; u < rd.count; ++u)
          for (int64_t od = rd.first[u]; od < rd.end[u]; ++od)
            for (int v = 0; v < rh.count; ++v)
              for (int64_t oh = rh.first[v]; oh < rh.end[v]; ++oh)
                for (int w = 0; w < rw.count; ++w)
                  for (int64_t ow = rw.first[w]; ow < rw.end[w]; ++ow)
                    sum += static_cast<double>(
                        convert<C>(dy[base + od * gs[2] + oh * gs[3] + ow * gs[4]]));
        dx[offset(p, is)] = convert<T>(sum);
      }
    }
  });
}

template <typename T>
void interpolate_typed(const InterpolateArgs& a, const Tensor& out, const Tensor& in) {
  using A = ComputeType<T>;
  const int64_t n = in.shape()[0], c = in.shape()[1];
  const Plane pi{c, in.shape()[2], in.shape()[3], a.channels_last};
  const Plane po{c, out.shape()[2], out.shape()[3], a.channels_last};
  const ResampleAxis<A> rows = backend::resample_axis<A>(a, pi.height, po.height, a.scale_h);
  const ResampleAxis<A> cols = backend::resample_axis<A>(a, pi.width, po.width, a.scale_w);
  std::vector<Taps<A>> th(static_cast<size_t>(po.height)), tw(static_cast<size_t>(po.width));
  for (int64_t o = 0; o < po.height; ++o) th[o] = backend::resample_taps(rows, o);
  for (int64_t o = 0; o < po.width; ++o) tw[o] = backend::resample_taps(cols, o);
  const bool linear = a.mode == InterpolateMode::Linear;
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const int64_t xr = pi.row_step(), xc = pi.col_step(), yr = po.row_step(), yc = po.col_step();
  parallel_units(n * c, po.height * po.width * (linear ? 4 : 1), [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const T* xp = x + pi.base(p);
      T* yp = y + po.base(p);
      for (int64_t oh = 0; oh < po.height; ++oh) {
        const Taps<A>& h = th[oh];
        for (int64_t ow = 0; ow < po.width; ++ow) {
          const Taps<A>& w = tw[ow];
          if (!linear) {
            yp[oh * yr + ow * yc] = xp[h.i0 * xr + w.i0 * xc];
            continue;
          }
          const A v00 = convert<A>(xp[h.i0 * xr + w.i0 * xc]);
          const A v01 = convert<A>(xp[h.i0 * xr + w.i1 * xc]);
          const A v10 = convert<A>(xp[h.i1 * xr + w.i0 * xc]);
          const A v11 = convert<A>(xp[h.i1 * xr + w.i1 * xc]);
          yp[oh * yr + ow * yc] =
              convert<T>(h.l0 * (w.l0 * v00 + w.l1 * v01) + h.l1 * (w.l0 * v10 + w.l1 * v11));
        }
      }
    }
  });
}

// For each input position along one dim: the outputs that read it and their weights.
template <typename A>
struct Readers {
  std::vector<OutputSpan> span;  // by input position
  std::vector<Taps<A>> taps;     // by output position
};

template <typename A>
Readers<A> readers(const ResampleAxis<A>& axis) {
  Readers<A> r;
  r.span.resize(static_cast<size_t>(axis.in));
  r.taps.resize(static_cast<size_t>(axis.out));
  for (int64_t i = 0; i < axis.in; ++i) r.span[i] = backend::outputs_reading(axis, i);
  for (int64_t o = 0; o < axis.out; ++o) r.taps[o] = backend::resample_taps(axis, o);
  return r;
}

template <typename T>
void interpolate_backward_typed(const InterpolateArgs& a, const Tensor& grad_in,
                                const Tensor& grad_out) {
  using A = ComputeType<T>;
  const int64_t n = grad_in.shape()[0], c = grad_in.shape()[1];
  const Plane pi{c, grad_in.shape()[2], grad_in.shape()[3], a.channels_last};
  const Plane po{c, grad_out.shape()[2], grad_out.shape()[3], a.channels_last};
  const Readers<A> rows = readers(backend::resample_axis<A>(a, pi.height, po.height, a.scale_h));
  const Readers<A> cols = readers(backend::resample_axis<A>(a, pi.width, po.width, a.scale_w));
  const T* dy = grad_out.data<T>();
  T* dx = grad_in.data<T>();
  const int64_t xr = pi.row_step(), xc = pi.col_step(), yr = po.row_step(), yc = po.col_step();
  const int64_t cost = po.height * po.width * 4 + pi.height * pi.width;
  parallel_units(n * c, cost, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const T* gp = dy + po.base(p);
      T* xp = dx + pi.base(p);
      for (int64_t h = 0; h < pi.height; ++h) {
        const OutputSpan sh = rows.span[h];
        for (int64_t w = 0; w < pi.width; ++w) {
          const OutputSpan sw = cols.span[w];
          double sum = 0;
          for (int64_t oh = sh.first; oh < sh.end; ++oh) {
            const A wh = backend::tap_weight(rows.taps[oh], h);
            if (wh == A(0)) continue;
            double row = 0;
            for (int64_t ow = sw.first; ow < sw.end; ++ow) {
              const A ww = backend::tap_weight(cols.taps[ow], w);
              if (ww == A(0)) continue;
              row +=
                  static_cast<double>(ww) * static_cast<double>(convert<A>(gp[oh * yr + ow * yc]));
            }
            sum += static_cast<double>(wh) * row;
          }
          xp[h * xr + w * xc] = convert<T>(sum);
        }
      }
    }
  });
}

}  // namespace

void CpuBackend::pad(const PadArgs& args, const Tensor& out, const Tensor& in) {
  dispatch_all(in.dtype(), [&](auto tag) { pad_typed<decltype(tag)>(args, out, in); });
}

void CpuBackend::pad_backward(const PadArgs& args, const Tensor& grad_in, const Tensor& grad_out) {
  dispatch_floating(grad_in.dtype(), "pad_backward",
                    [&](auto tag) { pad_backward_typed<decltype(tag)>(args, grad_in, grad_out); });
}

void CpuBackend::interpolate(const InterpolateArgs& args, const Tensor& out, const Tensor& in) {
  dispatch_floating(in.dtype(), "interpolate",
                    [&](auto tag) { interpolate_typed<decltype(tag)>(args, out, in); });
}

void CpuBackend::interpolate_backward(const InterpolateArgs& args, const Tensor& grad_in,
                                      const Tensor& grad_out) {
  dispatch_floating(grad_in.dtype(), "interpolate_backward", [&](auto tag) {
    interpolate_backward_typed<decltype(tag)>(args, grad_in, grad_out);
  });
}

}  // namespace rcuda::cpu
