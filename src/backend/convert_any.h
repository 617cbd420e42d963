// Conversion between dtypes known only at run time, one element at a time, for both backends.
//
// Note [Conversions: typed pairs and one generic loop]
// A loop per (destination, source) dtype pair is 144 pairs over the 12 dtypes a copy converts
// between, on the CPU a contiguous and a strided loop each, on the GPU a dense and a strided
// kernel each: they made the two copy files among the build's slowest. Now a copy within one
// dtype moves elements by width, the pairs that training and inference convert on their hot
// paths (dispatch_hot_conversion below) keep a typed loop, and every other pair runs one loop that
// switches on both dtypes per element. That loop holds the value as a double (floating sources:
// exact for each of them) or an int64 (integer and bool sources: exact), then converts with
// backend::convert as the typed loops do, so both give the same bits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/dispatch.h"
#include "rcuda/core/dtype.h"
#include "rcuda/core/macros.h"

namespace rcuda::backend {

struct WideValue {
  double real;
  int64_t integer;
  bool is_integer;
};

template <typename T>
RCUDA_HOST_DEVICE inline WideValue widen(const char* p) {
  const T v = *reinterpret_cast<const T*>(p);
  if constexpr (kIsFloating<T>)
    return {convert<double>(v), 0, false};
  else
    return {0.0, static_cast<int64_t>(v), true};
}

template <typename T>
RCUDA_HOST_DEVICE inline void narrow(char* p, WideValue v) {
  *reinterpret_cast<T*>(p) = v.is_integer ? convert<T>(v.integer) : convert<T>(v.real);
}

// Throws the DTypeError a typed conversion would for a pair load_any/store_any cannot convert
// (complex): both backends call it before their generic loop starts.
inline void check_convertible(DType to, DType from) {
  dispatch_with_float8(to, [](auto) {});
  dispatch_with_float8(from, [](auto) {});
}

RCUDA_HOST_DEVICE inline WideValue load_any(const char* p, DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return widen<bool>(p);
    case DType::UInt8:
      return widen<uint8_t>(p);
    case DType::Int8:
      return widen<int8_t>(p);
    case DType::Int16:
      return widen<int16_t>(p);
    case DType::Int32:
      return widen<int32_t>(p);
    case DType::Int64:
      return widen<int64_t>(p);
    case DType::Float16:
      return widen<Half>(p);
    case DType::BFloat16:
      return widen<BFloat16>(p);
    case DType::Float32:
      return widen<float>(p);
    case DType::Float64:
      return widen<double>(p);
    case DType::Float8E4M3FN:
      return widen<Float8E4M3FN>(p);
    case DType::Float8E5M2:
      return widen<Float8E5M2>(p);
    default:
      return {0.0, 0, true};
  }
}

RCUDA_HOST_DEVICE inline void store_any(char* p, DType dtype, WideValue v) {
  switch (dtype) {
    case DType::Bool:
      return narrow<bool>(p, v);
    case DType::UInt8:
      return narrow<uint8_t>(p, v);
    case DType::Int8:
      return narrow<int8_t>(p, v);
    case DType::Int16:
      return narrow<int16_t>(p, v);
    case DType::Int32:
      return narrow<int32_t>(p, v);
    case DType::Int64:
      return narrow<int64_t>(p, v);
    case DType::Float16:
      return narrow<Half>(p, v);
    case DType::BFloat16:
      return narrow<BFloat16>(p, v);
    case DType::Float32:
      return narrow<float>(p, v);
    case DType::Float64:
      return narrow<double>(p, v);
    case DType::Float8E4M3FN:
      return narrow<Float8E4M3FN>(p, v);
    case DType::Float8E5M2:
      return narrow<Float8E5M2>(p, v);
    default:
      return;
  }
}

// The typed pairs: into float32 from everything (masks, labels and image bytes become float32);
// among float16, bfloat16, float32 and float64 (float64 into float16 and bfloat16 included);
// float8 to and from float32, float16 and bfloat16; int32 and int64 both ways. Calls f(D{}, S{})
// and returns true for one of them; returns false, calling nothing, for any other pair.
template <typename F>
bool dispatch_hot_conversion(DType to, DType from, F&& f) {
  if (from == DType::Complex64 || from == DType::Complex128) return false;
  return dispatch_with_float8(from, [&](auto src_tag) {
    using S = decltype(src_tag);
    constexpr bool kFloat8 = std::is_same_v<S, Float8E4M3FN> || std::is_same_v<S, Float8E5M2>;
    constexpr bool kWideFloat =
        std::is_same_v<S, float> || std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>;
    constexpr bool kIntoHalves = kWideFloat || kFloat8 || std::is_same_v<S, double>;
    switch (to) {
      case DType::Float32:
        f(float{}, S{});
        return true;
      case DType::Float16:
        if constexpr (kIntoHalves) {
          f(Half{}, S{});
          return true;
        }
        break;
      case DType::BFloat16:
        if constexpr (kIntoHalves) {
          f(BFloat16{}, S{});
          return true;
        }
        break;
      case DType::Float64:
        if constexpr (kWideFloat) {
          f(double{}, S{});
          return true;
        }
        break;
      case DType::Float8E4M3FN:
        if constexpr (kWideFloat) {
          f(Float8E4M3FN{}, S{});
          return true;
        }
        break;
      case DType::Float8E5M2:
        if constexpr (kWideFloat) {
          f(Float8E5M2{}, S{});
          return true;
        }
        break;
      case DType::Int64:
        if constexpr (std::is_same_v<S, int32_t>) {
          f(int64_t{}, S{});
          return true;
        }
        break;
      case DType::Int32:
        if constexpr (std::is_same_v<S, int64_t>) {
          f(int32_t{}, S{});
          return true;
        }
        break;
      default:
        break;
    }
    return false;
  });
}

}  // namespace rcuda::backend
