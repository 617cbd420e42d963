// Normalisation front ends (rcuda/ops/norm.h): torch's argument checks, the [N, C, S] views the
// primitives take (Note [Normalisation primitives] in rcuda/backend/backend.h), per-channel
// tensors in the statistics dtype, and the running statistics, updated in place.
#include "rcuda/ops/norm.h"

#include <cmath>
#include <string>

#include "layer_layout.h"
#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {
namespace {

DType stats_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

// x's sizes seen as [N, C, S].
struct Channels {
  int64_t n = 0, c = 0, s = 1;
};

Channels check_input(const char* op, const Tensor& x) {
  check_not_float8(op, x);
  check_floating(op, "input", x);
  RCUDA_CHECK(x.dim() >= 2, ShapeError, op,
              ": expected an input of at least 2 dims (N, C, ...), got shape ",
              shape_str(x.shape()));
  Channels ch{x.shape()[0], x.shape()[1], 1};
  for (int64_t d = 2; d < x.dim(); ++d) ch.s *= x.shape()[d];
  return ch;
}

void check_eps(const char* op, double eps) {
  RCUDA_CHECK(std::isfinite(eps) && eps >= 0, ValueError, op,
              ": eps must be finite and non-negative, got ", eps);
}

// A per-channel argument: C elements, x's dtype or (half x) float32, x's device.
void check_channel_tensor(const char* op, const char* arg, const Tensor& t, const Tensor& x,
                          int64_t channels) {
  if (!t.defined()) return;
  RCUDA_CHECK(t.numel() == channels, ShapeError, op, ": ", arg, " should contain ", channels,
              " elements (one per channel of input ", shape_str(x.shape()), "), got shape ",
              shape_str(t.shape()));
  RCUDA_CHECK(t.dtype() == x.dtype() || t.dtype() == stats_dtype(x.dtype()), DTypeError, op, ": ",
              arg, " is ", dtype_name(t.dtype()), " but input is ", dtype_name(x.dtype()),
              " (expected ", dtype_name(x.dtype()),
              x.dtype() == stats_dtype(x.dtype()) ? "" : " or float32", ")");
  check_same_device(op, {x, t});
}

// t as the primitives take it: contiguous [C] in the statistics dtype (undefined stays so).
Tensor channel_tensor(const Tensor& t, DType stats, int64_t channels) {
  if (!t.defined()) return t;
  return reshape(cast(t, stats), {channels});
}

// The [N, C, S] view of a tensor of x's shape in the layers' format.
Tensor ncs(const Tensor& t, const Channels& ch) { return t.view({ch.n, ch.c, ch.s}); }

// The statistics as the backward primitives read them: `count` elements, the statistics dtype.
Tensor saved_stats(const char* op, const char* arg, const Tensor& t, DType stats, int64_t count) {
  RCUDA_CHECK(t.defined() && t.numel() == count, ShapeError, op, ": ", arg, " must have ", count,
              " elements (the forward's statistics)", t.defined() ? ", got shape " : ", got none",
              t.defined() ? shape_str(t.shape()) : "");
  RCUDA_CHECK(t.dtype() == stats, DTypeError, op, ": ", arg, " must be ", dtype_name(stats),
              ", got ", dtype_name(t.dtype()));
  return reshape(t, {count});
}

// The gradient of a per-channel parameter, cast from the statistics dtype to the parameter's.
Tensor parameter_grad(const Tensor& g, const Tensor& weight, const Tensor& x) {
  if (!g.defined()) return g;
  return cast(g, weight.defined() ? weight.dtype() : x.dtype());
}

// Runs `update(work_mean, work_var)` on the running statistics as the primitive wants them
// (contiguous, statistics dtype), writing back and bumping the versions of the user's buffers.
template <typename F>
void with_running_stats(const Tensor& running_mean, const Tensor& running_var, DType stats,
                        int64_t channels, F update) {
  auto work = [&](const Tensor& t) {
    if (!t.defined()) return t;
    return t.dtype() == stats && t.is_contiguous() ? t.view({channels})
                                                   : clone(cast(t, stats)).view({channels});
  };
  const Tensor mean_work = work(running_mean), var_work = work(running_var);
  update(mean_work, var_work);
  auto write_back = [](const Tensor& user, const Tensor& w) {
    if (!user.defined()) return;
    if (w.storage() == user.storage())
      user.storage()->bump_version();  // Note [Version counter] in rcuda/tensor/storage.h
    else
      copy_(user, w.view(user.shape()));  // copy_ bumps the version
  };
  write_back(running_mean, mean_work);
  write_back(running_var, var_work);
}

NormForward batch_norm_impl(const char* op, const Tensor& x, const Tensor& running_mean,
                            const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                            bool training, double momentum, double eps) {
  const Channels ch = check_input(op, x);
  check_channel_tensor(op, "running_mean", running_mean, x, ch.c);
  check_channel_tensor(op, "running_var", running_var, x, ch.c);
  check_channel_tensor(op, "weight", weight, x, ch.c);
  check_channel_tensor(op, "bias", bias, x, ch.c);
  check_eps(op, eps);
  RCUDA_CHECK(std::isfinite(momentum), ValueError, op, ": momentum must be finite, got ", momentum);
  RCUDA_CHECK(training || (running_mean.defined() && running_var.defined()), ValueError, op,
              ": running_mean and running_var are required when training is false");
  RCUDA_CHECK(!training || ch.n * ch.s != 1, ValueError, op,
              ": expected more than 1 value per channel when training, got input of shape ",
              shape_str(x.shape()));
  const DType stats = stats_dtype(x.dtype());
  const bool channels_last = is_channels_last(x);
  NormForward r;
  r.out = empty_in_format(x.shape(), x.dtype(), x.device(), channels_last);
  const Tensor w = channel_tensor(weight, stats, ch.c), b = channel_tensor(bias, stats, ch.c);
  Backend& backend = backend_of(x);
  if (!training) {
    r.mean = channel_tensor(running_mean, stats, ch.c);
    r.invstd = rsqrt(add(channel_tensor(running_var, stats, ch.c), eps));
    if (x.numel() > 0)
      backend.batch_norm(ncs(r.out, ch), r.mean, r.invstd, ncs(in_format(x, channels_last), ch), w,
                         b, Tensor(), Tensor(), false, momentum, eps);
    return r;
  }
  if (x.numel() == 0) {  // an empty batch: nothing to normalise, the running statistics stay
    r.mean = zeros({ch.c}, {stats, x.device()});
    r.invstd = zeros({ch.c}, {stats, x.device()});
    return r;
  }
  r.mean = Tensor::empty({ch.c}, stats, x.device());
  r.invstd = Tensor::empty({ch.c}, stats, x.device());
  const Tensor xin = ncs(in_format(x, channels_last), ch);
  with_running_stats(running_mean, running_var, stats, ch.c,
                     [&](const Tensor& rm, const Tensor& rv) {
                       backend.batch_norm(ncs(r.out, ch), r.mean, r.invstd, xin, w, b, rm, rv, true,
                                          momentum, eps);
                     });
  return r;
}

NormForward group_norm_impl(const char* op, const Tensor& x, int64_t num_groups,
                            const Tensor& weight, const Tensor& bias, double eps) {
  const Channels ch = check_input(op, x);
  RCUDA_CHECK(num_groups > 0, ValueError, op, ": num_groups must be positive, got ", num_groups);
  RCUDA_CHECK(ch.c % num_groups == 0, ShapeError, op, ": expected the number of channels (", ch.c,
              ") to be divisible by num_groups (", num_groups, "), got input of shape ",
              shape_str(x.shape()));
  check_channel_tensor(op, "weight", weight, x, ch.c);
  check_channel_tensor(op, "bias", bias, x, ch.c);
  check_eps(op, eps);
  const DType stats = stats_dtype(x.dtype());
  const bool channels_last = is_channels_last(x);
  NormForward r;
  r.out = empty_in_format(x.shape(), x.dtype(), x.device(), channels_last);
  r.mean = Tensor::empty({ch.n, num_groups}, stats, x.device());
  r.invstd = Tensor::empty({ch.n, num_groups}, stats, x.device());
  if (x.numel() == 0) {
    if (r.mean.numel() > 0) {  // groups of no elements: the mean and variance of nothing
      fill_(r.mean, NAN);
      fill_(r.invstd, NAN);
    }
    return r;
  }
  backend_of(x).group_norm(ncs(r.out, ch), r.mean, r.invstd, ncs(in_format(x, channels_last), ch),
                           channel_tensor(weight, stats, ch.c), channel_tensor(bias, stats, ch.c),
                           num_groups, eps);
  return r;
}

NormGrads norm_backward(const char* op, const Tensor& grad_out, const Tensor& x,
                        const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                        int64_t groups, bool batch, bool batch_stats,
                        std::array<bool, 3> output_mask) {
  const Channels ch = check_input(op, x);
  check_channel_tensor(op, "weight", weight, x, ch.c);
  RCUDA_CHECK(grad_out.defined() && grad_out.shape() == x.shape(), ShapeError, op,
              ": grad_output must have the input's shape ", shape_str(x.shape()), ", got ",
              grad_out.defined() ? shape_str(grad_out.shape()) : "none");
  RCUDA_CHECK(grad_out.dtype() == x.dtype(), DTypeError, op, ": grad_output is ",
              dtype_name(grad_out.dtype()), " but input is ", dtype_name(x.dtype()));
  check_same_device(op, {x, grad_out});
  const DType stats = stats_dtype(x.dtype());
  const int64_t count = batch ? ch.c : ch.n * groups;
  const Tensor m = saved_stats(op, "mean", mean, stats, count);
  const Tensor r = saved_stats(op, "invstd", invstd, stats, count);
  check_same_device(op, {x, m, r});
  const bool channels_last = is_channels_last(x);
  NormGrads g;
  if (output_mask[0])
    g.grad_input = empty_in_format(x.shape(), x.dtype(), x.device(), channels_last);
  if (output_mask[1]) g.grad_weight = Tensor::empty({ch.c}, stats, x.device());
  if (output_mask[2]) g.grad_bias = Tensor::empty({ch.c}, stats, x.device());
  if (x.numel() == 0) {  // sums of nothing
    if (g.grad_weight.defined()) fill_(g.grad_weight, 0);
    if (g.grad_bias.defined()) fill_(g.grad_bias, 0);
  } else if (output_mask[0] || output_mask[1] || output_mask[2]) {
    const Tensor gi = g.grad_input.defined() ? ncs(g.grad_input, ch) : Tensor();
    const Tensor dy = ncs(in_format(grad_out, channels_last), ch);
    const Tensor xin = ncs(in_format(x, channels_last), ch);
    const Tensor w = channel_tensor(weight, stats, ch.c);
    Backend& backend = backend_of(x);
    if (batch)
      backend.batch_norm_backward(gi, g.grad_weight, g.grad_bias, dy, xin, m, r, w, batch_stats);
    else
      backend.group_norm_backward(gi, g.grad_weight, g.grad_bias, dy, xin, m, r, w, groups);
  }
  g.grad_weight = parameter_grad(g.grad_weight, weight, x);
  g.grad_bias = parameter_grad(g.grad_bias, weight, x);
  return g;
}

}  // namespace

