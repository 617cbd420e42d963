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
  Float8E5M2,
  // Narrow signed integers (torch.int8, torch.int16), appended so that the values above keep
  // their numbers.
  Int8,
  Int16,
  // Complex numbers (torch.complex64, torch.complex128): pairs of float32 or float64, real part
  // first. A storage type with a few ops composed of real ones (Note [Complex tensors] in
  // rcuda/ops/complex.h); other ops refuse it with a DTypeError.
  Complex64,
  Complex128
};

constexpr int kNumDTypes = 14;

// Inline, as a table: every new tensor, data pointer and launch asks it, several times per op,
// and a call into the shared library cost more than the lookup.
[[noreturn]] void throw_unknown_dtype(const char* op, DType dtype);
inline size_t element_size(DType dtype) {
  // In the enum's order.
  constexpr uint8_t kSizes[kNumDTypes] = {1, 1, 4, 8, 2, 2, 4, 8, 1, 1, 1, 2, 8, 16};
  const auto i = static_cast<size_t>(dtype);
  if (i >= static_cast<size_t>(kNumDTypes)) throw_unknown_dtype("element_size", dtype);
  return kSizes[i];
}
const char* dtype_name(DType dtype);  // "float32", "int64", ...
// Parses "float32", "float", "double", "half", "long", "int", "short", ... as torch spells them.
DType dtype_from_name(const std::string& name);

inline bool is_float8(DType d) { return d == DType::Float8E4M3FN || d == DType::Float8E5M2; }
inline bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 ||
         d == DType::Float64 || is_float8(d);
}
inline bool is_integral(DType d, bool include_bool) {
  return d == DType::UInt8 || d == DType::Int8 || d == DType::Int16 || d == DType::Int32 ||
         d == DType::Int64 || (include_bool && d == DType::Bool);
}
inline bool is_complex(DType d) { return d == DType::Complex64 || d == DType::Complex128; }
// complex64 <-> float32, complex128 <-> float64; DTypeError for any other dtype.
DType complex_part_dtype(DType complex_dtype);
DType complex_dtype_for(DType float_dtype);
// Half types are stored in 16 bits but computed in float32.
inline bool is_reduced_float(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

// The smallest dtype that holds both, as torch.promote_types: bool < integers < floats, the
// integers ordered uint8/int8 < int16 < int32 < int64 with uint8 + int8 -> int16 (the one mix
// that needs a wider type), float16 + bfloat16 -> float32, int + float16 -> float16; complex
// beats every real dtype, widened to complex128 by float64 (complex64 + float64 -> complex128).
// float8 dtypes promote with nothing but themselves (DTypeError), as torch.
DType promote_types(DType a, DType b);

// Note [Default floating dtype]
// The dtype of floating results that no operand decides, as torch.get_default_dtype(): tensors
// created without a dtype (zeros, randn, arange over floating numbers), a Python-style float
// with integral tensors, true division and floating functions (sqrt, logsumexp) of integers.
// float32 until changed; only float32 and float64 are accepted (set_default_float_dtype throws
// DTypeError otherwise). One process-wide value, as torch's: set it before work starts, not
// while other threads create tensors.
DType default_float_dtype();
void set_default_float_dtype(DType dtype);

}  // namespace rcuda
