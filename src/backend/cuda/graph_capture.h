// What the CUDA backend's files need of graph capture (the public side is
// rcuda/backend/cuda_graph.h): whether this thread captures, refusing host synchronisation
// while it does, the graph's memory for the allocator, and updatable kernel launches.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "backend/cuda/runtime.h"

namespace rcuda::cuda {

// CudaError naming `op` when this thread captures a graph on `device`: a captured region cannot
// wait for the device or read its memory.
void check_not_capturing(int device, const char* op);

// ---- memory (Note [Graph memory] in graph_pool.cpp) ----

// Allocates `bytes` for the graph this thread captures on `device`; nullptr when it captures none.
void* allocate_for_capture(int device, size_t bytes);
// Takes back ptr if a graph's pool owns it (true), else returns false.
bool release_graph_block(void* ptr);
// During a capture on this thread: keeps an ordinary block freed inside the capture (the graph
// may use it) until the graph is reset, then gives it to `free`. False when not capturing.
bool hold_until_reset(int device, void* ptr, void (*free)(int device, void* ptr));

// ---- updatable launches (Note [Updatable launches] in rcuda/backend/cuda_graph.h) ----

// The run_updatable call in progress on this thread: recording (exec null: append each launch's
// node) or updating a replay's executable graph (set the nodes in order).
struct UpdatableCall {
  std::vector<cudaGraphNode_t>* nodes = nullptr;
  cudaGraphExec_t exec = nullptr;
  size_t next = 0;
};
UpdatableCall*& updatable_call();

// The node the last launch on a capturing stream added.
cudaGraphNode_t last_captured_node(cudaStream_t stream);
void update_kernel_node(UpdatableCall& call, void* kernel, dim3 grid, dim3 block, size_t shared,
                        void** args);

}  // namespace rcuda::cuda
