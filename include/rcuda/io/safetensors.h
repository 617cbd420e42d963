// Safetensors files (the format of huggingface/safetensors, which PyTorch, JAX and HF tools read
// and write): an 8-byte little-endian header size, a JSON header naming each tensor's dtype,
// shape and byte range, then the tensors' bytes, row-major and little-endian.
//
// Note [Safetensors dtypes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Saved: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL F8_E4M3 F8_E5M2, one per rcuda dtype. Read:
// those, and the integer types rcuda has no dtype for, widened so that every value is kept: U16
// becomes int32, U32 becomes int64. U64, complex and other codes are refused.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::io {

// Tensors with their names, in order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
// The header's "__metadata__": free text keys and values (PyTorch writes {"format": "pt"}).
using Metadata = std::map<std::string, std::string>;

struct SafetensorsContents {
  NamedTensors tensors;  // in the order of their bytes in the file
  Metadata metadata;
};

// Writes `tensors` (any device, any strides: each is copied to contiguous host memory) in the
// given order. The file is replaced atomically: written to a temporary file in the same folder,
// flushed to disk, then renamed over `path`, so a crash never leaves a half-written file there.
// ValueError for duplicate or reserved names and undefined tensors; FileError (naming the path
// and the system's reason) when the file cannot be written.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata = {});

// Reads every tensor onto `device`. The whole file is checked before it is trusted: header size
// against the file size, valid JSON, known dtypes, shapes whose size times the element size is
// the tensor's byte range, byte ranges inside the data that neither overlap nor leave gaps, and
// BOOL bytes that are 0 or 1. Any failure is a FileError naming the path and what is wrong.
SafetensorsContents load_safetensors(const std::string& path, Device device = Device());

// The format's code of a dtype ("F32", "BF16", ...).
const char* safetensors_dtype_code(DType dtype);

}  // namespace rcuda::io
