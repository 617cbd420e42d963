// Page-locked host memory for fast, asynchronous host<->device copies.
#include <cuda_runtime.h>

#include <cstring>

#include "rcuda/backend/backend.h"
#include "rcuda/backend/cuda.h"
#include "runtime.h"

namespace rcuda::cuda {

Tensor pin_memory(const Tensor& t) {
  RCUDA_CHECK(t.device().is_cpu(), DeviceError, "pin_memory: expects a CPU tensor, got one on ",
              t.device().str());
  RCUDA_CHECK(device_count() > 0, DeviceError, "pin_memory: ", unavailable_reason());
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  void* ptr = nullptr;
  if (nbytes > 0) {
    const cudaError_t status = cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemoryError(
          "pin_memory: could not page-lock " + std::to_string(nbytes) + " bytes of host memory",
          nbytes, 0, 0);
    }
    RCUDA_CUDA_CHECK(status);
  }
  // cudaFreeHost waits for copies still reading the memory, so freeing early is safe.
  std::shared_ptr<void> owner(ptr, [](void* p) {
    if (p != nullptr) cudaFreeHost(p);
  });
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(ptr, nbytes, Device(DeviceType::CPU), owner);
  impl->shape = t.shape();
  impl->strides = contiguous_strides(t.shape());
  impl->dtype = t.dtype();
  Tensor pinned(std::move(impl));
  if (nbytes > 0) backend_for(Device(DeviceType::CPU)).copy(pinned, t);
  return pinned;
}

bool is_pinned(const Tensor& t) {
  if (!t.device().is_cpu() || t.data_ptr() == nullptr || device_count() == 0) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, t.data_ptr()) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace rcuda::cuda
