// group_norm and group_norm_backward on the CPU, PyTorch's algorithm (docs/pooling-
// normalization.md, "Group norm"): a (sample, group) per unit of work, double accumulation.
// The backward first reduces each (sample, channel) to sum(dy) and sum(dy * (x - mean)) (the
// centred form, which does not cancel when the mean is large against the spread), then forms
// the input gradient per group, and sums the weight and bias gradients over the samples in
// order (deterministic for any number of threads).
#include <cmath>
#include <vector>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"
#include "norm_layout.h"

namespace rcuda::cpu {
namespace {

template <typename T>
void group_norm_typed(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                      const Tensor& weight, const Tensor& bias, int64_t groups, double eps) {
  using S = NormStatsType<T>;
  const NormLayout l(in);
  const int64_t per_group = l.c / groups;
  const double count = static_cast<double>(per_group * l.s);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const S *w = optional_data<S>(weight), *b = optional_data<S>(bias);
  S *mean_out = mean.data<S>(), *rstd_out = rstd.data<S>();
  parallel_units(l.n * groups, 3 * per_group * l.s, [&](int64_t first, int64_t last) {
    for (int64_t unit = first; unit < last; ++unit) {
      const int64_t n = unit / groups, c0 = (unit % groups) * per_group;
      auto value = [&](int64_t c, int64_t s) {
        return static_cast<double>(convert<S>(x[l.offset(n, c, s)]));
      };
      double sum = 0;
      for (int64_t c = c0; c < c0 + per_group; ++c)
        for (int64_t s = 0; s < l.s; ++s) sum += value(c, s);
      const double m = sum / count;
      double squares = 0;
      for (int64_t c = c0; c < c0 + per_group; ++c)
        for (int64_t s = 0; s < l.s; ++s) squares += (value(c, s) - m) * (value(c, s) - m);
      const S mean_s = static_cast<S>(m);
      const S rstd_s = static_cast<S>(1.0 / std::sqrt(squares / count + eps));
      mean_out[unit] = mean_s;
      rstd_out[unit] = rstd_s;
      for (int64_t c = c0; c < c0 + per_group; ++c) {
        const S wc = w ? w[c] : S(1), bc = b ? b[c] : S(0);
        for (int64_t s = 0; s < l.s; ++s) {
          const int64_t o = l.offset(n, c, s);
          y[o] = convert<T>((convert<S>(x[o]) - mean_s) * rstd_s * wc + bc);
        }
      }
    }
  });
}

template <typename T>
void group_norm_backward_typed(const Tensor& grad_in, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                               const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                               int64_t groups) {
  using S = NormStatsType<T>;
  const NormLayout l(in);
  const int64_t per_group = l.c / groups;
  const double count = static_cast<double>(per_group * l.s);
  const T *x = in.data<T>(), *dy = grad_out.data<T>();
  const S* w = optional_data<S>(weight);
  const S *mean_in = mean.data<S>(), *rstd_in = rstd.data<S>();
  T* dx = grad_in.defined() ? grad_in.data<T>() : nullptr;
  // Per (sample, channel): sum(dy) and sum(dy * (x - mean)).
  std::vector<double> sum_dy(static_cast<size_t>(l.n * l.c)), sum_dy_xmu(sum_dy.size());
  parallel_units(l.n * groups, 3 * per_group * l.s, [&](int64_t first, int64_t last) {
    for (int64_t unit = first; unit < last; ++unit) {
      const int64_t n = unit / groups, c0 = (unit % groups) * per_group;
      const double m = static_cast<double>(mean_in[unit]), r = static_cast<double>(rstd_in[unit]);
      double group_dy_w = 0, group_dy_w_xhat = 0;  // sums of dxhat and dxhat * xhat
      for (int64_t c = c0; c < c0 + per_group; ++c) {
        double a = 0, b = 0;
        for (int64_t s = 0; s < l.s; ++s) {
          const int64_t o = l.offset(n, c, s);
          const double g = static_cast<double>(convert<S>(dy[o]));
          a += g;
          b += g * (static_cast<double>(convert<S>(x[o])) - m);
        }
        sum_dy[n * l.c + c] = a;
        sum_dy_xmu[n * l.c + c] = b;
        const double wc = w ? static_cast<double>(w[c]) : 1.0;
        group_dy_w += a * wc;
        group_dy_w_xhat += b * wc * r;
      }
      if (!dx) continue;
      // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) over the group.
      const double mean_g = group_dy_w / count, mean_gx = group_dy_w_xhat / count;
      for (int64_t c = c0; c < c0 + per_group; ++c) {
        const double wc = w ? static_cast<double>(w[c]) : 1.0;
        for (int64_t s = 0; s < l.s; ++s) {
          const int64_t o = l.offset(n, c, s);
          const double xhat = (static_cast<double>(convert<S>(x[o])) - m) * r;
          const double g = static_cast<double>(convert<S>(dy[o])) * wc;
          dx[o] = convert<T>(r * (g - mean_g - xhat * mean_gx));
        }
      }
    }
  });
  if (!grad_weight.defined() && !grad_bias.defined()) return;
  S* dw = grad_weight.defined() ? grad_weight.data<S>() : nullptr;
  S* db = grad_bias.defined() ? grad_bias.data<S>() : nullptr;
  for (int64_t c = 0; c < l.c; ++c) {
    double a = 0, b = 0;
    for (int64_t n = 0; n < l.n; ++n) {
      a += sum_dy[n * l.c + c];
      b += sum_dy_xmu[n * l.c + c] * static_cast<double>(rstd_in[n * groups + c / per_group]);
    }
    if (db) db[c] = static_cast<S>(a);
    if (dw) dw[c] = static_cast<S>(b);
  }
}

}  // namespace

void CpuBackend::group_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                            const Tensor& in, const Tensor& weight, const Tensor& bias,
                            int64_t groups, double eps) {
  dispatch_floating(in.dtype(), "group_norm", [&](auto tag) {
    group_norm_typed<decltype(tag)>(out, mean, rstd, in, weight, bias, groups, eps);
  });
}

void CpuBackend::group_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                     const Tensor& grad_bias, const Tensor& grad_out,
                                     const Tensor& in, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& weight, int64_t groups) {
  dispatch_floating(in.dtype(), "group_norm_backward", [&](auto tag) {
    group_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, mean,
                                             rstd, weight, groups);
  });
}

}  // namespace rcuda::cpu
