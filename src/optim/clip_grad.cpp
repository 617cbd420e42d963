// torch.nn.utils.clip_grad_norm_ and clip_grad_value_ over the multi_tensor_norm and
// clip_by_total_norm primitives (or, with foreach = false, over per-gradient ops).
#include "rcuda/optim/clip_grad.h"

#include "device_grads.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "rcuda/backend/backend.h"
#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::optim {
namespace {

using detail::by_device;
using detail::DeviceGrads;
using detail::gradients_of;

// Total norms of several devices, combined on the first (as torch stacks them there).
Tensor combine_norms(std::vector<Tensor> norms, double norm_type) {
  if (norms.size() == 1) return norms[0];
  const Device first = norms[0].device();
  for (Tensor& n : norms) n = ops::to(n, first);
  return ops::norm(ops::stack(norms), norm_type);
}

Tensor total_norm_fused(const std::vector<DeviceGrads>& devices, double norm_type, DType dtype) {
  std::vector<Tensor> norms;
  for (const DeviceGrads& d : devices) {
    Tensor norm = ops::empty({}, {dtype, d.device});
    backend_for(d.device).multi_tensor_norm(d.dense, norm_type, norm);
    norms.push_back(std::move(norm));
  }
  return combine_norms(std::move(norms), norm_type);
}

// foreach = false: one norm per gradient, stacked per device, as torch.
Tensor total_norm_per_tensor(const std::vector<DeviceGrads>& devices, double norm_type,
                             DType dtype) {
  std::vector<Tensor> norms;
  for (const DeviceGrads& d : devices) {
    std::vector<Tensor> per_grad;
    for (const Tensor& g : d.grads)
      if (g.numel() > 0) per_grad.push_back(ops::to(ops::norm(g, norm_type), dtype));
    norms.push_back(per_grad.empty() ? ops::zeros({}, {dtype, d.device})
                                     : ops::norm(ops::stack(per_grad), norm_type));
  }
  return combine_norms(std::move(norms), norm_type);
}

void check_finite(const Tensor& total_norm, double norm_type) {
  const double value = ops::item(total_norm).to_double();
  if (std::isfinite(value)) return;
  std::ostringstream message;
  message << "clip_grad_norm_: the total norm of order " << norm_type << " of the gradients is "
          << value << ", so they cannot be clipped; to scale them by the non-finite norm anyway, "
          << "set error_if_nonfinite = false";
  throw ValueError(message.str());
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite, std::optional<bool> foreach) {
  RCUDA_CHECK(norm_type > 0, ValueError, "clip_grad_norm_: norm_type = ", norm_type,
              " is not supported (expected a number > 0 or infinity)");
  const std::vector<Tensor> grads = gradients_of(params, "clip_grad_norm_");
  if (grads.empty())
    return ops::zeros({}, {DType::Float32, params.empty() ? Device() : params[0].device()});
  DType dtype = grads[0].dtype();
  for (const Tensor& g : grads) dtype = promote_types(dtype, g.dtype());

  const std::vector<DeviceGrads> devices = by_device(grads);
  const bool fused = foreach.value_or(true);
  const Tensor total = fused ? total_norm_fused(devices, norm_type, dtype)
                             : total_norm_per_tensor(devices, norm_type, dtype);
  if (error_if_nonfinite) check_finite(total, norm_type);  // the one host synchronisation

  if (fused) {
    for (const DeviceGrads& d : devices) {
      backend_for(d.device).clip_by_total_norm(d.dense, ops::to(total, d.device), max_norm);
      d.write_back();
    }
  } else {
    const Tensor coefficient = ops::clamp(
        ops::div(ops::full_like(total, max_norm), ops::add(total, 1e-6)), std::nullopt, 1.0);
    for (const Tensor& g : grads) ops::mul_(g, ops::to(coefficient, g.device()));
  }
  for (const Tensor& g : grads) g.storage()->bump_version();
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  UnaryArgs clamp;
  clamp.has_min = clamp.has_max = true;
  clamp.min = -clip_value;
  clamp.max = clip_value;
  for (const Tensor& g : gradients_of(params, "clip_grad_value_")) {
    // In place: the unary primitive accepts its input as its output (Note [Backend contract]).
    if (g.numel() > 0) backend_for(g.device()).unary(UnaryOp::Clamp, g, g, clamp);
    g.storage()->bump_version();
  }
}

}  // namespace rcuda::optim
