// What the reader and the writer of safetensors files share: the dtype codes (Note
// [Safetensors dtypes] in rcuda/io/safetensors.h), the header limit, and file errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "rcuda/core/dtype.h"
#include "rcuda/core/error.h"

namespace rcuda::io::detail {

// Bytes are read and written as they lie in memory, so the host must be little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian host");

// The reference implementation refuses headers over 100 MB; so do we, before allocating one.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct FileDType {
  const char* code;
  DType dtype;        // what the tensor becomes in rcuda
  size_t file_bytes;  // bytes per element in the file (less than dtype's when widened)
  bool is_signed;     // for widened integers
};

// The entry for a code, or nullptr for a code rcuda cannot read.
const FileDType* find_file_dtype(const std::string& code);

// FileError "<op>: <path>: <what>".
[[noreturn]] inline void file_error(const char* op, const std::string& path,
                                    const std::string& what) {
  throw FileError(std::string(op) + ": " + path + ": " + what);
}

}  // namespace rcuda::io::detail
