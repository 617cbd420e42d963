// Note [Small vectors]
// SmallVector<T, N> keeps up to N elements inside the object and moves them to the heap only
// past N. The per-op bookkeeping of the backends and of autograd (a loop's merged sizes and
// strides, a reduction's layout, a running index, a recorded input's shape) has as many
// entries as a tensor has dims, nearly always fewer than 8: in std::vectors each op paid a heap
// allocation per list, and malloc and free were 40% of a tiny CPU op's instructions
// (docs/design.md, "Small vectors"). Boost's small_vector and Abseil's InlinedVector
// do this, but neither is a dependency of rcuda, and a package built from source on every
// user's machine should not gain one for a container of integers. So this one is kept small:
// trivially copyable elements only, and only the members the backends use.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "rcuda/core/macros.h"

namespace rcuda {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable types");
  static_assert(N > 0, "SmallVector needs room for one element inside");

 public:
  SmallVector() = default;
  explicit SmallVector(size_t count, T value = T()) { resize(count, value); }
  explicit SmallVector(const std::vector<T>& values) { assign(values.begin(), values.end()); }
  SmallVector(const SmallVector& other) { assign(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool is_inline() const { return heap_ == nullptr; }

  T* data() { return heap_ ? heap_.get() : inline_.data(); }
  const T* data() const { return heap_ ? heap_.get() : inline_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(T value) {
    if (size_ == capacity_) grow(2 * capacity_);
    data()[size_++] = value;
  }
  void resize(size_t count, T value = T()) {
    if (count > capacity_) grow(std::max(count, 2 * capacity_));
    if (count > size_) std::fill(data() + size_, data() + count, value);
    size_ = count;
  }
  void clear() { size_ = 0; }
  template <typename It>
  void assign(It first, It last) {
    clear();
    for (; first != last; ++first) push_back(*first);
  }

 private:
  // Out of line: rare, and it keeps push_back small (and GCC 12 from misreading the copy of an
  // inlined grow as an overflow).
  RCUDA_NOINLINE void grow(size_t capacity) {
    auto bigger = std::make_unique<T[]>(capacity);
    std::copy(begin(), end(), bigger.get());
    heap_ = std::move(bigger);
    capacity_ = capacity;
  }
  // Leaves `other` empty and inline.
  void take(SmallVector& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    heap_ = std::move(other.heap_);
    if (!heap_) std::copy(other.inline_.begin(), other.inline_.begin() + size_, inline_.begin());
    other.size_ = 0;
    other.capacity_ = N;
  }

  std::array<T, N> inline_;
  std::unique_ptr<T[]> heap_;  // null while the elements fit inside
  size_t size_ = 0, capacity_ = N;
};

// A list with one entry per dim of a tensor.
using DimVector = SmallVector<int64_t, 8>;

}  // namespace rcuda
