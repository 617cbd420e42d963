// A CUDA graph's memory (Note [Graph memory] in graph_pool.cpp).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace rcuda::cuda {

class GraphPool : public std::enable_shared_from_this<GraphPool> {
 public:
  explicit GraphPool(int device) : device_(device) {}
  ~GraphPool();  // cudaFree of the blocks no tensor holds
  GraphPool(const GraphPool&) = delete;
  GraphPool& operator=(const GraphPool&) = delete;

  // A block of `bytes` (a multiple of 16): one released earlier in the capture, else new.
  void* allocate(size_t bytes);
  // Back to the free list, for later allocations of a capture into this pool.
  void release(void* ptr);
  int device() const { return device_; }

 private:
  void register_block(void* ptr);
  int device_;
  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;
  std::unordered_map<void*, size_t> sizes_;  // every block of the pool
};

}  // namespace rcuda::cuda
