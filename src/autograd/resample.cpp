// Entry points of pad and interpolate (Note [Recording] in rcuda/autograd/record.h): one node
// per call holding the forward's plan. Interpolation in "area" mode is adaptive average pooling
// and records that op's node (through a height-1 view for 1-D input).
#include "grads/resample.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/record.h"

namespace rcuda {

Tensor pad(const Tensor& x, const std::vector<int64_t>& padding, const std::string& mode,
           std::optional<double> value) {
  const ops::PadPlan plan = ops::pad_plan(x, padding, mode, value);
  if (!autograd::should_record(x)) return ops::pad_forward(x, plan);
  const Tensor out = autograd::below_autograd([&] { return ops::pad_forward(x, plan); });
  auto node = autograd::make_node<autograd::PadBackward>(x);
  node->plan = plan;
  autograd::set_history(out, node);
  return out;
}

Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size,
                   const std::vector<double>& scale_factor, const std::string& mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor) {
  const ops::InterpolatePlan plan =
      ops::interpolate_plan(x, size, scale_factor, mode, align_corners, recompute_scale_factor);
  if (plan.area) {
    const Shape& o = plan.output_shape;
    if (plan.spatial_dims == 2) return adaptive_avg_pool2d(x, {o[2], o[3]});
    return adaptive_avg_pool2d(x.unsqueeze(2), {1, o[2]}).squeeze(2);
  }
  if (!autograd::should_record(x)) return ops::interpolate_forward(x, plan);
  const Tensor out = autograd::below_autograd([&] { return ops::interpolate_forward(x, plan); });
  auto node = autograd::make_node<autograd::InterpolateBackward>(x);
  node->plan = plan;
  autograd::set_history(out, node);
  return out;
}

}  // namespace rcuda
