// Page-locked host memory for fast, asynchronous host<->device copies.
//
// Note [Pinned host cache]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Page-locking is slow (cudaHostAlloc maps and pins every page) and cudaFreeHost synchronises
// the device, so a data loader that pinned each batch afresh would stall the GPU at every
// freed batch. pin_memory takes blocks from a cache instead, as PyTorch's caching host
// allocator does. Block sizes are powers of two (4 KiB at least), so batches of one shape reuse
// one block. When a tensor's storage dies its block returns to the cache, but an asynchronous
// copy may still be reading it: host_to_device records an event on its stream after each copy
// from a cached block (record_pinned_use), and a free block is handed out again only once all
// its events have completed. Idle blocks go back to the driver when page-locking fails (then
// the allocation is retried once) and on cuda::empty_cache().
#include "backend/cuda/pinned.h"

#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "rcuda/backend/backend.h"
#include "rcuda/backend/cuda.h"
#include "runtime.h"

namespace rcuda::cuda {
namespace {

class PinnedCache {
 public:
  void* allocate(size_t nbytes) {
    const size_t size = block_size(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [address, block] : blocks_) {
        if (block.in_use || block.size != size || !copies_done(block)) continue;
        block.in_use = true;
        return address;
      }
    }
    void* ptr = nullptr;
    cudaError_t status = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_idle();
      status = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemoryError(
          "pin_memory: could not page-lock " + std::to_string(size) + " bytes of host memory", size,
          0, 0);
    }
    RCUDA_CUDA_CHECK(status);
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_[static_cast<char*>(ptr)] = Block{size, true, {}};
    return ptr;
  }

  // The block's storage died; copies reading it may still be queued (their events say).
  void release(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(static_cast<char*>(ptr));
    if (it != blocks_.end()) it->second.in_use = false;
  }

  void record_use(const void* host, cudaStream_t stream) {
    char* address = static_cast<char*>(const_cast<void*>(host));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.upper_bound(address);  // the first block starting after `host`
    if (it == blocks_.begin()) return;
    --it;
    // std::less: a total order even on pointers into different allocations.
    if (!std::less<char*>()(address, it->first + it->second.size)) return;  // not in a block
    cudaEvent_t event = nullptr;
    RCUDA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    it->second.events.push_back(event);
    RCUDA_CUDA_CHECK(cudaEventRecord(event, stream));
  }

  void release_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      if (!it->second.in_use && copies_done(it->second)) {
        cudaFreeHost(it->first);
        it = blocks_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  struct Block {
    size_t size;
    bool in_use;
    std::vector<cudaEvent_t> events;  // one per copy that read the block, until it completes
  };

  static size_t block_size(size_t nbytes) {
    size_t size = 4096;
    while (size < nbytes) size <<= 1;
    return size;
  }

  // Forgets the events that have completed; true when none is left. Called under the mutex.
  static bool copies_done(Block& block) {
    auto& events = block.events;
    for (auto it = events.begin(); it != events.end();) {
      const cudaError_t status = cudaEventQuery(*it);
      if (status == cudaErrorNotReady) {
        cudaGetLastError();  // 'not ready' may linger as the last error: clear it, as PyTorch does
        ++it;
        continue;
      }
      RCUDA_CUDA_CHECK(status);
      RCUDA_CUDA_CHECK(cudaEventDestroy(*it));
      it = events.erase(it);
    }
    return events.empty();
  }

  std::mutex mutex_;
  std::map<char*, Block> blocks_;  // by address, to find the block a copy reads from
};

PinnedCache& pinned_cache() {
  static PinnedCache* cache = new PinnedCache();  // never destroyed: tensors may outlive main
  return *cache;
}

}  // namespace

void record_pinned_use(const void* host, cudaStream_t stream) {
  pinned_cache().record_use(host, stream);
}

void release_idle_pinned() { pinned_cache().release_idle(); }

Tensor pin_memory(const Tensor& t) {
  RCUDA_CHECK(t.device().is_cpu(), DeviceError, "pin_memory: expects a CPU tensor, got one on ",
              t.device().str());
  RCUDA_CHECK(device_count() > 0, DeviceError, "pin_memory: ", unavailable_reason());
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  void* ptr = nbytes > 0 ? pinned_cache().allocate(nbytes) : nullptr;
  std::shared_ptr<void> owner(ptr, [](void* p) {
    if (p != nullptr) pinned_cache().release(p);
  });
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(ptr, nbytes, Device(DeviceType::CPU), owner);
  impl->shape = t.shape();
  impl->strides = contiguous_strides(t.shape());
  impl->dtype = t.dtype();
  Tensor pinned(std::move(impl));
  if (nbytes > 0) backend_for(Device(DeviceType::CPU)).copy(pinned, t);
  return pinned;
}

bool is_pinned(const Tensor& t) {
  if (!t.device().is_cpu() || t.data_ptr() == nullptr || device_count() == 0) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, t.data_ptr()) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace rcuda::cuda
