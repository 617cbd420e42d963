// layer_norm forward and backward on the CPU: a row per unit of work (OpenMP above the grain),
// statistics accumulated in double by two passes over the row (mean, then squared deviations).
// The normalised values are recomputed from the stored (rounded) statistics, as the GPU does.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

// float64 statistics for float64 input, float32 for the others (as torch).
template <typename T>
using StatsType = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
void layer_norm_typed(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                      const Tensor& weight, const Tensor& bias, double eps) {
  using C = ComputeType<T>;
  using S = StatsType<T>;
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  const T* x = in.data<T>();
  const T* w = weight.defined() ? weight.data<T>() : nullptr;
  const T* b = bias.defined() ? bias.data<T>() : nullptr;
  T* y = out.data<T>();
  S* mean_out = mean.data<S>();
  S* rstd_out = rstd.data<S>();
  parallel_units(rows, cols, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* row = x + r * cols;
      double sum = 0;
      for (int64_t j = 0; j < cols; ++j) sum += static_cast<double>(convert<C>(row[j]));
      const double m = sum / static_cast<double>(cols);
      double squares = 0;
      for (int64_t j = 0; j < cols; ++j) {
        const double d = static_cast<double>(convert<C>(row[j])) - m;
        squares += d * d;
      }
      const S mean_s = static_cast<S>(m);
      const S rstd_s = static_cast<S>(1.0 / std::sqrt(squares / static_cast<double>(cols) + eps));
      mean_out[r] = mean_s;
      rstd_out[r] = rstd_s;
      const C mc = static_cast<C>(mean_s), rc = static_cast<C>(rstd_s);
      T* out_row = y + r * cols;
      for (int64_t j = 0; j < cols; ++j) {
        C v = (convert<C>(row[j]) - mc) * rc;
        if (w) v *= convert<C>(w[j]);
        if (b) v += convert<C>(b[j]);
        out_row[j] = convert<T>(v);
      }
    }
  });
}

template <typename T>
void layer_norm_backward_typed(const Tensor& grad_in, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                               const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  using C = ComputeType<T>;
  using S = StatsType<T>;
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  const T* x = in.data<T>();
  const T* dy = grad_out.data<T>();
  const T* w = weight.defined() ? weight.data<T>() : nullptr;
  const S* mean_in = mean.data<S>();
  const S* rstd_in = rstd.data<S>();
  auto xhat = [&](int64_t r, int64_t j) {
    return (static_cast<double>(convert<C>(x[r * cols + j])) - static_cast<double>(mean_in[r])) *
           static_cast<double>(rstd_in[r]);
  };
  auto scaled_grad = [&](int64_t r, int64_t j) {  // dy * w
    const double g = static_cast<double>(convert<C>(dy[r * cols + j]));
    return w ? g * static_cast<double>(convert<C>(w[j])) : g;
  };
  if (grad_in.defined()) {
    T* dx = grad_in.data<T>();
    // dx = rstd * (dy w - mean(dy w) - xhat * mean(dy w xhat)).
    parallel_units(rows, cols, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        double sum = 0, sum_xhat = 0;
        for (int64_t j = 0; j < cols; ++j) {
          const double g = scaled_grad(r, j);
          sum += g;
          sum_xhat += g * xhat(r, j);
        }
        const double n = static_cast<double>(cols), rs = static_cast<double>(rstd_in[r]);
        for (int64_t j = 0; j < cols; ++j)
          dx[r * cols + j] =
              convert<T>(rs * (scaled_grad(r, j) - sum / n - xhat(r, j) * sum_xhat / n));
      }
    });
  }
  if (!grad_weight.defined() && !grad_bias.defined()) return;
  // Column strips, each summed over every row in row order: no partial buffers, and the same
  // result for any number of threads.
  constexpr int64_t kStrip = 64;
  const int64_t strips = (cols + kStrip - 1) / kStrip;
  T* dw = grad_weight.defined() ? grad_weight.data<T>() : nullptr;
  T* db = grad_bias.defined() ? grad_bias.data<T>() : nullptr;
  parallel_units(strips, rows * kStrip, [&](int64_t first, int64_t last) {
    for (int64_t strip = first; strip < last; ++strip) {
      const int64_t j0 = strip * kStrip, j1 = std::min(cols, j0 + kStrip);
      double sum_w[kStrip] = {}, sum_b[kStrip] = {};
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = j0; j < j1; ++j) {
          const double g = static_cast<double>(convert<C>(dy[r * cols + j]));
          sum_w[j - j0] += g * xhat(r, j);
          sum_b[j - j0] += g;
        }
      for (int64_t j = j0; j < j1; ++j) {
        if (dw) dw[j] = convert<T>(sum_w[j - j0]);
        if (db) db[j] = convert<T>(sum_b[j - j0]);
      }
    }
  });
}

}  // namespace

void CpuBackend::layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                            const Tensor& in, const Tensor& weight, const Tensor& bias,
                            double eps) {
  dispatch_floating(in.dtype(), "layer_norm", [&](auto tag) {
    layer_norm_typed<decltype(tag)>(out, mean, rstd, in, weight, bias, eps);
  });
}

void CpuBackend::layer_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                     const Tensor& grad_bias, const Tensor& grad_out,
                                     const Tensor& in, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& weight) {
  dispatch_floating(in.dtype(), "layer_norm_backward", [&](auto tag) {
    layer_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, mean,
                                             rstd, weight);
  });
}

}  // namespace rcuda::cpu
