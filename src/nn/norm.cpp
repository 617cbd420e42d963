// batch_norm, group_norm and instance_norm of torch.nn.functional: the recording entry points of
// rcuda/autograd/api.h (one NormBackward node each, over fused primitives), after casting a
// weight or bias of a third dtype to the input's (recorded, so its gradient flows back).
#include "rcuda/nn/norm.h"

#include "nn_util.h"
#include "rcuda/autograd/funnel.h"

namespace rcuda::nn {
namespace {

using autograd::OpCall;

// The dtypes the primitives take for per-channel tensors: the input's, or float32 for
// float16/bfloat16 inputs (rcuda/ops/norm.h).
Tensor as_parameter(const char* op, const char* arg, const Tensor& t, const Tensor& input) {
  if (!t.defined()) return t;
  detail::check_floating(op, arg, t);
  const bool half = input.dtype() == DType::Float16 || input.dtype() == DType::BFloat16;
  if (t.dtype() == input.dtype() || (half && t.dtype() == DType::Float32)) return t;
  return to(t, input.dtype());
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  OpCall call(OpId::BatchNorm, input);
  // The running statistics are updated in place, so a cast copy of them would lose the update.
  if (call.autocasts())
    return nn::batch_norm(call.cast(input), running_mean, running_var, call.cast(weight),
                          call.cast(bias), training, momentum, eps);
  constexpr const char* kOp = "batch_norm";
  detail::check_floating(kOp, "input", input);
  const Tensor out = rcuda::batch_norm(
      input, running_mean, running_var, as_parameter(kOp, "weight", weight, input),
      as_parameter(kOp, "bias", bias, input), training, momentum, eps);
  if (call.reported())
    call.report({input, running_mean, running_var, weight, bias},
                {{"training", training}, {"momentum", momentum}, {"eps", eps}}, {out});
  return out;
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  OpCall call(OpId::GroupNorm, input);
  if (call.autocasts())
    return nn::group_norm(call.cast(input), num_groups, call.cast(weight), call.cast(bias), eps);
  constexpr const char* kOp = "group_norm";
  detail::check_floating(kOp, "input", input);
  const Tensor out =
      rcuda::group_norm(input, num_groups, as_parameter(kOp, "weight", weight, input),
                        as_parameter(kOp, "bias", bias, input), eps);
  if (call.reported())
    call.report({input, weight, bias}, {{"num_groups", num_groups}, {"eps", eps}}, {out});
  return out;
}

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  OpCall call(OpId::InstanceNorm, input);
  // The running statistics are updated in place, as batch_norm's.
  if (call.autocasts())
    return nn::instance_norm(call.cast(input), running_mean, running_var, call.cast(weight),
                             call.cast(bias), use_input_stats, momentum, eps);
  constexpr const char* kOp = "instance_norm";
  detail::check_floating(kOp, "input", input);
  const Tensor out = rcuda::instance_norm(
      input, running_mean, running_var, as_parameter(kOp, "weight", weight, input),
      as_parameter(kOp, "bias", bias, input), use_input_stats, momentum, eps);
  if (call.reported())
    call.report({input, running_mean, running_var, weight, bias},
                {{"use_input_stats", use_input_stats}, {"momentum", momentum}, {"eps", eps}},
                {out});
  return out;
}

}  // namespace rcuda::nn
