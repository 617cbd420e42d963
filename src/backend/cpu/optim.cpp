// Optimizer primitives on the CPU (Note [Optimizer primitives] in rcuda/backend/backend.h): one
// OpenMP loop per tensor over the element updates of backend/optim_math.h, which the CUDA
// multi-tensor kernels share.
#include <omp.h>
#include <atomic>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include "backend/optim_math.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

namespace om = backend::optim_math;

template <typename T>
T* data_or_null(const Backend::TensorList& list, size_t i) {
  return list.empty() ? nullptr : list[i].data<T>();
}

// Runs update(param, grad, state0, state1, state2, i_tensor) on every element of tensor i, in
// ComputeType; a missing state list gives a scratch value the update does not use.
template <typename T, typename Update>
void for_each_element(const Backend::TensorList& params, const Backend::TensorList& grads,
                      const Backend::TensorList& s0, const Backend::TensorList& s1,
                      const Backend::TensorList& s2, Update update) {
  using C = ComputeType<T>;
  for (size_t i = 0; i < params.size(); ++i) {
    T* param = params[i].data<T>();
    const T* grad = grads[i].data<T>();
    T* a = data_or_null<T>(s0, i);
    T* b = data_or_null<T>(s1, i);
    T* c = data_or_null<T>(s2, i);
    parallel_range(params[i].numel(), [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        C p = convert<C>(param[e]);
        C x = a ? convert<C>(a[e]) : C(0), y = b ? convert<C>(b[e]) : C(0),
          z = c ? convert<C>(c[e]) : C(0);
        update(p, convert<C>(grad[e]), x, y, z, i);
        param[e] = convert<T>(p);
        if (a) a[e] = convert<T>(x);
        if (b) b[e] = convert<T>(y);
        if (c) c[e] = convert<T>(z);
      }
    });
  }
}

const Backend::TensorList kNone;

}  // namespace

void CpuBackend::sgd_step(const TensorList& params, const TensorList& grads,
                          const TensorList& momentum_buffers, const SgdStep& args) {
  if (params.empty()) return;
  dispatch_floating(params[0].dtype(), "sgd_step", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    const om::SgdConstants<C> k(args);
    for_each_element<T>(
        params, grads, momentum_buffers, kNone, kNone,
        [&](C& p, C g, C& buffer, C&, C&, size_t) { om::sgd_update(p, g, buffer, k); });
  });
}

void CpuBackend::adam_step(const TensorList& params, const TensorList& grads,
                           const TensorList& exp_avgs, const TensorList& exp_avg_sqs,
                           const TensorList& max_exp_avg_sqs, const std::vector<int64_t>& steps,
                           const AdamStep& args) {
  if (params.empty()) return;
  std::vector<double> step_size(params.size()), bias_correction2_sqrt(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    step_size[i] = om::adam_step_size(args.lr, args.beta1, steps[i]);
    bias_correction2_sqrt[i] = om::adam_bias_correction2_sqrt(args.beta2, steps[i]);
  }
  dispatch_floating(params[0].dtype(), "adam_step", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    const om::AdamConstants<C> k(args);
    for_each_element<T>(
        params, grads, exp_avgs, exp_avg_sqs, args.amsgrad ? max_exp_avg_sqs : kNone,
        [&](C& p, C g, C& m, C& v, C& v_max, size_t i) {
          om::adam_update(p, g, m, v, v_max, k, C(step_size[i]), C(bias_correction2_sqrt[i]));
        });
  });
}

void CpuBackend::rmsprop_step(const TensorList& params, const TensorList& grads,
                              const TensorList& square_avgs, const TensorList& momentum_buffers,
                              const TensorList& grad_avgs, const RmspropStep& args) {
  if (params.empty()) return;
  dispatch_floating(params[0].dtype(), "rmsprop_step", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    const om::RmspropConstants<C> k(args);
    for_each_element<T>(params, grads, square_avgs, k.has_momentum ? momentum_buffers : kNone,
                        args.centered ? grad_avgs : kNone,
                        [&](C& p, C g, C& square_avg, C& buffer, C& grad_avg, size_t) {
                          om::rmsprop_update(p, g, square_avg, buffer, grad_avg, k);
                        });
  });
}

