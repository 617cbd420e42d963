// The gradients of pad and interpolate: one ops call each, from the saved plan (shapes, modes,
// the memory format); neither node saves a tensor, as both backward passes are linear in the
// output gradient alone.
#include "resample.h"

namespace rcuda::autograd {

const char* PadBackward::name() const {
  if (plan.constant) return "ConstantPadNdBackward";
  const size_t dims = plan.padding.size() / 2;
  static const char* kNames[3][3] = {
      {"ReflectionPad1DBackward", "ReflectionPad2DBackward", "ReflectionPad3DBackward"},
      {"ReplicationPad1DBackward", "ReplicationPad2DBackward", "ReplicationPad3DBackward"},
      {"CircularPad1DBackward", "CircularPad2DBackward", "CircularPad3DBackward"}};
  int mode = 0;
  switch (plan.args.mode) {
    case PadMode::Reflect:
      mode = 0;
      break;
    case PadMode::Replicate:
      mode = 1;
      break;
    case PadMode::Circular:
      mode = 2;
      break;
  }
  return kNames[mode][dims - 1];
}

TensorList PadBackward::apply(TensorList&& grads) { return {ops::pad_backward(grads[0], plan)}; }

const char* InterpolateBackward::name() const {
  const bool one_d = plan.spatial_dims == 1;
  switch (plan.args.mode) {
    case InterpolateMode::Nearest:
      return one_d ? "UpsampleNearest1DBackward" : "UpsampleNearest2DBackward";
    case InterpolateMode::NearestExact:
      return one_d ? "UpsampleNearestExact1DBackward" : "UpsampleNearestExact2DBackward";
    case InterpolateMode::Linear:
      return one_d ? "UpsampleLinear1DBackward" : "UpsampleBilinear2DBackward";
  }
  return "InterpolateBackward";
}

TensorList InterpolateBackward::apply(TensorList&& grads) {
  return {ops::interpolate_backward(grads[0], plan)};
}

}  // namespace rcuda::autograd
