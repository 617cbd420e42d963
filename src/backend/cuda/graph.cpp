// rcuda::cuda::Graph: stream capture on a side stream, the graph's memory pool, updatable
// launches, replay (docs/cuda-graphs.md).
#include <cuda_runtime.h>

#include <atomic>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/graph_capture.h"
#include "backend/cuda/graph_pool.h"
#include "backend/cuda/runtime.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/backend/cuda_graph.h"
#include "rcuda/core/error.h"

namespace rcuda::cuda {

struct Graph::Impl {
  int device = 0;
  std::shared_ptr<GraphPool> pool;
  cudaStream_t stream = nullptr;    // the capture stream
  cudaStream_t previous = nullptr;  // the thread's stream override before the capture
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool capturing = false;
  // Note [Updatable launches]: each run_updatable call of the capture, with its nodes.
  struct Updater {
    std::function<void(bool)> launch;
    std::vector<cudaGraphNode_t> nodes;
  };
  std::deque<Updater> updaters;
  // Ordinary blocks freed inside the capture (Note [Graph memory]).
  std::vector<std::pair<void*, void (*)(int, void*)>> held;

  void release_graph() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    exec = nullptr;
    graph = nullptr;
    updaters.clear();
  }
};

namespace {

thread_local Graph::Impl* capturing_graph[kMaxDevices] = {};
// Captures running on any thread: every allocation and free asks capture_on, and while this is
// zero the answer needs no thread-local lookup (which costs a call in a shared library). A
// capturing thread sees its own increment, which is all capture_on needs.
std::atomic<int> captures_running{0};

Graph::Impl* capture_on(int device) {
  if (captures_running.load(std::memory_order_relaxed) == 0) return nullptr;
  return device >= 0 && device < kMaxDevices ? capturing_graph[device] : nullptr;
}

void set_capturing(Graph::Impl& g, bool on) {
  capturing_graph[g.device] = on ? &g : nullptr;
  captures_running.fetch_add(on ? 1 : -1, std::memory_order_relaxed);
}

int resolve(int device) { return device < 0 ? current_device() : device; }

}  // namespace

// ---- what the backend's files call ----

void check_not_capturing(int device, const char* op) {
  RCUDA_CHECK(capture_on(device) == nullptr, CudaError, op,
              ": cannot synchronise with cuda:", device,
              " or read its memory while this thread captures a CUDA graph on it (a graph "
              "cannot wait for values on the host: move this out of the captured region)");
}

void* allocate_for_capture(int device, size_t bytes) {
  Graph::Impl* g = capture_on(device);
  return g == nullptr ? nullptr : g->pool->allocate(bytes);
}

bool hold_until_reset(int device, void* ptr, void (*free)(int, void*)) {
  Graph::Impl* g = capture_on(device);
  if (g == nullptr) return false;
  g->held.emplace_back(ptr, free);
  return true;
}

UpdatableCall*& updatable_call() {
  thread_local UpdatableCall* call = nullptr;
  return call;
}

cudaGraphNode_t last_captured_node(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* dependencies = nullptr;
  size_t count = 0;
  RCUDA_CUDA_CHECK(
      cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &dependencies, nullptr, &count));
  RCUDA_CHECK(status == cudaStreamCaptureStatusActive && count == 1, InternalError,
              "CUDA graph capture: expected one node after a launch, found ", count);
  return dependencies[0];
}

void update_kernel_node(UpdatableCall& call, void* kernel, dim3 grid, dim3 block, size_t shared,
                        void** args) {
  RCUDA_CHECK(call.next < call.nodes->size(), InternalError,
              "CUDA graph replay: an updatable launch made more launches than it captured");
  cudaKernelNodeParams params{};
  params.func = kernel;
  params.gridDim = grid;
  params.blockDim = block;
  params.sharedMemBytes = static_cast<unsigned>(shared);
  params.kernelParams = args;
  RCUDA_CUDA_CHECK(
      cudaGraphExecKernelNodeSetParams(call.exec, (*call.nodes)[call.next++], &params));
}

// ---- the public API ----

bool is_capturing(int device) { return capture_on(device) != nullptr; }

void run_updatable(int device, std::function<void(bool)> launch) {
  Graph::Impl* g = capture_on(device);
  if (g == nullptr) {
    launch(true);
    return;
  }
  Graph::Impl::Updater& u = g->updaters.emplace_back();
  UpdatableCall call{&u.nodes, nullptr, 0};
  UpdatableCall* saved = updatable_call();
  updatable_call() = &call;
  try {
    launch(false);
  } catch (...) {
    updatable_call() = saved;
    throw;
  }
  updatable_call() = saved;
  u.launch = std::move(launch);
}

Graph::Graph(int device) : impl_(std::make_shared<Impl>()) {
  impl_->device = resolve(device);
  check_device_index(impl_->device, "Graph");
  impl_->pool = std::make_shared<GraphPool>(impl_->device);
}

