// CUDA graphs: capture the kernels a piece of host code launches on one device, then replay
// them with one launch (docs/cuda-graphs.md).
//
//   rcuda::cuda::Graph graph;
//   rcuda::cuda::capture(graph, [&] { loss = train_step(static_x, static_y); });
//   for (...) { copy_(static_x, next_x); copy_(static_y, next_y); graph.replay(); }
//
// What a captured region may do: launch work on the device (every op of the engine), allocate
// and free tensors (their memory comes from the graph's own pool, so addresses stay valid across
// replays), draw random numbers (each replay draws fresh ones, in the order an eager run would),
// step an optimizer whose state exists (each replay is a real step: its step count and learning
// rate are read on the host at every replay). What it may not do: read a value back to the host,
// synchronise, or copy host memory to the device; those raise CudaError, and capture() then
// abandons the capture and leaves the process usable. Tensors the graph reads or writes
// (parameters, static inputs and outputs) must outlive it.
#pragma once

#include <functional>
#include <memory>

namespace rcuda::cuda {

class Graph {
 public:
  // A graph on `device` (-1: the current device), empty until captured.
  explicit Graph(int device = -1);
  // A graph whose memory pool is `other`'s (as PyTorch's pool=): allocations of the two
  // captures may share addresses, so replay them in the order they were captured.
  Graph(int device, const Graph& share_pool_with);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Everything this thread launches on the device between the two is captured, not run.
  void capture_begin();
  void capture_end();
  // Abandons a capture in progress (after an error inside it); the graph stays empty.
  void capture_abort();
  // Launches the captured work on the device's current stream (asynchronously).
  void replay();
  // Drops the captured graph and its memory (waiting for replays in flight first).
  void reset();

  bool captured() const;
  int device() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// capture_begin, fn(), capture_end; if fn or the capture throws, the capture is abandoned and
// the exception rethrown.
void capture(Graph& graph, const std::function<void()>& fn);

// True while this thread captures a graph on `device`.
bool is_capturing(int device);

// Note [Updatable launches]
// Runs launch(true) now, except while this thread captures on `device`: then launch(false) runs
// now (its kernels are captured), and launch(true) runs again before every replay, where the
// same kernel launches, made through the backend's updatable launch path (random fills,
// dropout, the optimizers' multi-tensor steps), update the captured kernels' arguments instead
// of launching. `launch` must make the same launches every time; `executes` says whether they
// will run with these arguments (take the next random offset, count the optimizer step) or
// only be recorded.
void run_updatable(int device, std::function<void(bool executes)> launch);

}  // namespace rcuda::cuda
