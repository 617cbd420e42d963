// Cross-entropy fused with log-softmax on the CPU, for class-index and probability targets
// (the formulas are in backend.h's contract). A row per unit of work, in double: the row's
// max, logsumexp, and the weighted sums the label-smoothed loss needs, then the loss.
#include <cmath>
#include <type_traits>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

template <typename T>
using StatsType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A t outside [0, classes) that is not ignore_index: IndexError, before anything is written.
void check_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  const int64_t* t = target.data<int64_t>();
  for (int64_t r = 0; r < target.numel(); ++r)
    RCUDA_CHECK(t[r] == ignore_index || (t[r] >= 0 && t[r] < classes), IndexError,
                "cross_entropy: target ", t[r], " is out of bounds for ", classes, " classes (row ",
                r, "; ignore_index is ", ignore_index, ")");
}

template <typename T>
struct Row {
  const T* z;
  int64_t classes;
  double value(int64_t c) const { return static_cast<double>(convert<ComputeType<T>>(z[c])); }
  double logsumexp() const {
    double max = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) max = std::fmax(max, value(c));
    if (std::isinf(max)) return max;  // all -inf, or a +inf: as log(sum(exp)) gives
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(value(c) - max);
    return max + std::log(sum);
  }
};

template <typename T>
void cross_entropy_typed(const Tensor& loss, const Tensor& row_weight, const Tensor& logsumexp,
                         const Tensor& logits, const Tensor& target, const Tensor& weight,
                         int64_t ignore_index, double smoothing) {
  using S = StatsType<T>;
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const bool indices = target.dtype() == DType::Int64;
  if (indices) check_targets(target, classes, ignore_index);
  const T* z = logits.data<T>();
  const T* w = weight.defined() ? weight.data<T>() : nullptr;
  auto w_at = [&](int64_t c) {
    return w ? static_cast<double>(convert<ComputeType<T>>(w[c])) : 1.0;
  };
  S* loss_out = loss.data<S>();
  S* lse_out = logsumexp.data<S>();
  const double n = static_cast<double>(classes);
  parallel_units(rows, classes, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      if (indices && target.data<int64_t>()[r] == ignore_index) {  // the backward writes 0
        loss_out[r] = 0;
        row_weight.data<S>()[r] = 0;
        lse_out[r] = 0;
        continue;
      }
      const Row<T> row{z + r * classes, classes};
      const double lse = row.logsumexp();
      lse_out[r] = static_cast<S>(lse);
      double value = 0;
      if (indices) {
        const int64_t t = target.data<int64_t>()[r];
        value = (1 - smoothing) * w_at(t) * (lse - row.value(t));
        if (smoothing > 0) {
          double smooth = 0;
          for (int64_t c = 0; c < classes; ++c) smooth += w_at(c) * (lse - row.value(c));
          value += smoothing / n * smooth;
        }
        row_weight.data<S>()[r] = static_cast<S>(w_at(t));
      } else {
        const T* p = target.data<T>() + r * classes;
        for (int64_t c = 0; c < classes; ++c) {
          const double tc =
              (1 - smoothing) * static_cast<double>(convert<ComputeType<T>>(p[c])) + smoothing / n;
          value += w_at(c) * tc * (lse - row.value(c));
        }
      }
      loss_out[r] = static_cast<S>(value);
    }
  });
}

template <typename T>
void cross_entropy_backward_typed(const Tensor& grad_logits, const Tensor& grad_loss,
                                  const Tensor& divisor, const Tensor& logits, const Tensor& target,
                                  const Tensor& weight, const Tensor& logsumexp,
                                  int64_t ignore_index, double smoothing) {
  using C = ComputeType<T>;
  using S = StatsType<T>;
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const bool indices = target.dtype() == DType::Int64;
  if (indices) check_targets(target, classes, ignore_index);
  const T* z = logits.data<T>();
  const T* w = weight.defined() ? weight.data<T>() : nullptr;
  auto w_at = [&](int64_t c) { return w ? static_cast<double>(convert<C>(w[c])) : 1.0; };
  const S* lse_in = logsumexp.data<S>();
  const char* grad_base = static_cast<const char*>(grad_loss.data_ptr());
  const int64_t grad_stride =
      grad_loss.strides()[0] * static_cast<int64_t>(grad_loss.element_size());
  const double divide_by = divisor.defined() ? static_cast<double>(*divisor.data<S>()) : 1.0;
  double weight_total = 0;  // sum_c w[c], for the label-smoothed term
  for (int64_t c = 0; c < classes; ++c) weight_total += w_at(c);
  T* dz = grad_logits.data<T>();
  const double n = static_cast<double>(classes);
  parallel_units(rows, classes, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const double scale = static_cast<double>(convert<C>(
                               *reinterpret_cast<const T*>(grad_base + r * grad_stride))) /
                           divide_by;
      const T* zr = z + r * classes;
      T* out = dz + r * classes;
      const double lse = static_cast<double>(lse_in[r]);
      auto softmax = [&](int64_t c) {
        return std::exp(static_cast<double>(convert<C>(zr[c])) - lse);
      };
      if (indices) {
        const int64_t t = target.data<int64_t>()[r];
        if (t == ignore_index) {
          for (int64_t c = 0; c < classes; ++c) out[c] = convert<T>(0.0);
          continue;
        }
        const double target_part = (1 - smoothing) * w_at(t);
        const double softmax_part = target_part + smoothing / n * weight_total;
        for (int64_t c = 0; c < classes; ++c) {
          double g = softmax(c) * softmax_part - smoothing / n * w_at(c);
          if (c == t) g -= target_part;
          out[c] = convert<T>(scale * g);
        }
      } else {
        const T* p = target.data<T>() + r * classes;
        auto smoothed = [&](int64_t c) {
          return (1 - smoothing) * static_cast<double>(convert<C>(p[c])) + smoothing / n;
        };
        double mass = 0;  // sum_c w[c] t'[c]
        for (int64_t c = 0; c < classes; ++c) mass += w_at(c) * smoothed(c);
        for (int64_t c = 0; c < classes; ++c)
          out[c] = convert<T>(scale * (softmax(c) * mass - w_at(c) * smoothed(c)));
      }
    }
  });
}

}  // namespace

void CpuBackend::cross_entropy(const Tensor& loss, const Tensor& row_weight,
                               const Tensor& logsumexp, const Tensor& logits, const Tensor& target,
                               const Tensor& weight, int64_t ignore_index, double label_smoothing) {
  dispatch_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    cross_entropy_typed<decltype(tag)>(loss, row_weight, logsumexp, logits, target, weight,
                                       ignore_index, label_smoothing);
  });
}

void CpuBackend::cross_entropy_backward(const Tensor& grad_logits, const Tensor& grad_loss,
                                        const Tensor& divisor, const Tensor& logits,
                                        const Tensor& target, const Tensor& weight,
                                        const Tensor& logsumexp, int64_t ignore_index,
                                        double label_smoothing) {
  dispatch_floating(logits.dtype(), "cross_entropy_backward", [&](auto tag) {
    cross_entropy_backward_typed<decltype(tag)>(grad_logits, grad_loss, divisor, logits, target,
                                                weight, logsumexp, ignore_index, label_smoothing);
  });
}

}  // namespace rcuda::cpu
