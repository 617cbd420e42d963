// Typed exceptions. Every message names the op, the argument and the offending values, so a
// user can fix the call from the message alone; bindings map each type to its own condition.
#pragma once

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace rcuda {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  virtual const char* kind() const { return "Error"; }
};

#define RCUDA_DEFINE_ERROR(Name)                            \
  class Name : public Error {                               \
   public:                                                  \
    explicit Name(const std::string& what) : Error(what) {} \
    const char* kind() const override { return #Name; }     \
  };

RCUDA_DEFINE_ERROR(ShapeError)   // sizes that do not fit together
RCUDA_DEFINE_ERROR(DTypeError)   // a dtype the op does not accept
RCUDA_DEFINE_ERROR(DeviceError)  // tensors on different devices, missing device or backend
RCUDA_DEFINE_ERROR(IndexError)   // an index or dim out of range
RCUDA_DEFINE_ERROR(ValueError)   // any other bad argument value
RCUDA_DEFINE_ERROR(CudaError)    // a failing CUDA call, with the call and location
// A file that cannot be read or written, or whose contents are malformed (names the path).
RCUDA_DEFINE_ERROR(FileError)
// A broken invariant of rcuda itself (a bug to report), never a mistake of the caller.
RCUDA_DEFINE_ERROR(InternalError)
#undef RCUDA_DEFINE_ERROR

class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(const std::string& what, size_t requested, size_t free_bytes, size_t total)
      : Error(what), requested_bytes(requested), free_bytes(free_bytes), total_bytes(total) {}
  const char* kind() const override { return "OutOfMemoryError"; }
  size_t requested_bytes, free_bytes, total_bytes;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}
}  // namespace detail

// RCUDA_CHECK(cond, ErrorType, parts...): throws ErrorType(concat(parts...)) when cond fails.
#define RCUDA_CHECK(cond, ErrorType, ...)                               \
  do {                                                                  \
    if (!(cond)) throw ErrorType(::rcuda::detail::concat(__VA_ARGS__)); \
  } while (0)

}  // namespace rcuda
