// Note [CUDA memory pool]
// Device memory comes from a stream-ordered pool: one cudaMemPool_t per device, allocated and
// freed with cudaMallocFromPoolAsync / cudaFreeAsync on the current stream. The driver reuses
// freed blocks for later allocations on the same stream without synchronising, which is what a
// caching allocator does, without a home-made one.
//
// Release threshold: how many bytes the pool keeps cached after frees before it returns memory
// to the driver at a synchronisation point. Default: the device's total memory, i.e. keep what
// was used (PyTorch's caching allocator behaves the same way), since returning and re-mapping
// memory costs milliseconds per step in a training loop. empty_cache() trims the pool to what
// is in use; RCUDA_CUDA_POOL_RELEASE_THRESHOLD (bytes, or with a K/M/G suffix) or
// set_release_threshold() changes the default, e.g. 0 to share a GPU with other processes.
//
// Note [Blocks kept on the host]
// The pool's calls cost host time (about 2 us each for cudaMallocFromPoolAsync and cudaFreeAsync
// on the H200 machine), and a small training step allocates and frees some 40 tensors: a tenth
// of the step. A step frees and asks for the same sizes in the same order every time, so the
// allocator keeps blocks it frees (up to kMaxKeptBlockBytes each, kMaxKeptBytes in all) in a list
// per stream and size, and gives them to the next request for that size on that stream. Stream
// order makes this exactly as safe as the pool's own reuse: the block's earlier users were
// enqueued on that stream before anything that receives it. Blocks freed on one stream never go
// to another. empty_cache() and the out-of-memory retry return the kept blocks to the pool first.
//
// On failure: the registered OOM hooks run (the R package's runs R's garbage collector, whose
// finalizers free tensors), the stream is synchronised so pending frees complete, the pool is
// trimmed, and the allocation is retried once; then OutOfMemoryError names the requested, free
// and total bytes. The process stays usable.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/graph_capture.h"
#include "backend/cuda/pinned.h"
#include "backend/once.h"
#include "rcuda/backend/cuda.h"
#include "runtime.h"

namespace rcuda::cuda {
namespace {

struct OomHooks {
  std::mutex mutex;
  std::map<int, std::function<void(int, size_t)>> hooks;
  int next_id = 1;
};

OomHooks& oom_hooks() {
  static OomHooks* h = new OomHooks();
  return *h;
}

uint64_t parse_bytes(const char* text, uint64_t fallback) {
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  double scale = 1;
  if (end != nullptr) {
    switch (*end) {
      case 'k':
      case 'K':
        scale = 1024.0;
        break;
      case 'm':
      case 'M':
        scale = 1024.0 * 1024;
        break;
      case 'g':
      case 'G':
        scale = 1024.0 * 1024 * 1024;
        break;
      case '\0':
        break;
      default:
        throw ValueError(std::string("RCUDA_CUDA_POOL_RELEASE_THRESHOLD: cannot parse '") + text +
                         "' (expected bytes, optionally with K, M or G)");
    }
  }
  RCUDA_CHECK(value >= 0, ValueError, "RCUDA_CUDA_POOL_RELEASE_THRESHOLD: must be >= 0, got ",
              text);
  return static_cast<uint64_t>(value * scale);
}

class CudaPoolAllocator final : public Allocator {
 public:
  explicit CudaPoolAllocator(int device) : device_(device), poison_(poison_allocations()) {
    DeviceGuard guard(device);
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    RCUDA_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
    size_t free_bytes = 0, total = 0;
    RCUDA_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    set_release_threshold(parse_bytes(std::getenv("RCUDA_CUDA_POOL_RELEASE_THRESHOLD"), total));
  }

  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const size_t rounded = rounded_size(nbytes);
    // Note [Graph memory] (graph_pool.cpp): a capture's tensors live in its graph's pool.
    void* ptr = allocate_for_capture(device_, rounded);
    if (ptr != nullptr) {
      count_allocation(nbytes);
      return ptr;
    }
    cudaStream_t stream = current_stream(device_);
    ptr = take_kept(stream, rounded);  // Note [Blocks kept on the host]
    if (ptr != nullptr) {
      count_allocation(nbytes);
      if (poison_) {
        DeviceGuard guard(device_);
        RCUDA_CUDA_CHECK(cudaMemsetAsync(ptr, 0xFF, rounded, stream));
      }
      return ptr;
    }
    DeviceGuard guard(device_);
    cudaError_t status = cudaMallocFromPoolAsync(&ptr, rounded, pool_, stream);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      run_oom_hooks(nbytes);
      release_kept();
      RCUDA_CUDA_CHECK(cudaStreamSynchronize(stream));
      RCUDA_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
      status = cudaMallocFromPoolAsync(&ptr, rounded, pool_, stream);
      if (status == cudaSuccess) retries_.fetch_add(1);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      ooms_.fetch_add(1);
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      throw OutOfMemoryError("cuda:" + std::to_string(device_) + ": out of memory allocating " +
                                 std::to_string(nbytes) + " bytes (" + std::to_string(free_bytes) +
                                 " bytes free of " + std::to_string(total) + "; " +
                                 std::to_string(allocated_.load()) + " held by rcuda tensors)",
                             nbytes, free_bytes, total);
    }
    RCUDA_CUDA_CHECK(status);
    count_allocation(nbytes);
    if (poison_) RCUDA_CUDA_CHECK(cudaMemsetAsync(ptr, 0xFF, rounded, stream));
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    allocated_.fetch_sub(static_cast<int64_t>(nbytes));
    frees_.fetch_add(1);
    if (release_graph_block(ptr)) return;  // Note [Graph memory]
    // An ordinary block freed inside a capture: the graph may read it, so it waits for the
    // graph's reset.
    if (hold_until_reset(device_, ptr, &free_held)) return;
    cudaStream_t stream = current_stream(device_);
    if (keep(stream, ptr, rounded_size(nbytes))) return;
    free_to_pool(ptr, stream);
  }

