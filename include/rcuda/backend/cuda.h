// CUDA devices, streams and memory, seen from code that does not include CUDA headers.
// Every function exists in CPU-only builds too: device_count() is then 0 and the rest throw
// DeviceError saying rcuda was built without CUDA.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "rcuda/memory/allocator.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::cuda {

// Whether this build has the CUDA backend compiled in.
bool is_built();
// Devices usable now (0 without a driver or device, never throws); honours CUDA_VISIBLE_DEVICES.
int device_count();
// Why device_count() is 0, in one sentence ("" when it is not).
std::string unavailable_reason();
int runtime_version();  // e.g. 13000; 0 when not built
int driver_version();   // 0 without a driver

struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int64_t total_memory_bytes = 0;
  int multiprocessor_count = 0;
  int64_t l2_cache_bytes = 0;
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-..."
  std::string pci_bus_id;  // "0000:3b:00.0"
};
// IndexError naming the index and the count for a device that does not exist.
DeviceProperties properties(int device);
int current_device();
void set_device(int device);
// Waits for all work queued on the device's current stream of this thread.
void synchronize(int device);

// Memory pool of one device (Note [CUDA memory pool] in src/backend/cuda/allocator.cpp).
MemoryStats memory_stats(int device);
void reset_peak_memory_stats(int device);
void empty_cache(int device);
// Bytes the pool keeps cached after frees before returning memory to the driver.
void set_release_threshold(int device, uint64_t bytes);
uint64_t release_threshold(int device);
// Called, in order of registration, when an allocation fails, before the pool is trimmed
// and the allocation retried once. Hooks free what they can (the R package runs gc()).
// Returns an id for remove_oom_hook.
int add_oom_hook(std::function<void(int device, size_t requested_bytes)> hook);
void remove_oom_hook(int id);

// A CPU tensor in page-locked (pinned) host memory, so host<->device copies of it run
// asynchronously at full bus speed; a copy of t's values (t may be any CPU tensor).
Tensor pin_memory(const Tensor& t);
bool is_pinned(const Tensor& t);

// Milliseconds the work queued by `work` takes on the device's current stream, measured with
// CUDA events around it (for benchmarks: warm up first, repeat, take the median).
double time_ms(int device, const std::function<void()>& work);

// TF32 for float32 matmul: off by default (torch.backends.cuda.matmul.allow_tf32).
void set_allow_tf32(bool allow);
bool allow_tf32();

// TF32 for float32 convolutions and recurrent layers (cuDNN): on by default, as
// torch.backends.cudnn.allow_tf32, and separate from matmul's switch above (docs/convolution.md,
// docs/rnn-cudnn.md). Off keeps float32 accuracy.
void set_allow_conv_tf32(bool allow);
bool allow_conv_tf32();
// Autotuned convolutions, as torch.backends.cudnn.benchmark (off by default): the first call of
// each configuration times every cuDNN plan that supports it and keeps the fastest. That call
// synchronises and can take seconds; later ones run the chosen plan.
void set_cudnn_benchmark(bool on);
bool cudnn_benchmark();
// Whether batch_norm runs through cuDNN's graph API where cuDNN supports the call (on by
// default), or always through rcuda's own kernels (docs/pooling-normalization.md).
void set_cudnn_batch_norm(bool enabled);
bool cudnn_batch_norm();

}  // namespace rcuda::cuda
