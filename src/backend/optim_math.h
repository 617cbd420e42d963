// The element-wise arithmetic of the optimizer primitives (Note [Optimizer primitives] in
// rcuda/backend/backend.h), shared by the CPU loops and the CUDA multi-tensor kernels so that
// the two cannot drift apart. Each update follows torch.optim's algorithm for one element, in
// the order torch applies it (maximize, weight decay, moments, bias corrections, the step);
// C is the compute type (float for float32 and the half types, double for float64). Constants
// that do not change within a call are converted to C once, on the host.
#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>

#include "rcuda/backend/backend.h"
#include "rcuda/core/macros.h"

namespace rcuda::backend::optim_math {

RCUDA_HOST_DEVICE inline float square_root(float x) { return sqrtf(x); }
RCUDA_HOST_DEVICE inline double square_root(double x) { return sqrt(x); }

// torch.maximum: NaN on either side wins.
template <typename C>
RCUDA_HOST_DEVICE inline C maximum(C a, C b) {
  if (a != a) return a;
  return (b > a || b != b) ? b : a;
}

// torch.lerp(a, b, w), in its two-branch form (exact at w = 0 and w = 1).
template <typename C>
RCUDA_HOST_DEVICE inline C lerp(C a, C b, C w) {
  const C aw = w < C(0) ? -w : w;
  return aw < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
}

// ---- host side: values that depend on the step count (one per parameter) ----

// Adam's lr / (1 - beta1^step) and sqrt(1 - beta2^step).
inline double adam_step_size(double lr, double beta1, int64_t step) {
  return lr / (1.0 - std::pow(beta1, static_cast<double>(step)));
}
inline double adam_bias_correction2_sqrt(double beta2, int64_t step) {
  return std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step)));
}
// Adagrad's decayed learning rate lr / (1 + (step - 1) * lr_decay).
inline double adagrad_learning_rate(double lr, double lr_decay, int64_t step) {
  return lr / (1.0 + static_cast<double>(step - 1) * lr_decay);
}

// ---- SGD (torch.optim.SGD) ----
template <typename C>
struct SgdConstants {
  C lr, momentum, one_minus_dampening, weight_decay;
  bool nesterov, maximize, has_momentum, first_step;
  explicit SgdConstants(const Backend::SgdStep& a)
      : lr(C(a.lr)),
        momentum(C(a.momentum)),
        one_minus_dampening(C(1.0 - a.dampening)),
        weight_decay(C(a.weight_decay)),
        nesterov(a.nesterov),
        maximize(a.maximize),
        has_momentum(a.momentum != 0),
        first_step(a.momentum_buffers_are_new) {}
};

template <typename C>
RCUDA_HOST_DEVICE inline void sgd_update(C& param, C grad, C& buffer, const SgdConstants<C>& k) {
  if (k.maximize) grad = -grad;
  if (k.weight_decay != C(0)) grad = grad + k.weight_decay * param;
  if (k.has_momentum) {
    buffer = k.first_step ? grad : k.momentum * buffer + k.one_minus_dampening * grad;
    grad = k.nesterov ? grad + k.momentum * buffer : buffer;
  }
  param = param - k.lr * grad;
}

// ---- Adam and AdamW (torch.optim.Adam, torch.optim.AdamW) ----
template <typename C>
struct AdamConstants {
  C beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay, decay_factor;
  bool amsgrad, maximize, decoupled;
  explicit AdamConstants(const Backend::AdamStep& a)
      : beta2(C(a.beta2)),
        one_minus_beta1(C(1.0 - a.beta1)),
        one_minus_beta2(C(1.0 - a.beta2)),
        eps(C(a.eps)),
        weight_decay(C(a.weight_decay)),
        decay_factor(C(1.0 - a.lr * a.weight_decay)),
        amsgrad(a.amsgrad),
        maximize(a.maximize),
        decoupled(a.decoupled_weight_decay) {}
};