  // After a graph's reset (its replays done): a block held since its capture.
  static void free_held(int device, void* ptr);

  Device device() const override { return Device(DeviceType::CUDA, device_); }

  MemoryStats stats() const override {
    MemoryStats s;
    s.allocated_bytes = allocated_.load();
    s.peak_allocated_bytes = peak_.load();
    uint64_t reserved = 0, reserved_high = 0;
    cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved);
    cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &reserved_high);
    s.reserved_bytes = static_cast<int64_t>(reserved);
    s.peak_reserved_bytes = static_cast<int64_t>(reserved_high);
    s.allocation_count = allocations_.load();
    s.free_count = frees_.load();
    s.oom_count = ooms_.load();
    s.retry_count = retries_.load();
    return s;
  }

  void reset_peak() override {
    peak_.store(allocated_.load());
    uint64_t zero = 0;
    cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero);
  }

  void empty_cache() override {
    check_not_capturing(device_, "empty_cache");
    release_kept();
    DeviceGuard guard(device_);
    RCUDA_CUDA_CHECK(cudaStreamSynchronize(current_stream(device_)));
    RCUDA_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
  }

  void set_release_threshold(uint64_t bytes) {
    RCUDA_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &bytes));
  }
  uint64_t release_threshold() const {
    uint64_t bytes = 0;
    RCUDA_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &bytes));
    return bytes;
  }

 private:
  // Note [Blocks kept on the host]
  static constexpr size_t kMaxKeptBlockBytes = size_t{4} << 20;
  static constexpr size_t kMaxKeptBytes = size_t{128} << 20;
  using KeptKey = std::pair<cudaStream_t, size_t>;

  // Whole 16-byte units: kernels may read a tensor's last aligned word or vector (the CAS of a
  // uint8 atomic, a 16-byte load of a tail), which must stay inside the allocation.
  static size_t rounded_size(size_t nbytes) { return (nbytes + 15) & ~size_t{15}; }

  void count_allocation(size_t nbytes) {
    const int64_t now =
        allocated_.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    allocations_.fetch_add(1);
  }

  void* take_kept(cudaStream_t stream, size_t rounded) {
    if (rounded > kMaxKeptBlockBytes) return nullptr;
    std::lock_guard<std::mutex> lock(kept_mutex_);
    const auto it = kept_.find(KeptKey{stream, rounded});
    if (it == kept_.end() || it->second.empty()) return nullptr;
    void* ptr = it->second.back();
    it->second.pop_back();
    kept_bytes_ -= rounded;
    return ptr;
  }

  bool keep(cudaStream_t stream, void* ptr, size_t rounded) {
    if (rounded > kMaxKeptBlockBytes) return false;
    std::lock_guard<std::mutex> lock(kept_mutex_);
    if (kept_bytes_ + rounded > kMaxKeptBytes) return false;
    kept_[KeptKey{stream, rounded}].push_back(ptr);
    kept_bytes_ += rounded;
    return true;
  }

  // Never throws: called from destructors. A failure here means the context is gone (process
  // exit), when there is nothing left to free.
  void free_to_pool(void* ptr, cudaStream_t stream) {
    int previous = -1;
    cudaGetDevice(&previous);
    if (previous != device_) cudaSetDevice(device_);
    if (cudaFreeAsync(ptr, stream) != cudaSuccess) cudaGetLastError();
    if (previous != device_ && previous >= 0) cudaSetDevice(previous);
  }

  // Every kept block back to the pool, freed on the stream it was kept for.
  void release_kept() {
    std::map<KeptKey, std::vector<void*>> kept;
    {
      std::lock_guard<std::mutex> lock(kept_mutex_);
      kept.swap(kept_);
      kept_bytes_ = 0;
    }
    for (auto& [key, blocks] : kept)
      for (void* ptr : blocks) free_to_pool(ptr, key.first);
  }

  void run_oom_hooks(size_t nbytes) {
    std::map<int, std::function<void(int, size_t)>> hooks;
    {
      std::lock_guard<std::mutex> lock(oom_hooks().mutex);
      hooks = oom_hooks().hooks;
    }
    for (auto& [id, hook] : hooks) {
      try {
        hook(device_, nbytes);
      } catch (...) {
        // A failing hook must not hide the out-of-memory error the caller is about to get.
      }
    }
  }

  int device_;
  const bool poison_;  // Note [Poisoned allocations]
  cudaMemPool_t pool_ = nullptr;
  std::mutex kept_mutex_;
  std::map<KeptKey, std::vector<void*>> kept_;
  size_t kept_bytes_ = 0;
  std::atomic<int64_t> allocated_{0}, peak_{0}, allocations_{0}, frees_{0}, ooms_{0}, retries_{0};
};

