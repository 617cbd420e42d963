// Placeholders for the CPU backend's recurrent primitives (Note [Recurrent primitives] in
// backend.h) until their oneDNN and float64 implementations land: both throw.
#include "cpu_backend.h"
#include "rcuda/core/error.h"

namespace rcuda::cpu {

Tensor CpuBackend::rnn(const RnnArgs&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                       const Tensor&, const Tensor&, const TensorList&) {
  throw InternalError("rnn: the CPU backend's recurrent layers are not implemented yet");
}

void CpuBackend::rnn_backward(const RnnArgs&, const Tensor&, const Tensor&, const Tensor&,
                              const TensorList&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, const Tensor&, const Tensor&, const TensorList&,
                              const Tensor&, const Tensor&) {
  throw InternalError("rnn_backward: the CPU backend's recurrent layers are not implemented yet");
}

}  // namespace rcuda::cpu
