// Allocators hand out device memory for Storage. Each device type has one allocator; the CUDA
// backend's is a stream-ordered pool, the CPU's an aligned heap. Statistics are kept per allocator.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "rcuda/core/device.h"

namespace rcuda {

struct MemoryStats {
  int64_t allocated_bytes = 0;       // held by live tensors now
  int64_t peak_allocated_bytes = 0;  // since start or the last reset_peak()
  int64_t reserved_bytes = 0;        // held from the system (pool included)
  int64_t peak_reserved_bytes = 0;
  int64_t allocation_count = 0;  // calls to allocate that succeeded
  int64_t free_count = 0;
  int64_t oom_count = 0;    // requests that failed for good
  int64_t retry_count = 0;  // requests that succeeded only after OOM hooks and a trim
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Never returns null for nbytes > 0: throws OutOfMemoryError. nbytes == 0 gives nullptr.
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  virtual Device device() const = 0;
  virtual MemoryStats stats() const = 0;
  virtual void reset_peak() = 0;
  // Returns cached memory to the system where the allocator caches; a no-op otherwise.
  virtual void empty_cache() {}
};

// Note [Poisoned allocations]
// With RCUDA_POISON_ALLOCATIONS=1 every allocator fills new memory with 0xFF bytes (NaN for
// floating dtypes, -1 for integers), so a kernel that leaves an output element unwritten is
// caught by tests instead of passing on lucky zeros. The test binaries set it; it costs a pass
// over each allocation, so it is off otherwise.
bool poison_allocations();

// 64-byte aligned host memory (a cache line, and enough for AVX-512 loads).
Allocator& cpu_allocator();

// The allocator for a device. Device backends register theirs (the CUDA pool) when loaded;
// DeviceError names the device when none is registered.
Allocator& allocator_for(Device device);
void register_allocator(DeviceType type, Allocator& (*lookup)(int device_index));

}  // namespace rcuda
