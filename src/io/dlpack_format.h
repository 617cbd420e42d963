// What DLPack's export and import share: the dtype codes (Note [DLPack dtypes]) and the counts
// of rcuda/io/dlpack.h's dlpack_counts(). The engine's only includer of third_party's dlpack.h
// (tests/io/test_dlpack.cpp includes it too).
#pragma once

#include <dlpack/dlpack.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "rcuda/core/dtype.h"

namespace rcuda::io::detail {

static_assert(DLPACK_MAJOR_VERSION == 1, "rcuda reads and writes DLPack 1.x's managed tensors");

// Note [DLPack dtypes]
// ~~~~~~~~~~~~~~~~~~~~
// Every rcuda dtype has a DLPack code (one lane): bool is kDLBool in 8 bits, as PyTorch and
// NumPy store it; the float8 dtypes are DLPack 1.1's kDLFloat8_e4m3fn and kDLFloat8_e5m2,
// which PyTorch reads; complex64 and complex128 are kDLComplex of 64 and 128 bits. An import
// takes these and nothing else: the unsigned 16-, 32- and 64-bit integers, the other float8,
// float6 and float4 codes, and vector types (lanes > 1) have no rcuda dtype.
struct DTypeCode {
  DType dtype;
  uint8_t code;
  uint8_t bits;
};
inline constexpr DTypeCode kDTypeCodes[] = {
    {DType::Bool, kDLBool, 8},
    {DType::UInt8, kDLUInt, 8},
    {DType::Int8, kDLInt, 8},
    {DType::Int16, kDLInt, 16},
    {DType::Int32, kDLInt, 32},
    {DType::Int64, kDLInt, 64},
    {DType::Float16, kDLFloat, 16},
    {DType::BFloat16, kDLBfloat, 16},
    {DType::Float32, kDLFloat, 32},
    {DType::Float64, kDLFloat, 64},
    {DType::Float8E4M3FN, kDLFloat8_e4m3fn, 8},
    {DType::Float8E5M2, kDLFloat8_e5m2, 8},
    {DType::Complex64, kDLComplex, 64},
    {DType::Complex128, kDLComplex, 128},
};
static_assert(sizeof(kDTypeCodes) / sizeof(kDTypeCodes[0]) == kNumDTypes,
              "every rcuda dtype needs a DLPack code (Note [DLPack dtypes])");

DLDataType dlpack_dtype(DType dtype);
std::optional<DType> dtype_from_dlpack(DLDataType type);
// "code 1 (uint), 16 bits, 1 lane": a DLPack dtype in an error message.
std::string dlpack_dtype_str(DLDataType type);

// dlpack_counts()'s counters (Note [DLPack ownership] in rcuda/io/dlpack.h).
inline std::atomic<int64_t> exported{0}, exports_deleted{0}, imported{0}, imports_released{0};

}  // namespace rcuda::io::detail
