#include "backend/cuda/cuda_backend.h"

namespace rcuda::cuda {
namespace {

Backend* make_cuda_backend() {
  register_allocator(DeviceType::CUDA, &cuda_allocator);
  return new CudaBackend();  // lives for the process
}

// The allocator is registered with the backend, and eagerly too, so that Tensor::empty on a
// CUDA device works before any op has asked for the backend.
const bool allocator_registered = [] {
  register_allocator(DeviceType::CUDA, &cuda_allocator);
  return true;
}();

}  // namespace

RCUDA_REGISTER_BACKEND(::rcuda::DeviceType::CUDA, make_cuda_backend)

}  // namespace rcuda::cuda
