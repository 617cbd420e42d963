// Dtype dispatch for kernels of every backend: turns a runtime DType into a C++ type, once per
// kernel launch, and converts values between element types on host and device alike.
//
// Note [Compute types]
// float16 and bfloat16 are stored in 16 bits and computed in float32 (ComputeType), as torch
// does; everything else computes in its own type. Reductions accumulate in
// AccumulateType: double for float32/float64, float for the half types, int64 for integers.
#pragma once

#include <cstdint>
#include <type_traits>

#include "rcuda/core/dtype.h"
#include "rcuda/core/error.h"
#include "rcuda/core/float8.h"
#include "rcuda/core/half.h"
#include "rcuda/core/macros.h"

namespace rcuda::backend {

template <typename T>
constexpr bool kIsReducedFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                                 std::is_same_v<T, Float8E4M3FN> || std::is_same_v<T, Float8E5M2>;
template <typename T>
constexpr bool kIsFloating = kIsReducedFloat<T> || std::is_floating_point_v<T>;

// The type elementwise math runs in: float for the half and float8 types.
template <typename T>
using ComputeType = std::conditional_t<kIsReducedFloat<T>, float, T>;

template <typename T>
struct AccumulateTypeOf {
  using type = int64_t;
};
template <>
struct AccumulateTypeOf<float> {
  using type = double;
};
template <>
struct AccumulateTypeOf<double> {
  using type = double;
};
template <>
struct AccumulateTypeOf<Half> {
  using type = float;
};
template <>
struct AccumulateTypeOf<BFloat16> {
  using type = float;
};
template <typename T>
using AccumulateType = typename AccumulateTypeOf<T>::type;

// Value conversion between any two element types (through float for the half types).
template <typename To, typename From>
RCUDA_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsReducedFloat<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (kIsReducedFloat<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                       !std::is_same_v<To, bool>) {
    // Through int64, so that out-of-range values wrap the same way on every backend (a direct
    // float -> uint8 cast is undefined in C++: x86 wraps, GPUs saturate). Truncates toward 0.
    return static_cast<To>(static_cast<int64_t>(v));
  } else {
    return static_cast<To>(v);
  }
}

// Integer arithmetic that wraps on overflow, as torch's does, without C++'s undefined behaviour
// for signed overflow: computed in an unsigned type at least as wide as T and as unsigned int
// (narrower ones would promote to int, where products can overflow), then truncated to T.
// Other types compute as usual.
template <typename T>
constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
RCUDA_HOST_DEVICE inline T wrapping_add(T a, T b) {
  if constexpr (kWraps<T>)
    return static_cast<T>(WrapType<T>(a) + WrapType<T>(b));
  else
    return static_cast<T>(a + b);
}
template <typename T>
RCUDA_HOST_DEVICE inline T wrapping_sub(T a, T b) {
  if constexpr (kWraps<T>)
    return static_cast<T>(WrapType<T>(a) - WrapType<T>(b));
  else
    return static_cast<T>(a - b);
}
template <typename T>
RCUDA_HOST_DEVICE inline T wrapping_mul(T a, T b) {
  if constexpr (kWraps<T>)
    return static_cast<T>(WrapType<T>(a) * WrapType<T>(b));
  else
    return static_cast<T>(a * b);
}

[[noreturn]] inline void float8_unsupported(DType dtype) {
  throw DTypeError(std::string("this op does not support ") + dtype_name(dtype) +
                   " tensors (float8 is a storage type for scaled_mm): convert with to() first");
}

[[noreturn]] inline void complex_unsupported(DType dtype) {
  throw DTypeError(std::string("this op does not support ") + dtype_name(dtype) +
                   " tensors (complex tensors have creation, conversion, views, real/imag, "
                   "arithmetic, abs, angle, conj and eig: docs/complex.md); split them with "
                   "view_as_real() first");
}

// Calls f(T{}) with T the C++ type of `dtype`, for the 10 computing dtypes (not float8, not
// complex: complex ops are composed of real ones above the backends, Note [Complex tensors]).
template <typename F>
decltype(auto) dispatch_all(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Bool:
      return f(bool{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::Int8:
      return f(int8_t{});
    case DType::Int16:
      return f(int16_t{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::Float16:
      return f(Half{});
    case DType::BFloat16:
      return f(BFloat16{});
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
      float8_unsupported(dtype);
    case DType::Complex64:
    case DType::Complex128:
      complex_unsupported(dtype);
  }
  throw DTypeError("dispatch: unknown dtype");
}

// dispatch_all plus the float8 storage types: for copies and conversions.
template <typename F>
decltype(auto) dispatch_with_float8(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float8E4M3FN:
      return f(Float8E4M3FN{});
    case DType::Float8E5M2:
      return f(Float8E5M2{});
    default:
      return dispatch_all(dtype, std::forward<F>(f));
  }
}

// Floating dtypes only; `op` names the caller in the DTypeError for any other.
template <typename F>
decltype(auto) dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::Float16:
      return f(Half{});
    case DType::BFloat16:
      return f(BFloat16{});
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
      float8_unsupported(dtype);
    case DType::Complex64:
    case DType::Complex128:
      complex_unsupported(dtype);
    default:
      break;
  }
  throw DTypeError(std::string(op) + ": expected a floating dtype, got " + dtype_name(dtype));
}

}  // namespace rcuda::backend
