// fp8 linear layers (compute capability 8.9 or newer on CUDA; the CPU runs the same arithmetic
// as a reference): torch's linear with the forward product and both products of the backward in
// float8, each tensor scaled per tensor by delayed scaling as Transformer Engine's DelayedScaling
// recipe (Note [Delayed scaling] in src/nn/fp8_linear.cpp; docs/mixed-precision.md).
#pragma once

#include <cstdint>

#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

// Transformer Engine's recipe knobs: scales come from the largest |value| seen over the last
// amax_history_len steps, divided by 2^margin for headroom.
struct Fp8Recipe {
  int64_t amax_history_len = 1024;
  int margin = 0;
};

// What one fp8 linear layer carries between steps: the amax histories and the current scales of
// its input, weight and output gradient, on the layer's device. Not a parameter: an optimizer
// never sees it; checkpoint it with the model as buffers if training resumes.
class Fp8LinearState {
 public:
  explicit Fp8LinearState(Device device, Fp8Recipe recipe = {});
  // Adopts existing tensors without copying (a module's buffers): amax_history [3, H] (contiguous)
  // and scale [3], float32, on one device. The history is then updated in place; scale() is
  // a new tensor after each step, which the owner stores back.
  Fp8LinearState(const Tensor& amax_history, const Tensor& scale, int margin = 0);

  const Fp8Recipe& recipe() const { return recipe_; }
  Device device() const { return amax_history_.device(); }
  // [3, amax_history_len] float32; rows: input, weight, grad_output; column 0 is the step being
  // taken (raised by its casts), older steps follow.
  const Tensor& amax_history() const { return amax_history_; }
  // [3] float32: the scales the last forward cast with (ones before the first), and 1 / scale.
  const Tensor& scale() const { return scale_; }
  const Tensor& scale_inv() const { return scale_inv_; }

  // Restores a saved state (amax_history [3, H] and scale [3], float32, moved to the device).
  void load(const Tensor& amax_history, const Tensor& scale);
  // Starts the next step: new scales from the histories, histories rolled (one launch).
  void advance();

 private:
  Fp8Recipe recipe_;
  Tensor amax_history_, scale_, scale_inv_;
};

// x @ weight^T + bias with x [..., K] (float32, float16 or bfloat16), weight [N, K] (float32,
// float16 or bfloat16; cast to float8_e4m3fn each call, so it may be an optimizer's float32
// master copy) and bias [N] or undefined; the result has x's dtype. x, weight and the state on
// one device. K and N must be multiples of 16 (cuBLASLt's fp8 kernels); when the weight needs a
// gradient and the rows of x (all dims but the last) are not a multiple of 16, the weight's
// gradient is computed in x's dtype instead of float8. Differentiable in x, weight and bias:
// the output gradient is cast to float8_e5m2. Each call starts a step of `state`.
Tensor fp8_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Fp8LinearState& state);

}  // namespace rcuda::nn
