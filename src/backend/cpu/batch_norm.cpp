// batch_norm and batch_norm_backward on the CPU: float32 through oneDNN's
// batch_normalization (batch_norm_onednn.cpp), float64 and the half types through the loops
// here, a channel per unit of work with double accumulation (two passes: mean, then squared
// deviations). The running statistics are updated here for both paths, with PyTorch's formula.
#include <cmath>
#include <vector>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"
#include "norm_layout.h"
#include "onednn.h"

namespace rcuda::cpu {
namespace {

// running = (1 - momentum) running + momentum * batch statistic, the variance unbiased.
template <typename S>
void update_running(const Tensor& running_mean, const Tensor& running_var, int64_t channel,
                    double mean, double biased_var, int64_t count, double momentum) {
  if (running_mean.defined()) {
    S& r = running_mean.data<S>()[channel];
    r = static_cast<S>((1 - momentum) * static_cast<double>(r) + momentum * mean);
  }
  if (running_var.defined()) {
    const double unbiased =
        biased_var * static_cast<double>(count) / static_cast<double>(count - 1);
    S& r = running_var.data<S>()[channel];
    r = static_cast<S>((1 - momentum) * static_cast<double>(r) + momentum * unbiased);
  }
}

template <typename T>
void batch_norm_typed(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& in,
                      const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                      const Tensor& running_var, bool training, double momentum, double eps) {
  using S = NormStatsType<T>;  // also the compute type: float for the half types
  const NormLayout l(in);
  const int64_t count = l.n * l.s;
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const S *w = optional_data<S>(weight), *b = optional_data<S>(bias);
  parallel_units(l.c, 3 * count, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      auto value = [&](int64_t n, int64_t s) {
        return static_cast<double>(convert<S>(x[l.offset(n, c, s)]));
      };
      if (training) {
        double sum = 0;
        for (int64_t n = 0; n < l.n; ++n)
          for (int64_t s = 0; s < l.s; ++s) sum += value(n, s);
        const double m = sum / static_cast<double>(count);
        double squares = 0;
        for (int64_t n = 0; n < l.n; ++n)
          for (int64_t s = 0; s < l.s; ++s) squares += (value(n, s) - m) * (value(n, s) - m);
        const double var = squares / static_cast<double>(count);
        mean.data<S>()[c] = static_cast<S>(m);
        invstd.data<S>()[c] = static_cast<S>(1.0 / std::sqrt(var + eps));
        update_running<S>(running_mean, running_var, c, m, var, count, momentum);
      }
      const S mc = mean.data<S>()[c], rc = invstd.data<S>()[c];
      const S wc = w ? w[c] : S(1), bc = b ? b[c] : S(0);
      for (int64_t n = 0; n < l.n; ++n)
        for (int64_t s = 0; s < l.s; ++s) {
          const int64_t o = l.offset(n, c, s);
          y[o] = convert<T>((convert<S>(x[o]) - mc) * rc * wc + bc);
        }
    }
  });
}

template <typename T>
void batch_norm_backward_typed(const Tensor& grad_in, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                               const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                               bool batch_stats) {
  using S = NormStatsType<T>;
  const NormLayout l(in);
  const double count = static_cast<double>(l.n * l.s);
  const T *x = in.data<T>(), *dy = grad_out.data<T>();
  const S* w = optional_data<S>(weight);
  T* dx = grad_in.defined() ? grad_in.data<T>() : nullptr;
  parallel_units(l.c, 3 * l.n * l.s, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const double m = static_cast<double>(mean.data<S>()[c]);
      const double r = static_cast<double>(invstd.data<S>()[c]);
      double sum_dy = 0, sum_dy_xmu = 0;
      for (int64_t n = 0; n < l.n; ++n)
        for (int64_t s = 0; s < l.s; ++s) {
          const int64_t o = l.offset(n, c, s);
          const double g = static_cast<double>(convert<S>(dy[o]));
          sum_dy += g;
          sum_dy_xmu += g * (static_cast<double>(convert<S>(x[o])) - m);
        }
      if (grad_weight.defined()) grad_weight.data<S>()[c] = static_cast<S>(sum_dy_xmu * r);
      if (grad_bias.defined()) grad_bias.data<S>()[c] = static_cast<S>(sum_dy);
      if (!dx) continue;
      const double scale = r * (w ? static_cast<double>(w[c]) : 1.0);
      // With batch statistics the mean and variance depend on x: PyTorch's projection terms.
      const double mean_dy = batch_stats ? sum_dy / count : 0;
      const double projection = batch_stats ? sum_dy_xmu * r * r / count : 0;
      for (int64_t n = 0; n < l.n; ++n)
        for (int64_t s = 0; s < l.s; ++s) {
          const int64_t o = l.offset(n, c, s);
          const double xmu = static_cast<double>(convert<S>(x[o])) - m;
          const double g = static_cast<double>(convert<S>(dy[o]));
          dx[o] = convert<T>((g - mean_dy - xmu * projection) * scale);
        }
    }
  });
}

}  // namespace

void CpuBackend::batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd,
                            const Tensor& in, const Tensor& weight, const Tensor& bias,
                            const Tensor& running_mean, const Tensor& running_var, bool training,
                            double momentum, double eps) {
  if (in.dtype() == DType::Float32) {
    const int64_t channels = in.shape()[1], count = in.shape()[0] * in.shape()[2];
    // oneDNN returns the batch's biased variance: the running update reads it, exact.
    const Tensor var = training ? Tensor::empty({channels}, DType::Float32) : Tensor();
    if (onednn::try_batch_norm(out, mean, var, invstd, in, weight, bias, training, eps)) {
      if (!training) return;
      const float* v = var.data<float>();
      float* r = invstd.data<float>();
      for (int64_t c = 0; c < channels; ++c) {
        r[c] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(v[c]) + eps));
        update_running<float>(running_mean, running_var, c, mean.data<float>()[c], v[c], count,
                              momentum);
      }
      return;
    }
  }
  dispatch_floating(in.dtype(), "batch_norm", [&](auto tag) {
    batch_norm_typed<decltype(tag)>(out, mean, invstd, in, weight, bias, running_mean, running_var,
                                    training, momentum, eps);
  });
}

void CpuBackend::batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                     const Tensor& grad_bias, const Tensor& grad_out,
                                     const Tensor& in, const Tensor& mean, const Tensor& invstd,
                                     const Tensor& weight, bool batch_stats) {
  if (in.dtype() == DType::Float32 &&
      onednn::try_batch_norm_backward(grad_in, grad_weight, grad_bias, grad_out, in, mean, invstd,
                                      weight, batch_stats))
    return;
  dispatch_floating(in.dtype(), "batch_norm_backward", [&](auto tag) {
    batch_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, mean,
                                             invstd, weight, batch_stats);
  });
}

}  // namespace rcuda::cpu
