// Host memory: 64-byte aligned, with the same statistics the CUDA pool keeps.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "rcuda/core/error.h"
#include "rcuda/memory/allocator.h"

namespace rcuda {
namespace {

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() : poison_(poison_allocations()) {}

  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    // Large blocks are aligned to 2 MiB and marked for transparent huge pages: a fresh 256 MB
    // output otherwise costs 65536 page faults on first touch, more than the op writing it.
    const bool huge = nbytes >= kHugePageThreshold;
    const size_t alignment = huge ? kHugePage : kAlignment;
    const size_t rounded = (nbytes + alignment - 1) / alignment * alignment;
    void* ptr = huge ? take_kept(rounded) : nullptr;
    if (ptr == nullptr) {
      ptr = huge ? std::aligned_alloc(alignment, rounded) : aligned_from_malloc(rounded);
      if (ptr == nullptr && release_kept() > 0)  // the kept blocks are the first to give back
        ptr = huge ? std::aligned_alloc(alignment, rounded) : aligned_from_malloc(rounded);
      if (ptr != nullptr && huge) madvise(ptr, rounded, MADV_HUGEPAGE);
    }
    if (ptr == nullptr) {
      oom_count_.fetch_add(1, std::memory_order_relaxed);
      throw OutOfMemoryError(
          "cpu allocator: could not allocate " + std::to_string(nbytes) + " bytes of host memory",
          nbytes, 0, 0);
    }
    const int64_t now = allocated_.fetch_add(nbytes) + static_cast<int64_t>(nbytes);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    allocations_.fetch_add(1, std::memory_order_relaxed);
    if (poison_) std::memset(ptr, 0xFF, rounded);
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    if (nbytes >= kHugePageThreshold) {
      keep_or_free(ptr, (nbytes + kHugePage - 1) / kHugePage * kHugePage);
    } else {
      std::free(static_cast<void**>(ptr)[-1]);
    }
    allocated_.fetch_sub(nbytes);
    frees_.fetch_add(1, std::memory_order_relaxed);
  }

  Device device() const override { return Device(DeviceType::CPU); }

  MemoryStats stats() const override {
    MemoryStats s;
    s.allocated_bytes = allocated_.load();
    s.reserved_bytes = s.allocated_bytes + static_cast<int64_t>(kept_bytes_.load());
    s.peak_allocated_bytes = s.peak_reserved_bytes = peak_.load();
    s.allocation_count = allocations_.load();
    s.free_count = frees_.load();
    s.oom_count = oom_count_.load();
    return s;
  }

  void reset_peak() override { peak_.store(allocated_.load()); }

 private:
  // Note [Large host blocks kept]
  // A freed block of 32 MiB or more goes back to the system (glibc maps such blocks afresh), so
  // the next one costs a page fault per 2 MiB and the kernel zeroes every page: a fifth of a
  // batch-64 ResNet-18 inference on the CPU. Freed large blocks are kept instead, up to an eighth
  // of the machine's memory and at most 4 GiB in all (a batch-64 ResNet-18 cycles through more
  // than 1 GiB of them), and handed to the next request of the same rounded size (inference and
  // training loops ask for the same sizes every step); a request that finds none maps a new one,
  // a block that would pass the bound is freed, and an allocation that fails frees the kept
  // blocks and tries again.
  size_t release_kept() {
    std::multimap<size_t, void*> blocks;
    {
      std::lock_guard<std::mutex> lock(kept_mutex_);
      blocks.swap(kept_);
      kept_bytes_ = 0;
    }
    for (auto& [size, ptr] : blocks) std::free(ptr);
    return blocks.size();
  }

  static size_t kept_bound() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const size_t eighth = pages > 0 && page > 0 ? static_cast<size_t>(pages) * page / 8 : 0;
    return std::min(eighth, size_t{4} << 30);
  }

  void* take_kept(size_t rounded) {
    std::lock_guard<std::mutex> lock(kept_mutex_);
    auto it = kept_.find(rounded);
    if (it == kept_.end()) return nullptr;
    void* ptr = it->second;
    kept_.erase(it);
    kept_bytes_ -= rounded;
    return ptr;
  }

  void keep_or_free(void* ptr, size_t rounded) {
    {
      std::lock_guard<std::mutex> lock(kept_mutex_);
      if (kept_bytes_ + rounded <= kKeptBytes_) {
        kept_.emplace(rounded, ptr);
        kept_bytes_ += rounded;
        return;
      }
    }
    std::free(ptr);
  }

  // A block below the huge-page threshold comes from malloc with room to align it, and the
  // pointer malloc gave sits in the 8 bytes before the aligned one, for deallocate. glibc's
  // aligned_alloc splits a larger chunk and frees the pieces around the aligned block at every
  // call: 40 ns more per allocation and free than malloc on the development VM, a tenth of a
  // small op's host time on the CPU.
  static void* aligned_from_malloc(size_t rounded) {
    void* raw = std::malloc(rounded + kAlignment);
    if (raw == nullptr) return nullptr;
    // malloc's pointers are 16-byte aligned, so the aligned block starts 8 to 64 bytes in.
    const uintptr_t aligned =
        (reinterpret_cast<uintptr_t>(raw) + sizeof(void*) + kAlignment - 1) & ~(kAlignment - 1);
    reinterpret_cast<void**>(aligned)[-1] = raw;
    return reinterpret_cast<void*>(aligned);
  }

  static constexpr size_t kAlignment = 64;
  static constexpr size_t kHugePage = size_t{2} << 20;
  // glibc keeps a freed block below 32 MiB (its largest mmap threshold) in its heap and hands
  // it to the next request of that size without a page fault; a block marked for huge pages is
  // returned and faulted in again each time. So only blocks that glibc maps afresh anyway take
  // huge pages: with 8 MiB here, a fresh 16 MB add cost 2.1-2.9 ms on a 2-core VM, now 0.6.
  static constexpr size_t kHugePageThreshold = size_t{32} << 20;
  const size_t kKeptBytes_ = kept_bound();
  std::mutex kept_mutex_;
  std::multimap<size_t, void*> kept_;  // rounded size -> block
  std::atomic<size_t> kept_bytes_{0};
  const bool poison_;
  std::atomic<int64_t> allocated_{0}, peak_{0}, allocations_{0}, frees_{0}, oom_count_{0};
};

}  // namespace

bool poison_allocations() {
  const char* v = std::getenv("RCUDA_POISON_ALLOCATIONS");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

Allocator& cpu_allocator() {
  static CpuAllocator* allocator = new CpuAllocator();  // never destroyed: tensors may outlive main
  return *allocator;
}

}  // namespace rcuda
