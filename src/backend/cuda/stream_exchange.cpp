// Streams as integers for other libraries (rcuda/backend/cuda_stream.h, docs/dlpack.md).
#include "backend/cuda/graph_capture.h"
#include "backend/cuda/runtime.h"
#include "rcuda/backend/cuda_stream.h"

namespace rcuda::cuda {
namespace {

// Streams arrive as integers by design (another library's handle, or the runtime's 1 and 2).
cudaStream_t as_stream(StreamHandle handle) {
  return reinterpret_cast<cudaStream_t>(handle);  // NOLINT(performance-no-int-to-ptr)
}

}  // namespace

StreamHandle current_stream_handle(int device) {
  check_device_index(device, "current_stream_handle");
  return reinterpret_cast<StreamHandle>(current_stream(device));
}

void stream_wait(int device, StreamHandle waiting, StreamHandle producing) {
  check_device_index(device, "stream_wait");
  // A wait between rcuda's captured stream and another library's would pull that library's
  // stream into the graph being captured.
  check_not_capturing(device, "stream_wait");
  if (waiting == producing) return;
  DeviceGuard guard(device);
  // Destroyed as soon as the wait is queued (or a call fails): a queued wait keeps its event.
  struct Event {
    cudaEvent_t handle = nullptr;
    ~Event() {
      if (handle != nullptr) cudaEventDestroy(handle);
    }
  } event;
  RCUDA_CUDA_CHECK(cudaEventCreateWithFlags(&event.handle, cudaEventDisableTiming));
  RCUDA_CUDA_CHECK(cudaEventRecord(event.handle, as_stream(producing)));
  RCUDA_CUDA_CHECK(cudaStreamWaitEvent(as_stream(waiting), event.handle, 0));
}

}  // namespace rcuda::cuda
