// CUDA primitives rcuda does not offer yet: each throws a DeviceError naming the op and the way
// around it. Padding with a constant and area interpolation need none of these (ops build them
// from fill, copy and adaptive pooling), so they run on CUDA; reflect, replicate and circular
// padding and nearest/linear interpolation run on the CPU for now (docs/resample-pad.md), and so
// do the recurrent layers (docs/rnn.md, "CUDA").
#include <string>

#include "cuda_backend.h"
#include "rcuda/core/error.h"

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

const char* rnn_mode_name(Backend::RnnMode mode) {
  switch (mode) {
    case Backend::RnnMode::Lstm:
      return "LSTM";
    case Backend::RnnMode::Gru:
      return "GRU";
    case Backend::RnnMode::RnnTanh:
    case Backend::RnnMode::RnnRelu:
      return "RNN";
  }
  return "?";
}

[[noreturn]] void no_rnn(const Backend::RnnArgs& args) {
  throw DeviceError(std::string("rnn: ") + rnn_mode_name(args.mode) +
                    " layers are not supported on CUDA yet; run the layer on the CPU (move its "
                    "weights and input with to(\"cpu\"))");
}

[[noreturn]] void no_interpolate() {
  throw DeviceError(
      "interpolate: modes 'nearest', 'nearest-exact', 'linear' and 'bilinear' are not supported "
      "on CUDA yet; interpolate on the CPU (move the tensor with to(\"cpu\")), or use mode "
      "'area', which runs on CUDA");
}

}  // namespace

void CudaBackend::pad(const PadArgs& args, const Tensor&, const Tensor&) { no_pad(args); }

void CudaBackend::pad_backward(const PadArgs& args, const Tensor&, const Tensor&) { no_pad(args); }

void CudaBackend::interpolate(const InterpolateArgs&, const Tensor&, const Tensor&) {
  no_interpolate();
}

void CudaBackend::interpolate_backward(const InterpolateArgs&, const Tensor&, const Tensor&) {
  no_interpolate();
}

Tensor CudaBackend::rnn(const RnnArgs& args, const Tensor&, const Tensor&, const Tensor&,
                        const Tensor&, const Tensor&, const Tensor&, const TensorList&) {
  no_rnn(args);
}

void CudaBackend::rnn_backward(const RnnArgs& args, const Tensor&, const Tensor&, const Tensor&,
                               const TensorList&, const Tensor&, const Tensor&, const Tensor&,
                               const Tensor&, const Tensor&, const Tensor&, const TensorList&,
                               const Tensor&, const Tensor&) {
  no_rnn(args);
}

}  // namespace rcuda::cuda
