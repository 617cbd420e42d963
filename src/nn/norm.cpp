// batch_norm, group_norm and instance_norm of torch.nn.functional: the recording entry points of
// rcuda/autograd/api.h (one NormBackward node each, over fused primitives), after casting a
// weight or bias of a third dtype to the input's (recorded, so its gradient flows back).
#include "rcuda/nn/norm.h"
#include "rcuda/autograd/autocast.h"

#include "nn_util.h"

namespace rcuda::nn {
namespace {

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
  constexpr const char* kOp = "batch_norm";
  detail::check_floating(kOp, "input", input);
  return rcuda::batch_norm(input, running_mean, running_var,
                           as_parameter(kOp, "weight", weight, input),
                           as_parameter(kOp, "bias", bias, input), training, momentum, eps);
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (autocast::Region cast{"group_norm", input})
    return nn::group_norm(cast(input), num_groups, cast(weight), cast(bias), eps);
  constexpr const char* kOp = "group_norm";
  detail::check_floating(kOp, "input", input);
  return rcuda::group_norm(input, num_groups, as_parameter(kOp, "weight", weight, input),
                           as_parameter(kOp, "bias", bias, input), eps);
}

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  constexpr const char* kOp = "instance_norm";
  detail::check_floating(kOp, "input", input);
  return rcuda::instance_norm(
      input, running_mean, running_var, as_parameter(kOp, "weight", weight, input),
      as_parameter(kOp, "bias", bias, input), use_input_stats, momentum, eps);
}

}  // namespace rcuda::nn