void CpuBackend::adagrad_step(const TensorList& params, const TensorList& grads,
                              const TensorList& state_sums, const std::vector<int64_t>& steps,
                              const AdagradStep& args) {
  if (params.empty()) return;
  std::vector<double> learning_rate(params.size());
  for (size_t i = 0; i < params.size(); ++i)
    learning_rate[i] = om::adagrad_learning_rate(args.lr, args.lr_decay, steps[i]);
  dispatch_floating(params[0].dtype(), "adagrad_step", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    const om::AdagradConstants<C> k(args);
    for_each_element<T>(params, grads, state_sums, kNone, kNone,
                        [&](C& p, C g, C& state_sum, C&, C&, size_t i) {
                          om::adagrad_update(p, g, state_sum, k, C(learning_rate[i]));
                        });
  });
}

namespace {

// The p-norm's running value over one range: sum of |x|^p, or max |x| for p = inf (NaN wins).
template <typename T>
double norm_partial(const T* x, int64_t begin, int64_t end, double p) {
  double acc = 0;
  if (std::isinf(p)) {
    for (int64_t e = begin; e < end; ++e) acc = om::maximum(acc, std::fabs(convert<double>(x[e])));
  } else if (p == 2) {
    for (int64_t e = begin; e < end; ++e) {
      const double v = convert<double>(x[e]);
      acc += v * v;
    }
  } else if (p == 1) {
    for (int64_t e = begin; e < end; ++e) acc += std::fabs(convert<double>(x[e]));
  } else {
    for (int64_t e = begin; e < end; ++e) acc += std::pow(std::fabs(convert<double>(x[e])), p);
  }
  return acc;
}

}  // namespace

void CpuBackend::multi_tensor_norm(const TensorList& tensors, double p, const Tensor& total_norm) {
  const bool is_max = std::isinf(p);
  double total = 0;
  for (const Tensor& t : tensors) {
    dispatch_floating(t.dtype(), "multi_tensor_norm", [&](auto tag) {
      using T = decltype(tag);
      const T* x = t.data<T>();
      // Partials keyed by their range's start and combined in that order: the same bits for
      // a given thread count.
      std::vector<std::pair<int64_t, double>> partials;
      std::mutex mutex;
      parallel_range(t.numel(), [&](int64_t begin, int64_t end) {
        const double partial = norm_partial(x, begin, end, p);
        const std::lock_guard<std::mutex> lock(mutex);
        partials.emplace_back(begin, partial);
      });
      std::sort(partials.begin(), partials.end());
      for (const auto& [begin, partial] : partials)
        total = is_max ? om::maximum(total, partial) : total + partial;
    });
  }
  if (!is_max && p == 2)
    total = std::sqrt(total);
  else if (!is_max && p != 1)
    total = std::pow(total, 1.0 / p);
  dispatch_floating(total_norm.dtype(), "multi_tensor_norm", [&](auto tag) {
    using T = decltype(tag);
    *total_norm.data<T>() = convert<T>(total);
  });
}

void CpuBackend::clip_by_total_norm(const TensorList& tensors, const Tensor& total_norm,
                                    double max_norm) {
  const double norm = dispatch_floating(total_norm.dtype(), "clip_by_total_norm", [&](auto tag) {
    using T = decltype(tag);
    return convert<double>(*total_norm.data<T>());
  });
  const double coefficient = om::clip_coefficient(norm, max_norm);
  for (const Tensor& t : tensors) {
    dispatch_floating(t.dtype(), "clip_by_total_norm", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      T* x = t.data<T>();
      const C c = C(coefficient);
      parallel_range(t.numel(), [&](int64_t begin, int64_t end) {
        for (int64_t e = begin; e < end; ++e) x[e] = convert<T>(convert<C>(x[e]) * c);
      });
    });
  }
}

void CpuBackend::unscale_and_check_finite(const TensorList& tensors, const Tensor& inv_scale,
                                          const Tensor& found_inf) {
  const double inv = *inv_scale.data<float>();
  bool any = false;
  for (const Tensor& t : tensors) {
    dispatch_floating(t.dtype(), "unscale_and_check_finite", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      T* x = t.data<T>();
      const C c = C(inv);
      // Each range reports to its own flag; the flags are or-ed after the loop.
      std::atomic<bool> found{false};
      parallel_range(t.numel(), [&](int64_t begin, int64_t end) {
        bool local = false;
        for (int64_t e = begin; e < end; ++e) {
          const C v = convert<C>(x[e]);
          local = local || !std::isfinite(v);
          x[e] = convert<T>(v * c);
        }
        if (local) found.store(true, std::memory_order_relaxed);
      });
      any = any || found.load();
    });
  }
  if (any) *found_inf.data<float>() = 1.0f;
}

}  // namespace rcuda::cpu
