// CUDA runtime plumbing shared by the CUDA backend's files: error checks, the device guard,
// and the current stream.
//
// Note [Current stream]
// Each device has one non-blocking stream that rcuda creates on first use (never the legacy
// default stream, which would serialise with everything and break graph capture). A thread
// may replace its current stream per device (StreamGuard, e.g. to capture a CUDA graph);
// otherwise it uses the device's shared stream, so that a tensor made on one thread and freed
// on another is still stream-ordered. Work is asynchronous: copying to the host synchronises.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "rcuda/core/error.h"

namespace rcuda::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);

// Throws CudaError naming the failing call, the CUDA error and the source location.
#define RCUDA_CUDA_CHECK(call)                                                   \
  do {                                                                           \
    const cudaError_t rcuda_status_ = (call);                                    \
    if (rcuda_status_ != cudaSuccess)                                            \
      ::rcuda::cuda::throw_cuda_error(rcuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: a bad launch configuration shows up here, not at the next call.
#define RCUDA_CUDA_CHECK_LAUNCH() RCUDA_CUDA_CHECK(cudaGetLastError())

// The size of every per-device table (streams, memory pools, cuBLASLt handles): device indices
// at or past it are refused by check_device_index.
constexpr int kMaxDevices = 64;

// DeviceError unless `device` names an existing device (below kMaxDevices).
void check_device_index(int device, const char* op);

// The calling thread's current stream on `device` (Note [Current stream]).
cudaStream_t current_stream(int device);
void set_current_stream(int device, cudaStream_t stream);  // nullptr restores the shared stream
cudaStream_t thread_stream(int device);  // the thread's own stream, or nullptr for the shared one

// Makes `device` current for the scope, restoring the previous device after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// The device's multiprocessor count, asked of the runtime once per device.
int multiprocessors(int device);

// Threads per block and the block count for a grid-stride loop over n elements: at most
// `per_multiprocessor` blocks per SM (8 x 256 threads fill an SM when a thread needs <= 32
// registers; compute-heavy kernels gain from a few more blocks to hide their tails).
constexpr int kThreadsPerBlock = 256;
int blocks_for(int64_t n, int device, int threads = kThreadsPerBlock, int per_multiprocessor = 8);

}  // namespace rcuda::cuda
