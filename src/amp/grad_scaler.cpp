// Dynamic loss scaling (rcuda/amp/grad_scaler.h), torch.amp.GradScaler's rules: the scale is a
// float32 tensor on the loss's device; unscaling runs the fused unscale_and_check_finite
// primitive per device of the gradients; step() reads the inf flags (the one synchronisation) and
// update() decides the next scale on the host from them, then fills the device copy, so nothing
// else waits for the GPU.
#include "rcuda/amp/grad_scaler.h"

#include <cmath>

#include "optim/device_grads.h"
#include "rcuda/autograd/api.h"
#include "rcuda/backend/backend.h"
#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"

namespace rcuda::amp {

namespace detail = optim::detail;
using optim::ParamGroup;

GradScaler::GradScaler(GradScalerOptions options)
    : options_(options), scale_value_(options.init_scale) {
  RCUDA_CHECK(options.init_scale > 0 && std::isfinite(options.init_scale), ValueError,
              "GradScaler: init_scale must be positive and finite, got ", options.init_scale);
  RCUDA_CHECK(options.growth_factor > 1, ValueError,
              "GradScaler: growth_factor must be greater than 1, got ", options.growth_factor);
  RCUDA_CHECK(options.backoff_factor > 0 && options.backoff_factor < 1, ValueError,
              "GradScaler: backoff_factor must be in (0, 1), got ", options.backoff_factor);
  RCUDA_CHECK(options.growth_interval >= 1, ValueError,
              "GradScaler: growth_interval must be at least 1, got ", options.growth_interval);
}

Tensor GradScaler::scale(const Tensor& loss) {
  if (!options_.enabled) return loss;
  RCUDA_CHECK(loss.defined(), ValueError, "GradScaler.scale: the loss is an undefined tensor");
  RCUDA_CHECK(is_floating(loss.dtype()) && !is_float8(loss.dtype()), DTypeError,
              "GradScaler.scale: the loss must be floating, got ", dtype_name(loss.dtype()));
  if (!scale_.defined())
    scale_ = ops::full({}, scale_value_, TensorOptions(DType::Float32, loss.device()));
  return rcuda::mul(loss, ops::to(scale_, loss.device()));
}

void GradScaler::unscale_(Optimizer& optimizer) {
  if (!options_.enabled) return;
  OptimizerState& state = state_of(optimizer);
  RCUDA_CHECK(!state.unscaled, ValueError,
              "GradScaler.unscale_: already called for this optimizer since the last update()");
  RCUDA_CHECK(!state.stepped, ValueError,
              "GradScaler.unscale_: called after step() for this optimizer; call update() first");
  RCUDA_CHECK(scale_.defined(), ValueError,
              "GradScaler.unscale_: no scale yet; scale the loss with scale() before backward");
  std::vector<Tensor> params;
  for (const ParamGroup& g : optimizer.param_groups())
    params.insert(params.end(), g.params.begin(), g.params.end());
  const std::vector<Tensor> grads = detail::gradients_of(params, "GradScaler.unscale_");
  for (size_t i = 0; i < grads.size(); ++i)
    RCUDA_CHECK(grads[i].dtype() != DType::Float16, DTypeError,
                "GradScaler.unscale_: float16 gradients cannot be unscaled (as torch's "
                "'Attempting to unscale FP16 gradients'); keep the parameters in float32 and let "
                "autocast make their float16 copies");
  // torch's inv_scale: the reciprocal in double, rounded to float32 once.
  const double inv = static_cast<double>(static_cast<float>(1.0 / scale_value_));
  state.found_inf.clear();
  for (const detail::DeviceGrads& d : detail::by_device(grads)) {
    const TensorOptions f32(DType::Float32, d.device);
    const Tensor found = ops::zeros({1}, f32);
    backend_for(d.device).unscale_and_check_finite(d.dense, ops::full({1}, inv, f32), found);
    d.write_back();
    for (const Tensor& g : d.grads) g.storage()->bump_version();
    state.found_inf.push_back(found);
  }
  state.unscaled = true;
}

bool GradScaler::step(Optimizer& optimizer) {
  if (!prepare_step(optimizer)) return false;
  optimizer.step();
  return true;
}

bool GradScaler::prepare_step(Optimizer& optimizer) {
  if (!options_.enabled) return true;
  OptimizerState& state = state_of(optimizer);
  RCUDA_CHECK(!state.stepped, ValueError,
              "GradScaler.step: already called for this optimizer since the last update()");
  if (!state.unscaled) unscale_(optimizer);
  bool found = false;
  for (const Tensor& f : state.found_inf) found = found || ops::item(f).to_double() != 0;
  state.stepped = true;
  return !found;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!options_.enabled) return;
  if (new_scale) {
    RCUDA_CHECK(*new_scale > 0 && std::isfinite(*new_scale), ValueError,
                "GradScaler.update: new_scale must be positive and finite, got ", *new_scale);
    scale_value_ = static_cast<float>(*new_scale);
  } else {
    bool checked = false, found = false;
    for (const auto& [optimizer, state] : per_optimizer_) {
      checked = checked || state.unscaled;
      for (const Tensor& f : state.found_inf) found = found || ops::item(f).to_double() != 0;
    }
    RCUDA_CHECK(checked, ValueError,
                "GradScaler.update: no gradients were unscaled since the last update(); call "
                "step(optimizer) (or unscale_) first");
    // torch's _amp_update_scale_, in float32 as its scale tensor.
    if (found) {
      scale_value_ = static_cast<float>(scale_value_ * options_.backoff_factor);
      growth_tracker_ = 0;
    } else if (growth_tracker_ + 1 == options_.growth_interval) {
      const float grown = static_cast<float>(scale_value_ * options_.growth_factor);
      if (std::isfinite(grown)) scale_value_ = grown;
      growth_tracker_ = 0;
    } else {
      ++growth_tracker_;
    }
  }
  if (scale_.defined()) ops::fill_(scale_, scale_value_);
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return options_.enabled ? scale_value_ : 1.0; }

GradScalerState GradScaler::state_dict() const {
  GradScalerState s;
  s.scale = get_scale();
  s.growth_factor = options_.growth_factor;
  s.backoff_factor = options_.backoff_factor;
  s.growth_interval = options_.growth_interval;
  s.growth_tracker = growth_tracker_;
  return s;
}

void GradScaler::load_state_dict(const GradScalerState& state) {
  if (!options_.enabled) return;
  GradScalerOptions o = options_;
  o.init_scale = state.scale;
  o.growth_factor = state.growth_factor;
  o.backoff_factor = state.backoff_factor;
  o.growth_interval = state.growth_interval;
  const GradScaler checked(o);  // the constructor's checks, with their messages
  RCUDA_CHECK(state.growth_tracker >= 0 && state.growth_tracker < state.growth_interval, ValueError,
              "GradScaler.load_state_dict: growth_tracker must be in [0, ", state.growth_interval,
              "), got ", state.growth_tracker);
  options_ = o;
  scale_value_ = static_cast<float>(state.scale);
  growth_tracker_ = state.growth_tracker;
  if (scale_.defined()) ops::fill_(scale_, scale_value_);
}

}  // namespace rcuda::amp
