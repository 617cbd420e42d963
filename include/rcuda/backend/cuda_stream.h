// CUDA streams as plain integers, for exchange with other libraries (DLPack's
// __dlpack__(stream=), docs/dlpack.md), seen from code that does not include CUDA headers. In
// builds without CUDA each function throws DeviceError saying so.
#pragma once

#include <cstdint>

namespace rcuda::cuda {

// A cudaStream_t as an integer. 1 and 2 are the CUDA runtime's own values for the legacy
// default stream (cudaStreamLegacy) and the per-thread default stream (cudaStreamPerThread),
// which is also how the Python array API numbers them; 0 is the legacy default stream too.
using StreamHandle = uintptr_t;

// The calling thread's current stream on `device` (Note [Current stream] in
// src/backend/cuda/runtime.h).
StreamHandle current_stream_handle(int device);

// Makes `waiting` wait, on the device, for the work queued on `producing` until now: an event
// recorded on one and waited for by the other, so the host never waits. Nothing when both are
// the same stream. Both streams must exist (not destroyed) when this is called.
void stream_wait(int device, StreamHandle waiting, StreamHandle producing);

}  // namespace rcuda::cuda
