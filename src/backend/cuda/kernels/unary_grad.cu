// unary_grad on the GPU: grad_in = grad_out * f'(x) in one pass over three inputs, through the
// elementwise engine (16-byte accesses when contiguous), with the derivative formulas the CPU
// backend shares (backend/unary_math.h, Note [Unary formulas]).
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/dispatch.h"
#include "backend/unary_math.h"

namespace rcuda::cuda {
namespace {

using backend::ComputeType;
using backend::convert;

template <typename T>
void unary_grad_typed(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& x,
                      const Tensor& out, const UnaryArgs& args) {
  using C = ComputeType<T>;
  launch_map<T, T, 3>(grad_in, {grad_out, x, out}, [op, args] __device__(T g, T xv, T yv) {
    return convert<T>(
        backend::unary_grad_float<C>(op, convert<C>(g), convert<C>(xv), convert<C>(yv), args));
  });
}

}  // namespace

void CudaBackend::unary_grad(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out,
                             const Tensor& x, const Tensor& out, const UnaryArgs& args) {
  backend::dispatch_floating(grad_out.dtype(), "unary_grad", [&](auto tag) {
    unary_grad_typed<decltype(tag)>(op, grad_in, grad_out, x, out, args);
  });
}

}  // namespace rcuda::cuda
