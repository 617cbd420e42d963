// The recurrent primitives (Note [Recurrent primitives] in backend.h) in a CUDA build whose
// cuDNN implementation is not part of it: a clear error instead of a missing override.
#include "cuda_backend.h"
#include "rcuda/core/error.h"

namespace rcuda::cuda {

Tensor CudaBackend::rnn(const RnnArgs&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                        const Tensor&, const Tensor&, const TensorList&) {
  throw DeviceError("rnn: not built for CUDA in this build");
}

void CudaBackend::rnn_backward(const RnnArgs&, const Tensor&, const Tensor&, const Tensor&,
                               const TensorList&, const Tensor&, const Tensor&, const Tensor&,
                               const Tensor&, const Tensor&, const Tensor&, const TensorList&,
                               const Tensor&, const Tensor&) {
  throw DeviceError("rnn_backward: not built for CUDA in this build");
}

}  // namespace rcuda::cuda
