// Plain double-precision references of torch.optim's algorithms, written from the algorithm
// boxes of torch's documentation, one parameter at a time, and a driver that runs an rcuda
// optimizer beside them over several steps on fresh random parameters and gradients.
//
// maximize negates the gradient first, before weight decay, as torch's implementations do for
// every optimizer (the SGD page's box applies it at the end instead; the two differ only with
// weight decay, and torch computes the former).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {

using optim::OptionMap;
using optim::ParamGroup;

// One parameter's values and state in the reference.
struct ReferenceParam {
  std::vector<double> value;
  int64_t step = 0;
  std::map<std::string, std::vector<double>> state;  // torch's names
  bool updated = false;  // had a gradient at some step: the optimizer keeps state for it
};

inline double option(const OptionMap& o, const char* name) { return std::get<double>(o.at(name)); }
inline bool flag(const OptionMap& o, const char* name) { return std::get<bool>(o.at(name)); }

// Gradient after maximize and (coupled) weight decay.
inline std::vector<double> effective_gradient(const ReferenceParam& p, std::vector<double> g,
                                              bool maximize, double weight_decay) {
  for (size_t i = 0; i < g.size(); ++i) {
    if (maximize) g[i] = -g[i];
    if (weight_decay != 0) g[i] += weight_decay * p.value[i];
  }
  return g;
}

inline void reference_sgd(ReferenceParam& p, const std::vector<double>& grad, const OptionMap& o) {
  const double lr = option(o, "lr"), mu = option(o, "momentum"), tau = option(o, "dampening");
  std::vector<double> g =
      effective_gradient(p, grad, flag(o, "maximize"), option(o, "weight_decay"));
  if (mu != 0) {
    const bool first = p.state.count("momentum_buffer") == 0;
    std::vector<double>& b = p.state["momentum_buffer"];
    if (first) b = g;
    for (size_t i = 0; i < g.size(); ++i) {
      if (!first) b[i] = mu * b[i] + (1 - tau) * g[i];
      g[i] = flag(o, "nesterov") ? g[i] + mu * b[i] : b[i];
    }
  }
  for (size_t i = 0; i < g.size(); ++i) p.value[i] -= lr * g[i];
}