// step_size and bias_correction2_sqrt: adam_step_size and adam_bias_correction2_sqrt.
template <typename C>
RCUDA_HOST_DEVICE inline void adam_update(C& param, C grad, C& exp_avg, C& exp_avg_sq,
                                          C& max_exp_avg_sq, const AdamConstants<C>& k, C step_size,
                                          C bias_correction2_sqrt) {
  if (k.maximize) grad = -grad;
  if (k.weight_decay != C(0)) {
    if (k.decoupled)
      param = param * k.decay_factor;
    else
      grad = grad + k.weight_decay * param;
  }
  exp_avg = lerp(exp_avg, grad, k.one_minus_beta1);  // torch's exp_avg.lerp_(grad, 1 - beta1)
  exp_avg_sq = k.beta2 * exp_avg_sq + k.one_minus_beta2 * (grad * grad);
  C second_moment = exp_avg_sq;
  if (k.amsgrad) {
    max_exp_avg_sq = maximum(max_exp_avg_sq, exp_avg_sq);
    second_moment = max_exp_avg_sq;
  }
  const C denom = square_root(second_moment) / bias_correction2_sqrt + k.eps;
  param = param - step_size * (exp_avg / denom);
}

// ---- RMSprop (torch.optim.RMSprop) ----
template <typename C>
struct RmspropConstants {
  C lr, alpha, one_minus_alpha, eps, weight_decay, momentum;
  bool centered, maximize, has_momentum;
  explicit RmspropConstants(const Backend::RmspropStep& a)
      : lr(C(a.lr)),
        alpha(C(a.alpha)),
        one_minus_alpha(C(1.0 - a.alpha)),
        eps(C(a.eps)),
        weight_decay(C(a.weight_decay)),
        momentum(C(a.momentum)),
        centered(a.centered),
        maximize(a.maximize),
        has_momentum(a.momentum > 0) {}
};

template <typename C>
RCUDA_HOST_DEVICE inline void rmsprop_update(C& param, C grad, C& square_avg, C& momentum_buffer,
                                             C& grad_avg, const RmspropConstants<C>& k) {
  if (k.maximize) grad = -grad;
  if (k.weight_decay != C(0)) grad = grad + k.weight_decay * param;
  square_avg = k.alpha * square_avg + k.one_minus_alpha * (grad * grad);
  C avg;
  if (k.centered) {
    grad_avg = lerp(grad_avg, grad, k.one_minus_alpha);
    avg = square_root(square_avg - grad_avg * grad_avg);
  } else {
    avg = square_root(square_avg);
  }
  avg = avg + k.eps;
  if (k.has_momentum) {
    momentum_buffer = k.momentum * momentum_buffer + grad / avg;
    param = param - k.lr * momentum_buffer;
  } else {
    param = param - k.lr * (grad / avg);
  }
}

// ---- Adagrad (torch.optim.Adagrad) ----
template <typename C>
struct AdagradConstants {
  C eps, weight_decay;
  bool maximize;
  explicit AdagradConstants(const Backend::AdagradStep& a)
      : eps(C(a.eps)), weight_decay(C(a.weight_decay)), maximize(a.maximize) {}
};

// learning_rate: adagrad_learning_rate for this parameter's step.
template <typename C>
RCUDA_HOST_DEVICE inline void adagrad_update(C& param, C grad, C& state_sum,
                                             const AdagradConstants<C>& k, C learning_rate) {
  if (k.maximize) grad = -grad;
  if (k.weight_decay != C(0)) grad = grad + k.weight_decay * param;
  state_sum = state_sum + grad * grad;
  const C denom = square_root(state_sum) + k.eps;
  param = param - learning_rate * (grad / denom);
}

// ---- clip_grad_norm_ ----

// min(1, max_norm / (total_norm + 1e-6)), NaN kept (torch.clamp(max=1) propagates it).
RCUDA_HOST_DEVICE inline double clip_coefficient(double total_norm, double max_norm) {
  const double coefficient = max_norm / (total_norm + 1e-6);
  return coefficient > 1.0 ? 1.0 : coefficient;
}

}  // namespace rcuda::backend::optim_math
