// Note [Graph memory]
// A captured kernel keeps the addresses it was captured with, so the memory of a tensor made
// inside a capture must stay where it is for as long as the graph may replay. Such tensors get
// their memory from the graph's pool rather than from the device's stream-ordered pool: plain
// cudaMalloc blocks (allowed inside a capture begun in relaxed mode), which a tensor freed
// inside the capture returns to the pool's free list and a later allocation of the same size in
// the capture takes again. Captured work runs in capture order on one stream, so the reuse is
// as safe as eager stream-ordered reuse, and a training step's temporaries cost one step's
// worth of memory, not one block each. A block returned after the capture (an output the caller
// dropped) stays in the pool; the pool is freed when the last graph using it is reset and no
// tensor holds one of its blocks. Ordinary blocks freed inside a capture (a gradient replaced by
// one the capture made) may still be read by the graph, so the graph keeps them until its reset
// (hold_until_reset in graph.cpp). Graph memory nodes (cudaMallocAsync under capture) would
// re-map allocations at every launch and free outputs the caller still holds; this pool keeps
// PyTorch's semantics: outputs stay valid, and are overwritten by the next replay.
#include "backend/cuda/graph_pool.h"

#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "backend/cuda/graph_capture.h"
#include "backend/cuda/runtime.h"
#include "rcuda/core/error.h"

namespace rcuda::cuda {
namespace {

// Which pool owns each block handed out, and a reference that keeps the pool alive while
// a tensor holds the block.
struct Registry {
  std::mutex mutex;
  std::unordered_map<void*, std::shared_ptr<GraphPool>> owner;
  std::atomic<size_t> size{0};  // owner.size(), read without the lock by every free
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

GraphPool::~GraphPool() {
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  for (auto& [bytes, blocks] : free_)
    for (void* p : blocks) cudaFree(p);  // never throws: a destructor
  cudaGetLastError();
  if (previous >= 0) cudaSetDevice(previous);
}

void* GraphPool::allocate(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      register_block(p);
      return p;
    }
  }
  DeviceGuard guard(device_);
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    throw OutOfMemoryError("cuda:" + std::to_string(device_) + ": out of memory allocating " +
                               std::to_string(bytes) + " bytes for a CUDA graph under capture (" +
                               std::to_string(free_bytes) + " bytes free of " +
                               std::to_string(total) + ")",
                           bytes, free_bytes, total);
  }
  RCUDA_CUDA_CHECK(status);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = bytes;
  }
  register_block(p);
  return p;
}

void GraphPool::register_block(void* p) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.owner[p] = shared_from_this();
  r.size = r.owner.size();
}

void GraphPool::release(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_[sizes_.at(ptr)].push_back(ptr);
}

bool release_graph_block(void* ptr) {
  Registry& r = registry();
  if (r.size.load(std::memory_order_relaxed) == 0) return false;
  std::shared_ptr<GraphPool> pool;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.owner.find(ptr);
    if (it == r.owner.end()) return false;
    pool = std::move(it->second);
    r.owner.erase(it);
    r.size = r.owner.size();
  }
  pool->release(ptr);
  return true;  // `pool` may be the last reference: the pool is freed here
}

}  // namespace rcuda::cuda
