// element_size against the C++ type each dtype stores, for every dtype the enum has.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>

#include "rcuda/core/error.h"
#include "rcuda/core/float8.h"
#include "rcuda/core/half.h"
#include "rcuda/rcuda.h"

namespace rcuda {
namespace {

TEST(DTypeSizes, EveryDTypeHasItsElementTypesSize) {
  const std::pair<DType, size_t> expected[] = {
      {DType::Bool, sizeof(bool)},
      {DType::UInt8, sizeof(uint8_t)},
      {DType::Int32, sizeof(int32_t)},
      {DType::Int64, sizeof(int64_t)},
      {DType::Float16, sizeof(Half)},
      {DType::BFloat16, sizeof(BFloat16)},
      {DType::Float32, sizeof(float)},
      {DType::Float64, sizeof(double)},
      {DType::Float8E4M3FN, sizeof(Float8E4M3FN)},
      {DType::Float8E5M2, sizeof(Float8E5M2)},
      {DType::Int8, sizeof(int8_t)},
      {DType::Int16, sizeof(int16_t)},
      {DType::Complex64, sizeof(std::complex<float>)},
      {DType::Complex128, sizeof(std::complex<double>)},
  };
  static_assert(sizeof(expected) / sizeof(expected[0]) == kNumDTypes, "a dtype is missing here");
  for (const auto& [dtype, size] : expected) {
    EXPECT_EQ(element_size(dtype), size) << dtype_name(dtype);
    // The tensor's own answer, and the bytes its storage holds.
    const Tensor t = Tensor::empty({3}, dtype);
    EXPECT_EQ(t.element_size(), size) << dtype_name(dtype);
    EXPECT_EQ(t.storage()->nbytes(), 3 * size) << dtype_name(dtype);
  }
}

TEST(DTypeSizes, AnUnknownCodeIsAnError) {
  const auto bad = static_cast<DType>(kNumDTypes);
  try {
    element_size(bad);
    FAIL() << "element_size accepted dtype code " << kNumDTypes;
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("element_size: unknown dtype (code 14)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rcuda
