// The rcuda::cuda API in builds without the CUDA backend: no devices, and a clear error for
// anything that needs one.
#include <atomic>

#include "rcuda/backend/cuda.h"
#include "rcuda/backend/cuda_graph.h"
#include "rcuda/backend/cuda_stream.h"
#include "rcuda/core/error.h"

namespace rcuda::cuda {
namespace {

[[noreturn]] void not_built(const char* op) {
  throw DeviceError(std::string(op) + ": rcuda was built without CUDA (rebuild with " +
                    "RCUDA_WITH_CUDA=ON on a machine with the CUDA toolkit)");
}

}  // namespace

bool is_built() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() { return "rcuda was built without CUDA"; }
int runtime_version() { return 0; }
int driver_version() { return 0; }
DeviceProperties properties(int) { not_built("cuda_get_device_properties"); }
int current_device() { not_built("cuda_current_device"); }
void set_device(int) { not_built("cuda_set_device"); }
void synchronize(int) { not_built("cuda_synchronize"); }
MemoryStats memory_stats(int) { not_built("cuda_memory_stats"); }
void reset_peak_memory_stats(int) { not_built("cuda_reset_peak_memory_stats"); }
void empty_cache(int) { not_built("cuda_empty_cache"); }
void set_release_threshold(int, uint64_t) { not_built("cuda_set_release_threshold"); }
uint64_t release_threshold(int) { not_built("cuda_release_threshold"); }
// Hooks are accepted (and never called) so that callers need not know how rcuda was built.
int add_oom_hook(std::function<void(int, size_t)>) { return 0; }
void remove_oom_hook(int) {}
Tensor pin_memory(const Tensor&) { not_built("pin_memory"); }
bool is_pinned(const Tensor&) { return false; }
double time_ms(int, const std::function<void()>&) { not_built("time_ms"); }
void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }
// Kept, so that settings read back as set (the default on, as in CUDA builds).
namespace {
std::atomic<bool> conv_tf32_allowed{true};
std::atomic<bool> benchmark_on{false};
}  // namespace
void set_allow_conv_tf32(bool allow) { conv_tf32_allowed = allow; }
bool allow_conv_tf32() { return conv_tf32_allowed; }
void set_cudnn_benchmark(bool on) { benchmark_on = on; }
bool cudnn_benchmark() { return benchmark_on; }
void set_cudnn_batch_norm(bool) {}
bool cudnn_batch_norm() { return false; }
StreamHandle current_stream_handle(int) { not_built("current_stream_handle"); }
void stream_wait(int, StreamHandle, StreamHandle) { not_built("stream_wait"); }

// CUDA graphs: nothing captures without CUDA.
struct Graph::Impl {};
Graph::Graph(int) { not_built("cuda_graph"); }
Graph::Graph(int, const Graph&) { not_built("cuda_graph"); }
Graph::~Graph() = default;
void Graph::capture_begin() { not_built("cuda_graph"); }
void Graph::capture_end() { not_built("cuda_graph"); }
void Graph::capture_abort() {}
void Graph::replay() { not_built("cuda_graph"); }
void Graph::reset() {}
bool Graph::captured() const { return false; }
int Graph::device() const { return -1; }
void capture(Graph&, const std::function<void()>&) { not_built("cuda_graph"); }
bool is_capturing(int) { return false; }
void run_updatable(int, std::function<void(bool)> launch) { launch(true); }

}  // namespace rcuda::cuda
