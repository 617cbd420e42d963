// Kernel launches through the driver's cuLaunchKernel, for the launches that every small op
// pays (the elementwise engine of kernels/launch.cuh, fills, reductions).
//
// Note [Launching through the driver]
// A small op's host time is one kernel launch and little else (bench_op_overhead). On the
// H200's host the runtime's launch (<<<>>> or cudaLaunchKernel) of an empty kernel cost
// 3.3-4.9 us, and the driver's cuLaunchKernel, given the kernel's function, 0.3-0.7 us less
// (bench_launch_floor, the same run; 0.3 us on an H100's host): what the runtime adds is its
// own bookkeeping, such as looking up the device function for the launched address. So the hot
// launches call the driver with the kernel's CUfunction in the launching device's context,
// looked up once per device (cudaGetFuncBySymbol, with that device current: every launch site
// runs under a DeviceGuard). A context-independent CUkernel (cudaGetKernel) would need no
// device, but the driver then finds the context's function at every launch: 0.07-0.16 us more
// per launch of an empty kernel on an H100's host (bench_launch_floor, four runs). On that host
// the runtime's launches cost a fill 0.6-0.8 us and a relu 0.3-0.5 us more per op than these
// (bench_op_overhead with RCUDA_RUNTIME_LAUNCH=1, the same binary, four runs each; add's spread
// between runs was wider than the difference). The entry point comes through the runtime
// (cudaGetDriverEntryPointByVersion), so rcuda links no libcuda, which a machine without a GPU
// lacks. Where there is no entry point or function, or the driver refuses a launch, the launch
// goes through cudaLaunchKernel instead, which then reports any error in the runtime's terms
// (RCUDA_CUDA_CHECK) as every other launch does. RCUDA_RUNTIME_LAUNCH=1 sends every launch
// there, to compare the two.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <tuple>
#include <utility>

#include "backend/cuda/runtime.h"

namespace rcuda::cuda {

using DriverLaunch = CUresult(CUDAAPI*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**, void**);

// cuLaunchKernel, or null where the driver does not give it (then launches use the runtime).
DriverLaunch driver_launch();
// The kernel's function in the current device's context, or null where the runtime has none.
cudaFunction_t kernel_function(const void* kernel);

// One __global__ function's launcher (make it a function-local static at the launch site).
// launch() takes the device, which must be current (the caller's DeviceGuard), then what <<<>>>
// takes: the grid, the block, the dynamic shared memory's bytes, the stream, then the kernel's
// arguments, converted to its parameter types.
template <typename... Params>
class KernelLauncher {
 public:
  explicit KernelLauncher(void (*kernel)(Params...)) : kernel_(kernel), driver_(driver_launch()) {}

  template <typename... Args>
  void launch(int device, dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
              Args&&... args) const {
    std::tuple<Params...> values(std::forward<Args>(args)...);
    std::apply(
        [&](auto&... value) {
          void* arguments[] = {static_cast<void*>(&value)..., nullptr};
          const CUfunction f = driver_ != nullptr ? function(device) : nullptr;
          if (f != nullptr &&
              driver_(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                      static_cast<unsigned>(shared), reinterpret_cast<CUstream>(stream), arguments,
                      nullptr) == CUDA_SUCCESS)
            return;
          RCUDA_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), grid, block,
                                            arguments, shared, stream));
        },
        values);
  }

 private:
  // The kernel's function on `device`, looked up at its first launch there. Two threads may
  // both look it up; they store the same function.
  CUfunction function(int device) const {
    CUfunction f = functions_[device].load(std::memory_order_acquire);
    if (f == nullptr) {
      f = reinterpret_cast<CUfunction>(kernel_function(reinterpret_cast<const void*>(kernel_)));
      functions_[device].store(f, std::memory_order_release);
    }
    return f;
  }

  void (*kernel_)(Params...);
  DriverLaunch driver_;
  mutable std::atomic<CUfunction> functions_[kMaxDevices] = {};
};

}  // namespace rcuda::cuda
