// Dynamic loss scaling for float16 training (torch.amp.GradScaler): the loss is multiplied by a
// scale before backward so that small float16 gradients do not flush to zero; step() divides
// the gradients by it again, checking them for inf and NaN in the same pass, and skips the
// optimizer's step when it finds any; update() then halves the scale (backoff), or doubles it
// (growth) after growth_interval steps in a row without one.
//
//   rcuda::amp::GradScaler scaler;
//   for (...) {
//     opt.zero_grad();
//     Tensor loss;
//     { rcuda::AutocastGuard a(DeviceType::CUDA, DType::Float16); loss = loss_of(model(x), y); }
//     rcuda::autograd::backward(scaler.scale(loss));
//     scaler.step(opt);   // opt.step() unless a gradient is inf or NaN
//     scaler.update();
//   }
//
// The scale and the inf flags live on the loss's device (float32, one element each), so the only
// host synchronisation is step()'s read of the flags, as PyTorch's. docs/mixed-precision.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "rcuda/optim/optimizer.h"

namespace rcuda::amp {

using optim::Optimizer;

struct GradScalerOptions {
  double init_scale = 65536.0;     // 2^16
  double growth_factor = 2.0;      // > 1
  double backoff_factor = 0.5;     // in (0, 1)
  int64_t growth_interval = 2000;  // >= 1 steps without inf/NaN before the scale grows
  bool enabled = true;             // false: every call passes through (scale() returns the loss)
};

// What state_dict() returns and load_state_dict() takes, as torch's (scale 0 when the scale has
// not been made yet, i.e. before the first scale() call).
struct GradScalerState {
  double scale = 0;
  double growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000, growth_tracker = 0;
};

class GradScaler {
 public:
  // ValueError naming the option for an init_scale <= 0, growth_factor <= 1, backoff_factor
  // outside (0, 1) or growth_interval < 1.
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (recorded for backward; float32 or wider). The scale is made on the loss's
  // device at the first call.
  Tensor scale(const Tensor& loss);
  // Divides the gradients of the optimizer's parameters by the scale in place and records for
  // this step whether any was inf or NaN. At most once per optimizer between update() calls
  // (a ValueError otherwise); step() calls it when it has not been called.
  void unscale_(Optimizer& optimizer);
  // optimizer.step() unless unscaling found inf or NaN (reading the flags: the one host
  // synchronisation); returns whether it stepped. At most once per optimizer between update()
  // calls. Float16 gradients are refused, as torch's: keep the parameters in float32 and let
  // autocast make the float16 copies.
  bool step(Optimizer& optimizer);
  // step() without the optimizer's step: unscales when needed, marks the step taken and returns
  // whether the caller should run optimizer.step() (for callers whose step is their own, as the
  // R package's optimizers with closures).
  bool prepare_step(Optimizer& optimizer);
  // The next scale: backoff_factor times it when any optimizer stepped over inf/NaN since the
  // last update, growth_factor times it after growth_interval clean steps in a row, else the
  // same. With new_scale, that value instead (> 0; the growth count is kept, as torch's). A
  // ValueError when enabled and no optimizer was unscaled since the last update.
  void update(std::optional<double> new_scale = std::nullopt);

  double get_scale() const;  // init_scale before the first scale(); 1 when disabled
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }

  GradScalerState state_dict() const;
  void load_state_dict(const GradScalerState& state);

 private:
  struct OptimizerState {
    bool unscaled = false, stepped = false;
    std::vector<Tensor> found_inf;  // one float32 flag per device of the gradients
  };
  OptimizerState& state_of(Optimizer& optimizer) { return per_optimizer_[&optimizer]; }

  GradScalerOptions options_;
  Tensor scale_;        // float32 [1] on the loss's device, made by the first scale()
  double scale_value_;  // the same on the host: update() decides there, then fills scale_
  int64_t growth_tracker_ = 0;
  std::map<const Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace rcuda::amp
