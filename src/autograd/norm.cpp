// Entry points of batch_norm, group_norm and instance_norm (Note [Recording] in
// rcuda/autograd/record.h): one NormBackward node over (input, weight, bias) that keeps the
// input, the weight and the forward's statistics. The running statistics are buffers: they are
// updated in place by the forward and never carry a gradient.
#include "grads/norm.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::NormKind;
using autograd::OpCall;
using autograd::SavedTensor;

template <typename Forward>
Tensor record_norm(OpId op, NormKind kind, const Tensor& x, const Tensor& weight,
                   const Tensor& bias, int64_t groups, bool batch_stats, Forward forward) {
  if (!OpCall::records(x, weight, bias)) return forward().out;
  const ops::NormForward f = autograd::below_autograd(forward);
  auto node = autograd::make_node<autograd::NormBackward>(op, x, weight, bias);
  node->kind = kind;
  node->groups = groups;
  node->batch_stats = batch_stats;
  node->x = SavedTensor(x, SavedTensor::kInput);
  node->weight = SavedTensor(weight, SavedTensor::kInput);
  node->mean = SavedTensor(f.mean);
  node->invstd = SavedTensor(f.invstd);
  autograd::set_history(f.out, node);
  return f.out;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  OpCall call(OpId::BatchNorm, x);
  Tensor out = record_norm(call.op(), NormKind::Batch, x, weight, bias, 1, training, [&] {
    return ops::batch_norm_forward(x, running_mean, running_var, weight, bias, training, momentum,
                                   eps);
  });
  if (call.reported())
    call.report({x, running_mean, running_var, weight, bias},
                {{"training", training}, {"momentum", momentum}, {"eps", eps}}, {out});
  return out;
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  OpCall call(OpId::GroupNorm, x);
  if (call.autocasts())
    return group_norm(call.cast(x), num_groups, call.cast(weight), call.cast(bias), eps);
  Tensor out = record_norm(call.op(), NormKind::Group, x, weight, bias, num_groups, true, [&] {
    return ops::group_norm_forward(x, num_groups, weight, bias, eps);
  });
  if (call.reported())
    call.report({x, weight, bias}, {{"num_groups", num_groups}, {"eps", eps}}, {out});
  return out;
}

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  OpCall call(OpId::InstanceNorm, x);
  Tensor out = record_norm(call.op(), NormKind::Instance, x, weight, bias, 1, use_input_stats, [&] {
    return ops::instance_norm_forward(x, running_mean, running_var, weight, bias, use_input_stats,
                                      momentum, eps);
  });
  if (call.reported())
    call.report({x, running_mean, running_var, weight, bias},
                {{"use_input_stats", use_input_stats}, {"momentum", momentum}, {"eps", eps}},
                {out});
  return out;
}

}  // namespace rcuda
