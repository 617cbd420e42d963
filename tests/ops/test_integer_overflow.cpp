// Integer arithmetic wraps on overflow (two's complement), as torch's does, on every integral
// dtype. The reference is computed in unsigned 64-bit arithmetic, where wrapping is defined,
// then truncated to the dtype's width.
#include <gtest/gtest.h>

#include <limits>

#include "support/reference.h"

namespace rcuda {
namespace {

template <typename T>
std::vector<double> wrapped(const std::vector<T>& a, const std::vector<T>& b, char op) {
  std::vector<double> out;
  for (size_t i = 0; i < a.size(); ++i) {
    const uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(a[i]));
    const uint64_t y = static_cast<uint64_t>(static_cast<int64_t>(b[i]));
    const uint64_t r = op == '+' ? x + y : op == '-' ? x - y : x * y;
    out.push_back(static_cast<double>(static_cast<T>(r)));
  }
  return out;
}

template <typename T>
void expect_wrapping(DType dtype) {
  const T hi = std::numeric_limits<T>::max(), lo = std::numeric_limits<T>::min();
  const std::vector<T> a = {hi, lo, hi, T(hi / 2 + 3), lo, T(7)};
  const std::vector<T> b = {T(1), T(1), hi, T(5), lo, T(3)};
  Tensor ta = Tensor::empty({6}, dtype), tb = Tensor::empty({6}, dtype);
  for (size_t i = 0; i < 6; ++i) {
    ta.data<T>()[i] = a[i];
    tb.data<T>()[i] = b[i];
  }
  EXPECT_EQ(test::to_doubles(add(ta, tb)), wrapped(a, b, '+')) << dtype_name(dtype);
  EXPECT_EQ(test::to_doubles(sub(ta, tb)), wrapped(a, b, '-')) << dtype_name(dtype);
  EXPECT_EQ(test::to_doubles(mul(ta, tb)), wrapped(a, b, '*')) << dtype_name(dtype);
  // -min and |min| wrap to min; pow overflows the same way repeated products do.
  const std::vector<double> negated = test::to_doubles(neg(ta));
  EXPECT_EQ(negated[1], static_cast<double>(
                            static_cast<T>(0 - static_cast<uint64_t>(static_cast<int64_t>(lo)))));
  const std::vector<double> cubed = test::to_doubles(pow(ta, 3));
  const std::vector<double> square = wrapped(a, a, '*');
  std::vector<T> sq(6);
  for (size_t i = 0; i < 6; ++i) sq[i] = static_cast<T>(static_cast<int64_t>(square[i]));
  EXPECT_EQ(cubed, wrapped(sq, a, '*')) << dtype_name(dtype);
}

TEST(IntegerOverflow, WrapsLikeTwosComplement) {
  expect_wrapping<int64_t>(DType::Int64);
  expect_wrapping<int32_t>(DType::Int32);
  expect_wrapping<int16_t>(DType::Int16);
  expect_wrapping<int8_t>(DType::Int8);
  expect_wrapping<uint8_t>(DType::UInt8);
}

}  // namespace
}  // namespace rcuda
