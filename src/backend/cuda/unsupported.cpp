// CUDA primitives rcuda does not offer yet: each throws a DeviceError naming the op and the way
// around it. Padding with a constant and area interpolation need none of these (ops build them
// from fill, copy and adaptive pooling), so they run on CUDA; reflect, replicate and circular
// padding and nearest/linear interpolation run on the CPU for now (docs/resample-pad.md).
#include "cuda_backend.h"

namespace rcuda::cuda {
namespace {

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Replicate:
      return "replicate";
    case PadMode::Circular:
      return "circular";
  }
  return "?";
}

[[noreturn]] void no_pad(const PadArgs& args) {
  throw DeviceError(std::string("pad: mode '") + pad_mode_name(args.mode) +
                    "' is not supported on CUDA yet; pad on the CPU (move the tensor with "
                    "to(\"cpu\")) or use mode 'constant', which runs on CUDA");
}

[[noreturn]] void no_interpolate() {
  throw DeviceError(
      "interpolate: modes 'nearest', 'nearest-exact', 'linear' and 'bilinear' are not supported "
      "on CUDA yet; interpolate on the CPU (move the tensor with to(\"cpu\")), or use mode "
      "'area', which runs on CUDA");
}

}  // namespace

void CudaBackend::pad(const PadArgs& args, const Tensor&, const Tensor&) { no_pad(args); }

void CudaBackend::pad_backward(const PadArgs& args, const Tensor&, const Tensor&) {
  no_pad(args);
}

void CudaBackend::interpolate(const InterpolateArgs&, const Tensor&, const Tensor&) {
  no_interpolate();
}

void CudaBackend::interpolate_backward(const InterpolateArgs&, const Tensor&, const Tensor&) {
  no_interpolate();
}

}  // namespace rcuda::cuda
