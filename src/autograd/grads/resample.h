// The backward nodes of pad and interpolate (entry points in src/autograd/resample.cpp).
#pragma once

#include "rcuda/autograd/node.h"
#include "rcuda/ops/resample.h"

namespace rcuda::autograd {

// Every pad mode: ops::pad_backward from the forward's plan (constant padding: the gradient
// cropped by the same amounts; the others: each input element's sum over the outputs reading it).
struct PadBackward final : Node {
  ops::PadPlan plan;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
};

// nearest, nearest-exact, linear and bilinear interpolation ("area" records adaptive average
// pooling's node instead): ops::interpolate_backward from the forward's plan.
struct InterpolateBackward final : Node {
  ops::InterpolatePlan plan;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
};

}  // namespace rcuda::autograd
