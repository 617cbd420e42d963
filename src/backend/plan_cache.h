// A bounded map from a configuration key to what was built for it (cuDNN execution plans, RNN
// descriptors, oneDNN primitives), least recently used first out beyond its capacity. Building
// is the slow part, so callers look up, build outside any lock they hold, then insert. Not
// thread-safe: a cache shared between threads is guarded by its owner's mutex (cuda/
// conv_cudnn.cpp, cpu/conv_dnnl.cpp); a per-thread one needs none (cuda/rnn_cudnn.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <utility>

namespace rcuda::backend {

// FNV-1a over the values of a fixed-size key of integers.
struct IntArrayHash {
  template <size_t N>
  size_t operator()(const std::array<int64_t, N>& key) const {
    uint64_t h = 14695981039346656037ull;
    for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

template <typename Key, typename Value, typename Hash = IntArrayHash>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {}

  // The value built for `key`, now the most recently used; null when there is none.
  std::shared_ptr<const Value> find(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  // Keeps `value` for `key` and returns it; when `key` is already there (built twice at once by
  // two threads) the value kept first stays and is returned. Evicts the least recently used
  // entry beyond the capacity: values still held by a caller live on until it lets go.
  std::shared_ptr<const Value> insert(const Key& key, std::shared_ptr<const Value> value) {
    if (auto existing = find(key)) return existing;
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  using Item = std::pair<Key, std::shared_ptr<const Value>>;
  size_t capacity_;
  std::list<Item> order_;  // most recently used first
  std::unordered_map<Key, typename std::list<Item>::iterator, Hash> index_;
};

}  // namespace rcuda::backend
