// The CPU's recurrent primitives (Note [Recurrent primitives] in backend.h): not yet implemented.
#include "cpu_backend.h"
#include "rcuda/core/error.h"

namespace rcuda::cpu {

Tensor CpuBackend::rnn(const RnnArgs&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                       const Tensor&, const Tensor&, const TensorList&) {
  throw InternalError("rnn: not implemented on the CPU yet");
}

void CpuBackend::rnn_backward(const RnnArgs&, const Tensor&, const Tensor&, const Tensor&,
                              const TensorList&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, const Tensor&, const Tensor&, const TensorList&,
                              const Tensor&, const Tensor&) {
  throw InternalError("rnn_backward: not implemented on the CPU yet");
}

}  // namespace rcuda::cpu
