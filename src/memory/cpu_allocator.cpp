// Host memory: 64-byte aligned, with the same statistics the CUDA pool keeps.
#include <atomic>
#include <cstdlib>
#include <string>

#include "rcuda/core/error.h"
#include "rcuda/memory/allocator.h"

namespace rcuda {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* ptr = std::aligned_alloc(kAlignment, rounded);
    if (ptr == nullptr) {
      oom_count_.fetch_add(1, std::memory_order_relaxed);
      throw OutOfMemoryError("cpu allocator: could not allocate " + std::to_string(nbytes) +
                                 " bytes of host memory",
                             nbytes, 0, 0);
    }
    const int64_t now = allocated_.fetch_add(nbytes) + static_cast<int64_t>(nbytes);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    allocations_.fetch_add(1, std::memory_order_relaxed);
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    std::free(ptr);
    allocated_.fetch_sub(nbytes);
    frees_.fetch_add(1, std::memory_order_relaxed);
  }

  Device device() const override { return Device(DeviceType::CPU); }

  MemoryStats stats() const override {
    MemoryStats s;
    s.allocated_bytes = s.reserved_bytes = allocated_.load();
    s.peak_allocated_bytes = s.peak_reserved_bytes = peak_.load();
    s.allocation_count = allocations_.load();
    s.free_count = frees_.load();
    s.oom_count = oom_count_.load();
    return s;
  }

  void reset_peak() override { peak_.store(allocated_.load()); }

 private:
  static constexpr size_t kAlignment = 64;
  std::atomic<int64_t> allocated_{0}, peak_{0}, allocations_{0}, frees_{0}, oom_count_{0};
};

}  // namespace

Allocator& cpu_allocator() {
  static CpuAllocator* allocator = new CpuAllocator();  // never destroyed: tensors may outlive main
  return *allocator;
}

}  // namespace rcuda