// Adam (decoupled = false) and AdamW (decoupled = true).
inline void reference_adam(ReferenceParam& p, const std::vector<double>& grad, const OptionMap& o,
                           bool decoupled) {
  const double lr = option(o, "lr"), eps = option(o, "eps"), lambda = option(o, "weight_decay");
  const std::vector<double>& betas = std::get<std::vector<double>>(o.at("betas"));
  const bool amsgrad = flag(o, "amsgrad");
  const size_t n = grad.size();
  const int64_t t = ++p.step;
  if (decoupled)
    for (size_t i = 0; i < n; ++i) p.value[i] -= lr * lambda * p.value[i];
  const std::vector<double> g =
      effective_gradient(p, grad, flag(o, "maximize"), decoupled ? 0.0 : lambda);
  for (const char* name : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
    if (p.state.count(name) == 0 && (amsgrad || std::string(name) != "max_exp_avg_sq"))
      p.state[name] = std::vector<double>(n, 0.0);
  std::vector<double>&m = p.state["exp_avg"], &v = p.state["exp_avg_sq"];
  for (size_t i = 0; i < n; ++i) {
    m[i] = betas[0] * m[i] + (1 - betas[0]) * g[i];
    v[i] = betas[1] * v[i] + (1 - betas[1]) * g[i] * g[i];
    const double m_hat = m[i] / (1 - std::pow(betas[0], static_cast<double>(t)));
    double v_used = v[i];
    if (amsgrad) {
      std::vector<double>& v_max = p.state["max_exp_avg_sq"];
      v_max[i] = std::max(v_max[i], v[i]);
      v_used = v_max[i];
    }
    const double v_hat = v_used / (1 - std::pow(betas[1], static_cast<double>(t)));
    p.value[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

inline void reference_rmsprop(ReferenceParam& p, const std::vector<double>& grad,
                              const OptionMap& o) {
  const double lr = option(o, "lr"), alpha = option(o, "alpha"), eps = option(o, "eps"),
               mu = option(o, "momentum");
  const bool centered = flag(o, "centered");
  const size_t n = grad.size();
  ++p.step;
  const std::vector<double> g =
      effective_gradient(p, grad, flag(o, "maximize"), option(o, "weight_decay"));
  for (const char* name : {"square_avg", "momentum_buffer", "grad_avg"})
    if (p.state.count(name) == 0) p.state[name] = std::vector<double>(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    double& v = p.state["square_avg"][i];
    v = alpha * v + (1 - alpha) * g[i] * g[i];
    double v_tilde = v;
    if (centered) {
      double& g_ave = p.state["grad_avg"][i];
      g_ave = g_ave * alpha + (1 - alpha) * g[i];
      v_tilde -= g_ave * g_ave;
    }
    if (mu > 0) {
      double& b = p.state["momentum_buffer"][i];
      b = mu * b + g[i] / (std::sqrt(v_tilde) + eps);
      p.value[i] -= lr * b;
    } else {
      p.value[i] -= lr * g[i] / (std::sqrt(v_tilde) + eps);
    }
  }
  if (!centered) p.state.erase("grad_avg");
  if (!(mu > 0)) p.state.erase("momentum_buffer");
}

inline void reference_adagrad(ReferenceParam& p, const std::vector<double>& grad,
                              const OptionMap& o) {
  const double lr = option(o, "lr"), eta = option(o, "lr_decay"), eps = option(o, "eps");
  const size_t n = grad.size();
  const int64_t t = ++p.step;
  const double lr_t = lr / (1 + static_cast<double>(t - 1) * eta);
  const std::vector<double> g =
      effective_gradient(p, grad, flag(o, "maximize"), option(o, "weight_decay"));
  if (p.state.count("sum") == 0)
    p.state["sum"] = std::vector<double>(n, option(o, "initial_accumulator_value"));
  std::vector<double>& sum = p.state["sum"];
  for (size_t i = 0; i < n; ++i) {
    sum[i] += g[i] * g[i];
    p.value[i] -= lr_t * g[i] / (std::sqrt(sum[i]) + eps);
  }
}

using ReferenceStep =
    std::function<void(ReferenceParam&, const std::vector<double>&, const OptionMap&)>;
using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<ParamGroup>)>;

// Values of a CPU tensor rounded to dtype, as the optimizer stores them after each step.
inline std::vector<double> rounded(const std::vector<double>& v, DType dtype) {
  return to_doubles(tensor_of(v, {static_cast<int64_t>(v.size())}, dtype));
}

// How far an rcuda step (ComputeType arithmetic, results rounded to the dtype after every step)
// may drift from the double reference (rounded the same way) over a few steps.
inline double step_tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-12;
    case DType::Float32:
      return 4e-6;
    case DType::Float16:
      return 4e-3;
    default:
      return 3e-2;
  }
}

struct OptimizerRun {
  DType dtype = DType::Float64;
  int steps = 5;
  std::vector<std::vector<Shape>> shapes;  // per group
  std::vector<OptionMap> options;          // per group, on top of the defaults
  // Whether parameter i of group g gets a gradient at a step (default: always).
  std::function<bool(int step, size_t group, size_t index)> has_grad;
  // Called before each step, e.g. to change a group's lr.
  std::function<void(int step, optim::Optimizer&)> before_step;
  // Gradients uniform in +-[low, high] (away from 0 for the half types, whose state would
  // underflow to subnormals).
  double grad_low = 0, grad_high = 2;
  // Parameters of 2 or more dims as transposed views (non-contiguous leaves).
  bool strided_params = false;
};

inline Tensor random_gradient(const Shape& shape, DType dtype, double low, double high) {
  Tensor g = random_tensor(shape, DType::Float64, low, high);
  std::vector<double> v = to_doubles(g);
  for (double& x : v)
    if (rng()() & 1) x = -x;
  return tensor_of(v, shape, dtype);
}

// Runs `make`'s optimizer and `reference` side by side and compares every parameter and every
// state buffer after each step.
inline void expect_matches_reference(const std::string& label, const OptimizerRun& run,
                                     const MakeOptimizer& make, const ReferenceStep& reference) {
  SCOPED_TRACE(label + " " + dtype_name(run.dtype));
  std::vector<ParamGroup> groups;
  std::vector<std::vector<ReferenceParam>> expected;
  for (size_t g = 0; g < run.shapes.size(); ++g) {
    ParamGroup group;
    group.options = run.options.empty() ? OptionMap{} : run.options[g];
    expected.emplace_back();
    for (const Shape& shape : run.shapes[g]) {
      Tensor p = random_tensor(shape, run.dtype);
      if (run.strided_params && p.dim() >= 2) p = transposed_copy(p);
      group.params.push_back(p);
      expected.back().push_back({to_doubles(p), 0, {}, false});
    }
    groups.push_back(group);
  }
  std::unique_ptr<optim::Optimizer> opt = make(groups);
  const double tol = step_tolerance(run.dtype);
  for (int step = 0; step < run.steps; ++step) {
    if (run.before_step) run.before_step(step, *opt);
    std::vector<std::vector<std::vector<double>>> grads(groups.size());
    std::vector<std::vector<bool>> had_grad(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t i = 0; i < groups[g].params.size(); ++i) {
        const Tensor& p = groups[g].params[i];
        const bool has = !run.has_grad || run.has_grad(step, g, i);
        const Tensor grad =
            has ? random_gradient(p.shape(), run.dtype, run.grad_low, run.grad_high) : Tensor();
        p.set_grad(grad);
        grads[g].push_back(has ? to_doubles(grad) : std::vector<double>{});
        had_grad[g].push_back(has);
      }
    }
    const std::vector<uint64_t> versions = [&] {
      std::vector<uint64_t> v;
      for (const ParamGroup& group : groups)
        for (const Tensor& p : group.params) v.push_back(p.storage()->version());
      return v;
    }();
    opt->step();
    size_t flat = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      const OptionMap& options = opt->param_groups()[g].options;
      for (size_t i = 0; i < groups[g].params.size(); ++i, ++flat) {
        SCOPED_TRACE("step " + std::to_string(step) + ", group " + std::to_string(g) +
                     ", parameter " + std::to_string(i));
        const Tensor& p = groups[g].params[i];
        ReferenceParam& e = expected[g][i];
        if (!had_grad[g][i]) {
          EXPECT_EQ(p.storage()->version(), versions[flat]);  // skipped, as torch
        } else {
          reference(e, grads[g][i], options);
          e.updated = true;
          e.value = rounded(e.value, run.dtype);
          for (auto& [name, values] : e.state) values = rounded(values, run.dtype);
          EXPECT_GT(p.storage()->version(), versions[flat]);
        }
        EXPECT_TRUE(all_close(to_doubles(p), e.value, tol));
        const optim::ParamState* state = opt->state(p);
        ASSERT_EQ(state != nullptr, e.updated);
        if (state == nullptr) continue;
        EXPECT_EQ(state->step, e.step);
        for (size_t k = 0; k < opt->buffer_names().size(); ++k) {
          const std::string& name = opt->buffer_names()[k];
          const bool defined = state->buffers[k].defined();
          ASSERT_EQ(defined, e.state.count(name) == 1) << name;
          if (defined) {
            EXPECT_TRUE(all_close(to_doubles(state->buffers[k]), e.state[name], tol)) << name;
          }
        }
      }
    }
  }
}

}  // namespace rcuda::test
