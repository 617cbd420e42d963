// Kernel launches through the driver's cuLaunchKernel, for the launches that every small op
// pays (the elementwise engine of kernels/launch.cuh, fills, reductions).
//
// Note [Launching through the driver]
// A small op's host time is one kernel launch and little else (bench_op_overhead). On the
// H200's host the runtime's launch (<<<>>> or cudaLaunchKernel) of an empty kernel cost
// 3.3-4.9 us, and the driver's cuLaunchKernel, given the kernel's handle, 0.3-0.7 us less
// (bench_launch_floor, the same run; 0.3 us on an H100's host): what the runtime adds is its
// own bookkeeping, such as looking up the device function for the launched address. So the hot
// launches look their kernel's handle up once (cudaGetKernel: a context-independent CUkernel,
// which the driver launches on the context of the stream it is given; rcuda's streams are never
// the legacy default stream) and call the driver: per op, 0.1-0.2 us less than the runtime's
// launch in the same call (H100). The entry point comes through the runtime
// (cudaGetDriverEntryPointByVersion), so rcuda links no libcuda, which a machine without a GPU
// lacks. Where there is no entry point, or the driver refuses a launch, the launch goes through
// cudaLaunchKernel instead, which then reports any error in the runtime's terms
// (RCUDA_CUDA_CHECK) as every other launch does. RCUDA_RUNTIME_LAUNCH=1 sends every launch
// there, to compare the two.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <tuple>
#include <utility>

#include "backend/cuda/runtime.h"

namespace rcuda::cuda {

using DriverLaunch = CUresult(CUDAAPI*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**, void**);

// cuLaunchKernel, or null where the driver does not give it (then launches use the runtime).
DriverLaunch driver_launch();
// The kernel's context-independent handle, or null where the runtime has none for it.
cudaKernel_t kernel_handle(const void* kernel);

// One __global__ function's launcher: its handle, looked up when the launcher is made (make it a
// function-local static at the launch site). launch() takes what <<<>>> takes: the grid, the
// block, the dynamic shared memory's bytes, the stream, then the kernel's arguments, converted to
// its parameter types.
template <typename... Params>
class KernelLauncher {
 public:
  explicit KernelLauncher(void (*kernel)(Params...))
      : kernel_(kernel),
        handle_(kernel_handle(reinterpret_cast<const void*>(kernel))),
        driver_(handle_ != nullptr ? driver_launch() : nullptr) {}

  template <typename... Args>
  void launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, Args&&... args) const {
    std::tuple<Params...> values(std::forward<Args>(args)...);
    std::apply(
        [&](auto&... value) {
          void* arguments[] = {static_cast<void*>(&value)..., nullptr};
          if (driver_ != nullptr &&
              driver_(reinterpret_cast<CUfunction>(handle_), grid.x, grid.y, grid.z, block.x,
                      block.y, block.z, static_cast<unsigned>(shared),
                      reinterpret_cast<CUstream>(stream), arguments, nullptr) == CUDA_SUCCESS)
            return;
          RCUDA_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), grid, block,
                                            arguments, shared, stream));
        },
        values);
  }

 private:
  void (*kernel_)(Params...);
  cudaKernel_t handle_;
  DriverLaunch driver_;
};

}  // namespace rcuda::cuda
