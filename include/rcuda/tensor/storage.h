// Storage: refcounted bytes on one device, freed through the allocator that made them.
// Several tensors (views) share one Storage.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "rcuda/memory/allocator.h"

namespace rcuda {

class Storage {
 public:
  Storage(size_t nbytes, Allocator& allocator)
      : data_(allocator.allocate(nbytes)),
        nbytes_(nbytes),
        allocator_(&allocator),
        device_(allocator.device()) {}
  // Wraps memory owned elsewhere (e.g. an R vector); `release` frees it, may be empty.
  Storage(void* data, size_t nbytes, Device device, std::shared_ptr<void> keep_alive)
      : data_(data), nbytes_(nbytes), device_(device), keep_alive_(std::move(keep_alive)) {}
  ~Storage() {
    if (allocator_ != nullptr) allocator_->deallocate(data_, nbytes_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  // Kept here rather than asked of the allocator: every op reads it several times.
  Device device() const { return device_; }

  // Note [Version counter]: every in-place write to these bytes (copy_, fill_, add_, an
  // optimizer step, ...) bumps the version. Autograd records the version of each tensor it
  // saves for backward and refuses to use it once the version has moved, so an in-place change
  // of a saved tensor is an error naming the op, never a silently wrong gradient. Views share
  // the storage, so they share the counter, as PyTorch's views share theirs.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_;
  size_t nbytes_;
  Allocator* allocator_ = nullptr;
  Device device_;
  std::shared_ptr<void> keep_alive_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace rcuda
