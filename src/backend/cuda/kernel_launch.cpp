// The driver's launch entry point and kernel handles (Note [Launching through the driver] in
// kernel_launch.h).
#include "backend/cuda/kernel_launch.h"

#include <cstdlib>

namespace rcuda::cuda {

DriverLaunch driver_launch() {
  static const DriverLaunch launch = [] {
    // RCUDA_RUNTIME_LAUNCH=1 keeps every launch in the runtime (to compare the two).
    const char* runtime_only = std::getenv("RCUDA_RUNTIME_LAUNCH");
    if (runtime_only != nullptr && runtime_only[0] == '1') return DriverLaunch{nullptr};
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();  // nothing sticky: the runtime path serves
      return DriverLaunch{nullptr};
    }
    return reinterpret_cast<DriverLaunch>(entry);
  }();
  return launch;
}

cudaFunction_t kernel_function(const void* kernel) {
  cudaFunction_t function = nullptr;
  if (cudaGetFuncBySymbol(&function, kernel) != cudaSuccess) {
    cudaGetLastError();  // nothing sticky: the runtime's launch reports what is wrong
    return nullptr;
  }
  return function;
}

}  // namespace rcuda::cuda
