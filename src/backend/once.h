// Note [Made once, read often]
// A value made on first use and read by every op after it (a device's stream, its memory pool,
// a backend, a library handle). std::call_once alone would do, but libstdc++'s call_once writes
// two thread-locals and calls pthread_once at every call, not only the first: under callgrind on
// an H100 host that was about 130 instructions a call, with two __tls_get_addr lookups (rcuda is
// a shared library), and a tiny CUDA op paid it five times. OnceValue reads the made value with
// one acquire load and calls call_once only while it is still empty, so the first use keeps
// call_once's guarantees: one thread makes it, the others wait, and a make() that throws
// leaves it empty for the next caller to try again.
#pragma once

#include <atomic>
#include <mutex>

namespace rcuda::backend {

// T: a pointer or a library handle (which are pointers); empty is T{}, so make() must return
// something else.
template <typename T>
class OnceValue {
 public:
  template <typename Make>
  T get(Make&& make) {
    const T made = value_.load(std::memory_order_acquire);
    if (made != T{}) return made;
    std::call_once(once_, [&] { value_.store(make(), std::memory_order_release); });
    return value_.load(std::memory_order_acquire);
  }
  // The value if it was made, else T{}.
  T peek() const { return value_.load(std::memory_order_acquire); }

 private:
  std::once_flag once_;
  std::atomic<T> value_{};
};

}  // namespace rcuda::backend