NormForward batch_norm_forward(const Tensor& x, const Tensor& running_mean,
                               const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                               bool training, double momentum, double eps) {
  return batch_norm_impl("batch_norm", x, running_mean, running_var, weight, bias, training,
                         momentum, eps);
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  return batch_norm_forward(x, running_mean, running_var, weight, bias, training, momentum, eps)
      .out;
}

NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                              const Tensor& mean, const Tensor& invstd, bool training,
                              std::array<bool, 3> output_mask) {
  return norm_backward("batch_norm_backward", grad_out, x, weight, mean, invstd, 0, true, training,
                       output_mask);
}

NormForward group_norm_forward(const Tensor& x, int64_t num_groups, const Tensor& weight,
                               const Tensor& bias, double eps) {
  return group_norm_impl("group_norm", x, num_groups, weight, bias, eps);
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  return group_norm_forward(x, num_groups, weight, bias, eps).out;
}

NormGrads group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t num_groups,
                              const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                              std::array<bool, 3> output_mask) {
  constexpr const char* kOp = "group_norm_backward";
  RCUDA_CHECK(num_groups > 0 && x.dim() >= 2 && x.shape()[1] % num_groups == 0, ShapeError, kOp,
              ": num_groups ", num_groups, " does not divide the channels of input ",
              shape_str(x.shape()));
  return norm_backward(kOp, grad_out, x, weight, mean, rstd, num_groups, false, true, output_mask);
}

