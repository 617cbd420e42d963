#include "backend/cuda/cudnn.h"

#include <string>

#include "backend/cuda/runtime.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::cuda {

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed: " + cudnnGetErrorString(status) + " at " + file +
                  ":" + std::to_string(line));
}

// Note [cuDNN handles]
// cudnnCreate is slow (milliseconds: it loads kernels) and a handle is not safe to use from two
// threads at once, so each thread keeps one per device. The handles are deliberately never
// destroyed: at thread or process exit the CUDA context may already be gone, and
// cudnnDestroy would then fail or crash. Rebinding the stream on every call is cheap (a field
// write) and follows set_current_stream.
cudnnHandle_t cudnn_handle(int device) {
  RCUDA_CHECK(device >= 0 && device < kMaxDevices, DeviceError, "cuDNN: cuda:", device,
              " is outside the ", kMaxDevices, " devices rcuda supports");
  thread_local cudnnHandle_t handles[kMaxDevices] = {};
  cudnnHandle_t& handle = handles[device];
  if (handle == nullptr) {
    DeviceGuard guard(device);
    RCUDA_CUDNN_CHECK(cudnnCreate(&handle));
  }
  RCUDA_CUDNN_CHECK(cudnnSetStream(handle, current_stream(device)));
  return handle;
}

Tensor cudnn_workspace(int device, size_t bytes) {
  if (bytes == 0) return Tensor();
  return Tensor::empty({static_cast<int64_t>(bytes)}, DType::UInt8, Device(DeviceType::CUDA, device));
}

}  // namespace rcuda::cuda
