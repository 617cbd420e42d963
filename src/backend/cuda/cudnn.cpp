#include "backend/cuda/cudnn.h"

#include <string>

#include "backend/cuda/runtime.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::cuda {

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed: " + cudnnGetErrorString(status) + " at " + file +
                  ":" + std::to_string(line));
}

// Note [cuDNN versions]
// cuDNN promises that a build runs on the same or a newer minor version of the major it was built
// against. A different major has other symbols and semantics: refused at the first use, with a
// typed error saying what to do. An older minor (the build machine's headers newer than the GPU
// machine's library) usually works but may lack engines for some graphs: plan-building errors
// then say so (conv_cudnn.cpp), and `rcuda doctor` reports it (check cudnn_version).
namespace {

int major_of(size_t version) {  // cuDNN 9: major*10000 + minor*100 + patch; 8: major*1000 + ...
  return static_cast<int>(version >= 10000 ? version / 10000 : version / 1000);
}

void check_cudnn_runtime() {
  static const bool checked = [] {
    const size_t loaded = cudnnGetVersion();
    RCUDA_CHECK(major_of(loaded) == CUDNN_MAJOR, CudaError, "cuDNN: rcuda was built with cuDNN ",
                CUDNN_MAJOR, ".", CUDNN_MINOR, ".", CUDNN_PATCHLEVEL, " but the loaded cuDNN is ",
                loaded, " (major ", major_of(loaded), "): install cuDNN ", CUDNN_MAJOR,
                " for this CUDA version (Debian/Ubuntu: cudnn", CUDNN_MAJOR,
                "-cuda-12 or -13) first on the library path, or rebuild rcuda against the "
                "installed cuDNN; `rcuda doctor` shows which library is loaded");
    return true;
  }();
  (void)checked;
}

}  // namespace

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
    check_cudnn_runtime();
    DeviceGuard guard(device);
    RCUDA_CUDNN_CHECK(cudnnCreate(&handle));
  }
  RCUDA_CUDNN_CHECK(cudnnSetStream(handle, current_stream(device)));
  return handle;
}

Tensor cudnn_workspace(int device, size_t bytes) {
  if (bytes == 0) return Tensor();
  return Tensor::empty({static_cast<int64_t>(bytes)}, DType::UInt8,
                       Device(DeviceType::CUDA, device));
}

}  // namespace rcuda::cuda