NormForward instance_norm_forward(const Tensor& x, const Tensor& running_mean,
                                  const Tensor& running_var, const Tensor& weight,
                                  const Tensor& bias, bool use_input_stats, double momentum,
                                  double eps) {
  constexpr const char* kOp = "instance_norm";
  if (!use_input_stats)
    return batch_norm_impl(kOp, x, running_mean, running_var, weight, bias, false, momentum, eps);
  const Channels ch = check_input(kOp, x);
  RCUDA_CHECK(ch.s > 1, ValueError, kOp,
              ": expected more than 1 spatial element when training, got input of shape ",
              shape_str(x.shape()));
  check_channel_tensor(kOp, "running_mean", running_mean, x, ch.c);
  check_channel_tensor(kOp, "running_var", running_var, x, ch.c);
  RCUDA_CHECK(std::isfinite(momentum), ValueError, kOp, ": momentum must be finite, got ",
              momentum);
  // Group norm with a group per channel: the same statistics and affine map in either memory
  // format (docs/pooling-normalization.md, "Instance norm").
  NormForward r = group_norm_impl(kOp, x, ch.c, weight, bias, eps);
  if ((running_mean.defined() || running_var.defined()) && ch.n > 0) {
    const DType stats = stats_dtype(x.dtype());
    with_running_stats(
        running_mean, running_var, stats, ch.c, [&](const Tensor& rm, const Tensor& rv) {
          if (rm.defined()) copy_(rm, add(mul(rm, 1 - momentum), mul(mean(r.mean, {0}), momentum)));
          if (rv.defined()) {
            const Tensor x3 = cast(reshape(x, {ch.n, ch.c, ch.s}), stats);
            copy_(rv, add(mul(rv, 1 - momentum), mul(mean(var(x3, {2}, 1), {0}), momentum)));
          }
        });
  }
  return r;
}

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  return instance_norm_forward(x, running_mean, running_var, weight, bias, use_input_stats,
                               momentum, eps)
      .out;
}

NormGrads instance_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                 const Tensor& mean, const Tensor& invstd, bool use_input_stats,
                                 std::array<bool, 3> output_mask) {
  constexpr const char* kOp = "instance_norm_backward";
  if (!use_input_stats)
    return norm_backward(kOp, grad_out, x, weight, mean, invstd, 0, true, false, output_mask);
  check_input(kOp, x);
  return norm_backward(kOp, grad_out, x, weight, mean, invstd, x.shape()[1], false, true,
                       output_mask);
}

}  // namespace rcuda::ops