CudaPoolAllocator& pool_for(int device);

void CudaPoolAllocator::free_held(int device, void* ptr) {
  CudaPoolAllocator& pool = pool_for(device);
  pool.free_to_pool(ptr, current_stream(device));
}

CudaPoolAllocator& pool_for(int device) {
  // Note [Made once, read often]: a made pool is a valid device's.
  static backend::OnceValue<CudaPoolAllocator*> pools[kMaxDevices];
  if (device >= 0 && device < kMaxDevices)
    if (CudaPoolAllocator* made = pools[device].peek()) return *made;
  check_device_index(device, "cuda allocator");
  return *pools[device].get([&] { return new CudaPoolAllocator(device); });
}

}  // namespace

Allocator& cuda_allocator(int device) { return pool_for(device); }

MemoryStats memory_stats(int device) { return pool_for(device).stats(); }
void reset_peak_memory_stats(int device) { pool_for(device).reset_peak(); }
void empty_cache(int device) {
  pool_for(device).empty_cache();
  release_idle_pinned();  // Note [Pinned host cache] in pinned.cpp
}
void set_release_threshold(int device, uint64_t bytes) {
  pool_for(device).set_release_threshold(bytes);
}
uint64_t release_threshold(int device) { return pool_for(device).release_threshold(); }

int add_oom_hook(std::function<void(int, size_t)> hook) {
  std::lock_guard<std::mutex> lock(oom_hooks().mutex);
  const int id = oom_hooks().next_id++;
  oom_hooks().hooks[id] = std::move(hook);
  return id;
}

void remove_oom_hook(int id) {
  std::lock_guard<std::mutex> lock(oom_hooks().mutex);
  oom_hooks().hooks.erase(id);
}

}  // namespace rcuda::cuda
