// float64 convolutions through im2col and OpenBLAS dgemm (Note [float64 convolutions] in
// conv_cpu.h). Per image n and group g, with K = C/groups * KH * KW and P = OH * OW:
//   forward          out[n, g] [O/groups, P] = weight[g] [O/groups, K] @ col [K, P]
//   backward input   col = weight[g]^T @ grad_out[n, g], then col2im adds it into grad_in[n, g]
//   backward weight  grad_weight[g] += grad_out[n, g] @ col^T
// where col = im2col(in[n, g]) holds each output position's receptive field in a column (zeros
// where the field lies in the padding). Operands in channels-last layout are copied into
// contiguous ones first; the GEMMs dominate the cost.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "conv_cpu.h"
#include "rcuda/backend/backend.h"
#include "rcuda/core/error.h"

namespace rcuda::cpu {
namespace {

using ConvArgs = Backend::ConvArgs;

// The sizes of one convolution, from the three tensors' shapes.
struct Geometry {
  int64_t n, c, h, w, o, kh, kw, oh, ow, groups;
  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  int64_t k() const { return cg() * kh * kw; }  // rows of col
  int64_t p() const { return oh * ow; }         // columns of col
};

Geometry geometry(const Tensor& image, const Tensor& weight, const Tensor& result,
                  const ConvArgs& a) {
  return {image.size(0),  image.size(1),  image.size(2),  image.size(3),  weight.size(0),
          weight.size(2), weight.size(3), result.size(2), result.size(3), a.groups};
}

void check_blas_sizes(const Geometry& g) {
  for (int64_t v : {g.og(), g.k(), g.p()})
    RCUDA_CHECK(v <= INT_MAX, ValueError, "conv2d (float64): a matrix dimension of ", v,
                " exceeds OpenBLAS's int range");
}

// A contiguous copy of t, or t itself when it already is contiguous.
Tensor contiguous_f64(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = Tensor::empty(t.shape(), DType::Float64);
  backend_for(Device()).copy(c, t);
  return c;
}

// Where a result is written: out itself when contiguous, else a temporary copied in at the end.
struct Output {
  const Tensor& target;
  Tensor buffer;
  explicit Output(const Tensor& t)
      : target(t), buffer(t.is_contiguous() ? t : Tensor::empty(t.shape(), DType::Float64)) {}
  double* data() const { return buffer.data<double>(); }
  void finish() const {
    if (!buffer.is_same(target)) backend_for(Device()).copy(target, buffer);
  }
};

// col [K, P] of one image's group: x points at its first channel [C/groups, H, W].
void im2col(const double* x, double* col, const Geometry& g, const ConvArgs& a) {
  for (int64_t c = 0; c < g.cg(); ++c)
    for (int64_t r = 0; r < g.kh; ++r)
      for (int64_t s = 0; s < g.kw; ++s) {
        double* row = col + ((c * g.kh + r) * g.kw + s) * g.p();
        for (int64_t i = 0; i < g.oh; ++i) {
          const int64_t y = i * a.stride[0] - a.padding[0] + r * a.dilation[0];
          for (int64_t j = 0; j < g.ow; ++j) {
            const int64_t xx = j * a.stride[1] - a.padding[1] + s * a.dilation[1];
            const bool inside = y >= 0 && y < g.h && xx >= 0 && xx < g.w;
            row[i * g.ow + j] = inside ? x[(c * g.h + y) * g.w + xx] : 0.0;
          }
        }
      }
}

// The adjoint of im2col: adds each column entry back where it was read from.
void col2im(const double* col, double* x, const Geometry& g, const ConvArgs& a) {
  for (int64_t c = 0; c < g.cg(); ++c)
    for (int64_t r = 0; r < g.kh; ++r)
      for (int64_t s = 0; s < g.kw; ++s) {
        const double* row = col + ((c * g.kh + r) * g.kw + s) * g.p();
        for (int64_t i = 0; i < g.oh; ++i) {
          const int64_t y = i * a.stride[0] - a.padding[0] + r * a.dilation[0];
          if (y < 0 || y >= g.h) continue;
          for (int64_t j = 0; j < g.ow; ++j) {
            const int64_t xx = j * a.stride[1] - a.padding[1] + s * a.dilation[1];
            if (xx >= 0 && xx < g.w) x[(c * g.h + y) * g.w + xx] += row[i * g.ow + j];
          }
        }
      }
}

int blas(int64_t v) { return static_cast<int>(v); }

}  // namespace

void conv2d_f64(const Tensor& out, const Tensor& in, const Tensor& weight, const ConvArgs& a) {
  const Geometry g = geometry(in, weight, out, a);
  check_blas_sizes(g);
  const Tensor x = contiguous_f64(in), w = contiguous_f64(weight);
  const Output y(out);
  std::vector<double> col(static_cast<size_t>(g.k() * g.p()));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      im2col(x.data<double>() + (n * g.c + grp * g.cg()) * g.h * g.w, col.data(), g, a);
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas(g.og()), blas(g.p()), blas(g.k()),
                  1.0, w.data<double>() + grp * g.og() * g.k(), blas(g.k()), col.data(),
                  blas(g.p()), 0.0, y.data() + (n * g.o + grp * g.og()) * g.p(), blas(g.p()));
    }
  y.finish();
}

void conv2d_backward_input_f64(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight,
                               const ConvArgs& a) {
  const Geometry g = geometry(grad_in, weight, grad_out, a);
  check_blas_sizes(g);
  const Tensor dy = contiguous_f64(grad_out), w = contiguous_f64(weight);
  const Output dx(grad_in);
  std::fill(dx.data(), dx.data() + grad_in.numel(), 0.0);
  std::vector<double> col(static_cast<size_t>(g.k() * g.p()));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, blas(g.k()), blas(g.p()), blas(g.og()),
                  1.0, w.data<double>() + grp * g.og() * g.k(), blas(g.k()),
                  dy.data<double>() + (n * g.o + grp * g.og()) * g.p(), blas(g.p()), 0.0,
                  col.data(), blas(g.p()));
      col2im(col.data(), dx.data() + (n * g.c + grp * g.cg()) * g.h * g.w, g, a);
    }
  dx.finish();
}

void conv2d_backward_weight_f64(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& in,
                                const ConvArgs& a) {
  const Geometry g = geometry(in, grad_weight, grad_out, a);
  check_blas_sizes(g);
  const Tensor dy = contiguous_f64(grad_out), x = contiguous_f64(in);
  const Output dw(grad_weight);
  std::vector<double> col(static_cast<size_t>(g.k() * g.p()));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      im2col(x.data<double>() + (n * g.c + grp * g.cg()) * g.h * g.w, col.data(), g, a);
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas(g.og()), blas(g.k()), blas(g.p()),
                  1.0, dy.data<double>() + (n * g.o + grp * g.og()) * g.p(), blas(g.p()),
                  col.data(), blas(g.p()), n == 0 ? 0.0 : 1.0, dw.data() + grp * g.og() * g.k(),
                  blas(g.k()));
    }
  dw.finish();
}

}  // namespace rcuda::cpu
