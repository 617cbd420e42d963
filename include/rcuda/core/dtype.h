// Element types of tensors, their sizes and names, and PyTorch's type-promotion lattice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rcuda {

enum class DType : uint8_t {
  Bool,
  UInt8,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  // 8-bit floats (rcuda/core/float8.h) are storage types for scaled matrix products: they
  // convert to and from every dtype and feed scaled_mm; other ops ask for a conversion first.
  Float8E4M3FN,
  Float8E5M2
};

constexpr int kNumDTypes = 10;

size_t element_size(DType dtype);
const char* dtype_name(DType dtype);  // "float32", "int64", ...
// Parses "float32", "float", "double", "half", "long", "int", ... as torch spells them.
DType dtype_from_name(const std::string& name);

inline bool is_float8(DType d) { return d == DType::Float8E4M3FN || d == DType::Float8E5M2; }
inline bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 ||
         d == DType::Float64 || is_float8(d);
}
inline bool is_integral(DType d, bool include_bool) {
  return d == DType::UInt8 || d == DType::Int32 || d == DType::Int64 ||
         (include_bool && d == DType::Bool);
}
// Half types are stored in 16 bits but computed in float32.
inline bool is_reduced_float(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

// The smallest dtype that holds both, as torch.promote_types: bool < integers < floats,
// uint8 + int32 -> int32, float16 + bfloat16 -> float32, int + float16 -> float16. float8
// dtypes promote with nothing but themselves (DTypeError), as torch.
DType promote_types(DType a, DType b);

// The dtype torch uses for a Python float with integral tensors, and for integer division.
constexpr DType kDefaultFloat = DType::Float32;

}  // namespace rcuda
