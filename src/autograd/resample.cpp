// Entry points of pad and interpolate (Note [Recording] in rcuda/autograd/record.h): one node
// per call holding the forward's plan. Interpolation in "area" mode is adaptive average pooling
// and records that op's node (through a height-1 view for 1-D input).
#include "grads/resample.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::OpCall;

Tensor record_pad(OpId op, const Tensor& x, const ops::PadPlan& plan) {
  if (!OpCall::records(x)) return ops::pad_forward(x, plan);
  const Tensor out = autograd::below_autograd([&] { return ops::pad_forward(x, plan); });
  auto node = autograd::make_node<autograd::PadBackward>(op, x);
  node->plan = plan;
  autograd::set_history(out, node);
  return out;
}

Tensor record_interpolate(OpId op, const Tensor& x, const ops::InterpolatePlan& plan) {
  if (plan.area) {
    const Shape& o = plan.output_shape;
    if (plan.spatial_dims == 2) return adaptive_avg_pool2d(x, {o[2], o[3]});
    return adaptive_avg_pool2d(x.unsqueeze(2), {1, o[2]}).squeeze(2);
  }
  if (!OpCall::records(x)) return ops::interpolate_forward(x, plan);
  const Tensor out = autograd::below_autograd([&] { return ops::interpolate_forward(x, plan); });
  auto node = autograd::make_node<autograd::InterpolateBackward>(op, x);
  node->plan = plan;
  autograd::set_history(out, node);
  return out;
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<int64_t>& padding, const std::string& mode,
           std::optional<double> value) {
  OpCall call(OpId::Pad, x);
  Tensor out = record_pad(call.op(), x, ops::pad_plan(x, padding, mode, value));
  if (call.reported()) {
    Attributes attrs{{"padding", padding}, {"mode", mode}};
    if (value) attrs.set("value", *value);
    call.report({x}, attrs, {out});
  }
  return out;
}

Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size,
                   const std::vector<double>& scale_factor, const std::string& mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor) {
  OpCall call(OpId::Interpolate, x);
  Tensor out = record_interpolate(
      call.op(), x,
      ops::interpolate_plan(x, size, scale_factor, mode, align_corners, recompute_scale_factor));
  if (call.reported()) {
    // size and scale_factor as given (empty when not given).
    Attributes attrs{{"size", size}, {"scale_factor", scale_factor}, {"mode", mode}};
    if (align_corners) attrs.set("align_corners", *align_corners);
    if (recompute_scale_factor) attrs.set("recompute_scale_factor", *recompute_scale_factor);
    call.report({x}, attrs, {out});
  }
  return out;
}

}  // namespace rcuda