Graph::Graph(int device, const Graph& share_pool_with) : Graph(device) {
  RCUDA_CHECK(share_pool_with.impl_->device == impl_->device, DeviceError,
              "Graph: a pool is shared between graphs of one device, not cuda:",
              share_pool_with.impl_->device, " and cuda:", impl_->device);
  impl_->pool = share_pool_with.impl_->pool;
}

Graph::~Graph() {
  try {
    if (impl_->capturing) capture_abort();
    reset();
  } catch (...) {
    // A destructor must not throw; the context is gone at process exit.
  }
  if (impl_->stream != nullptr) cudaStreamDestroy(impl_->stream);
}

void Graph::capture_begin() {
  Impl& g = *impl_;
  RCUDA_CHECK(!g.capturing && g.exec == nullptr, ValueError, "Graph.capture_begin: the graph ",
              g.capturing ? "is capturing" : "holds a capture", " already (reset() it first)");
  RCUDA_CHECK(capture_on(g.device) == nullptr, ValueError,
              "Graph.capture_begin: this thread is capturing another graph on cuda:", g.device);
  DeviceGuard guard(g.device);
  if (g.stream == nullptr)
    RCUDA_CUDA_CHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
  // The captured work comes after everything already queued on the current stream.
  cudaEvent_t queued = nullptr;
  RCUDA_CUDA_CHECK(cudaEventCreateWithFlags(&queued, cudaEventDisableTiming));
  RCUDA_CUDA_CHECK(cudaEventRecord(queued, current_stream(g.device)));
  RCUDA_CUDA_CHECK(cudaStreamWaitEvent(g.stream, queued, 0));
  RCUDA_CUDA_CHECK(cudaEventDestroy(queued));
  // Relaxed: the graph's pool may call cudaMalloc inside the capture (Note [Graph memory]).
  RCUDA_CUDA_CHECK(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeRelaxed));
  g.previous = thread_stream(g.device);
  set_current_stream(g.device, g.stream);
  set_capturing(g, true);
  g.capturing = true;
}

void Graph::capture_end() {
  Impl& g = *impl_;
  RCUDA_CHECK(g.capturing && capture_on(g.device) == &g, ValueError,
              "Graph.capture_end: this thread is not capturing this graph");
  DeviceGuard guard(g.device);
  set_capturing(g, false);
  set_current_stream(g.device, g.previous);
  g.capturing = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(g.stream, &graph);
  if (status != cudaSuccess) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    g.release_graph();
    RCUDA_CUDA_CHECK(status);
  }
  g.graph = graph;
  const cudaError_t made = cudaGraphInstantiate(&g.exec, g.graph, 0);
  if (made != cudaSuccess) {
    g.exec = nullptr;
    g.release_graph();
    RCUDA_CUDA_CHECK(made);
  }
}

void Graph::capture_abort() {
  Impl& g = *impl_;
  if (!g.capturing) return;
  DeviceGuard guard(g.device);
  set_capturing(g, false);
  set_current_stream(g.device, g.previous);
  g.capturing = false;
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(g.stream, &graph);  // fails when the capture was invalidated
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();
  g.release_graph();
}

void Graph::replay() {
  Impl& g = *impl_;
  RCUDA_CHECK(g.exec != nullptr, ValueError, "Graph.replay: nothing captured",
              g.capturing ? " yet (the capture has not ended)" : "");
  DeviceGuard guard(g.device);
  for (Impl::Updater& u : g.updaters) {
    UpdatableCall call{&u.nodes, g.exec, 0};
    UpdatableCall* saved = updatable_call();
    updatable_call() = &call;
    try {
      u.launch(true);
    } catch (...) {
      updatable_call() = saved;
      throw;
    }
    updatable_call() = saved;
    RCUDA_CHECK(call.next == u.nodes.size(), InternalError,
                "CUDA graph replay: an updatable launch made fewer launches than it captured");
  }
  RCUDA_CUDA_CHECK(cudaGraphLaunch(g.exec, current_stream(g.device)));
}

void Graph::reset() {
  Impl& g = *impl_;
  RCUDA_CHECK(!g.capturing, ValueError, "Graph.reset: the graph is capturing (end or abort it)");
  if (g.exec == nullptr && g.held.empty()) return;
  DeviceGuard guard(g.device);
  // Replays in flight may still use the graph's memory and the held blocks.
  RCUDA_CUDA_CHECK(cudaDeviceSynchronize());
  g.release_graph();
  for (auto& [ptr, free] : g.held) free(g.device, ptr);
  g.held.clear();
  g.pool = std::make_shared<GraphPool>(g.device);  // the old one goes with its last block
}

bool Graph::captured() const { return impl_->exec != nullptr; }
int Graph::device() const { return impl_->device; }

void capture(Graph& graph, const std::function<void()>& fn) {
  graph.capture_begin();
  try {
    fn();
  } catch (...) {
    graph.capture_abort();
    throw;
  }
  graph.capture_end();
}

}  // namespace rcuda::cuda
