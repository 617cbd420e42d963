#include "runtime.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "backend/once.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::cuda {
namespace {

struct SharedStreams {
  backend::OnceValue<cudaStream_t> stream[kMaxDevices];  // Note [Made once, read often]
};

SharedStreams& shared_streams() {
  static SharedStreams* s = new SharedStreams();  // never destroyed: streams outlive statics
  return *s;
}

thread_local cudaStream_t thread_streams[kMaxDevices] = {};

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so the process stays usable
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(status) + " (" +
                  cudaGetErrorString(status) + ") at " + file + ":" + std::to_string(line));
}

void check_device_index(int device, const char* op) {
  const int count = device_count();
  RCUDA_CHECK(count > 0, DeviceError, op, ": cuda:", device, " requested but ",
              unavailable_reason());
  RCUDA_CHECK(device >= 0 && device < count, DeviceError, op, ": cuda:", device,
              " does not exist (", count, count == 1 ? " device" : " devices",
              " visible; valid indices 0 to ", count - 1, ")");
  RCUDA_CHECK(device < kMaxDevices, DeviceError, op, ": cuda:", device, " is outside the ",
              kMaxDevices, " devices rcuda supports");
}

cudaStream_t current_stream(int device) {
  const cudaStream_t own = thread_streams[device];
  if (own != nullptr) return own;
  return shared_streams().stream[device].get([&] {
    DeviceGuard guard(device);
    cudaStream_t stream = nullptr;
    RCUDA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return stream;
  });
}

int multiprocessors(int device) {
  // Asked once per device: the runtime's attribute query takes a lock and costs host time
  // that every reduction, softmax and norm launch would pay again.
  static std::atomic<int> count[kMaxDevices] = {};
  int n = count[device].load(std::memory_order_relaxed);
  if (n == 0) {
    RCUDA_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    count[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

void set_current_stream(int device, cudaStream_t stream) { thread_streams[device] = stream; }
cudaStream_t thread_stream(int device) { return thread_streams[device]; }

DeviceGuard::DeviceGuard(int device) {
  // With one device visible it is always the current one (cudaSetDevice can name no other):
  // the guard skips the two runtime calls that every launch would pay.
  if (device == 0 && device_count() == 1) return;
  RCUDA_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) RCUDA_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  if (previous_ < 0) return;  // nothing was changed
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

int blocks_for(int64_t n, int device, int threads, int per_multiprocessor) {
  // Enough blocks to fill every multiprocessor several times; grid-stride loops do the rest.
  const int64_t needed = (n + threads - 1) / threads;
  const int64_t cap = static_cast<int64_t>(multiprocessors(device)) * per_multiprocessor;
  return static_cast<int>(std::max<int64_t>(1, std::min(needed, cap)));
}

}  // namespace rcuda::cuda
