// Gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_: in place on the
// gradients of `params` (parameters without a gradient are skipped).
#pragma once

#include <optional>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::optim {

// Scales every gradient by min(1, max_norm / (total_norm + 1e-6)), where total_norm is the
// norm_type-norm (> 0, or infinity) of all gradients together, and returns total_norm: a 0-dim
// tensor on the gradients' device (the first parameter's device when none has a gradient,
// the CPU without parameters), in their promoted dtype. Nothing synchronises with the host
// unless error_if_nonfinite is set, which reads the norm and throws ValueError, leaving the
// gradients as they were, when it is NaN or infinite. foreach (the default when unset): one
// fused multi-tensor norm and one scaling per device; false: one norm and one multiply per
// gradient, as torch's foreach=False.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2,
                       bool error_if_nonfinite = false, std::optional<bool> foreach = std::nullopt);

// Clamps every gradient to [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace rcuda::optim
