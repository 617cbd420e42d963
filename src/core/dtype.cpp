#include "rcuda/core/dtype.h"

#include <atomic>

#include "rcuda/core/error.h"

namespace rcuda {

void throw_unknown_dtype(const char* op, DType dtype) {
  throw DTypeError(std::string(op) + ": unknown dtype (code " +
                   std::to_string(static_cast<int>(dtype)) + ")");
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::Int16:
      return "int16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Float8E4M3FN:
      return "float8_e4m3fn";
    case DType::Float8E5M2:
      return "float8_e5m2";
    case DType::Complex64:
      return "complex64";
    case DType::Complex128:
      return "complex128";
  }
  return "unknown";
}

DType dtype_from_name(const std::string& name) {
  struct Alias {
    const char* name;
    DType dtype;
  };
  static const Alias aliases[] = {{"bool", DType::Bool},
                                  {"uint8", DType::UInt8},
                                  {"int8", DType::Int8},
                                  {"int16", DType::Int16},
                                  {"short", DType::Int16},
                                  {"int32", DType::Int32},
                                  {"int", DType::Int32},
                                  {"int64", DType::Int64},
                                  {"long", DType::Int64},
                                  {"float16", DType::Float16},
                                  {"half", DType::Float16},
                                  {"bfloat16", DType::BFloat16},
                                  {"float32", DType::Float32},
                                  {"float", DType::Float32},
                                  {"float64", DType::Float64},
                                  {"double", DType::Float64},
                                  {"float8_e4m3fn", DType::Float8E4M3FN},
                                  {"float8_e5m2", DType::Float8E5M2},
                                  {"complex64", DType::Complex64},
                                  {"cfloat", DType::Complex64},
                                  {"complex128", DType::Complex128},
                                  {"cdouble", DType::Complex128}};
  for (const Alias& a : aliases)
    if (name == a.name) return a.dtype;
  throw DTypeError("dtype: unknown dtype name '" + name +
                   "' (expected one of bool, uint8, int8, int16, int32, int64, float16, bfloat16, "
                   "float32, float64, float8_e4m3fn, float8_e5m2, complex64, complex128)");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  RCUDA_CHECK(!is_float8(a) && !is_float8(b), DTypeError, "promotion of ", dtype_name(a), " with ",
              dtype_name(b), " is not supported: convert one of them with to()");
  if (is_complex(a) || is_complex(b)) {
    // The wider of the complex type and the complex type of the other's float width.
    auto width = [](DType d) {
      return d == DType::Complex128 || d == DType::Float64 ? DType::Complex128 : DType::Complex64;
    };
    return width(a) == DType::Complex128 || width(b) == DType::Complex128 ? DType::Complex128
                                                                          : DType::Complex64;
  }
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;  // a float beats any integer, whatever its width
  if (fa) {
    // Half types only mix into float16+bfloat16 -> float32; wider wins otherwise.
    if (is_reduced_float(a) && is_reduced_float(b)) return DType::Float32;
    return element_size(a) >= element_size(b) ? a : b;
  }
  // Integers: uint8/int8 < int16 < int32 < int64. uint8 holds no negatives and int8 nothing
  // past 127, so their mix needs int16; otherwise the wider type holds both.
  const bool mixed_bytes =
      (a == DType::UInt8 && b == DType::Int8) || (a == DType::Int8 && b == DType::UInt8);
  if (mixed_bytes) return DType::Int16;
  return element_size(a) >= element_size(b) ? a : b;
}

DType complex_part_dtype(DType complex_dtype) {
  RCUDA_CHECK(is_complex(complex_dtype), DTypeError, "expected a complex dtype, got ",
              dtype_name(complex_dtype));
  return complex_dtype == DType::Complex64 ? DType::Float32 : DType::Float64;
}

DType complex_dtype_for(DType float_dtype) {
  RCUDA_CHECK(float_dtype == DType::Float32 || float_dtype == DType::Float64, DTypeError,
              "complex numbers are made of float32 or float64 parts, got ",
              dtype_name(float_dtype));
  return float_dtype == DType::Float32 ? DType::Complex64 : DType::Complex128;
}

namespace {
std::atomic<DType> default_float{DType::Float32};
}  // namespace

DType default_float_dtype() { return default_float.load(std::memory_order_relaxed); }

void set_default_float_dtype(DType dtype) {
  RCUDA_CHECK(dtype == DType::Float32 || dtype == DType::Float64, DTypeError,
              "set_default_dtype: only floating-point types are supported as the default type "
              "(float32 or float64 here), got ",
              dtype_name(dtype));
  default_float.store(dtype, std::memory_order_relaxed);
}

}  // namespace rcuda
