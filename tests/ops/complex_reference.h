// Complex values of tensors read by hand (through view_as_real and the strided reader of
// support/reference.h) and compared with std::complex<double> references.
#pragma once

#include <complex>
#include <string>
#include <vector>

#include "rcuda/autograd/api.h"
#include "rcuda/autograd/linalg_factor.h"
#include "support/reference.h"

namespace rcuda::test {

using Complex = std::complex<double>;

// Row-major values of a complex tensor on any device.
inline std::vector<Complex> complex_values(const Tensor& z) {
  const std::vector<double> pairs = to_doubles(ops::view_as_real(to(z, Device())));
  std::vector<Complex> out(pairs.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = {pairs[2 * i], pairs[2 * i + 1]};
  return out;
}

// A fresh random complex tensor of `dtype` (complex64 or complex128), parts in [-2, 2).
inline Tensor random_complex(const Shape& shape, DType dtype) {
  const DType part = complex_part_dtype(dtype);
  return ops::complex(random_tensor(shape, part), random_tensor(shape, part));
}

// |a - e| <= tol * max(1, |e|) for every element.
inline ::testing::AssertionResult complex_close(const std::vector<Complex>& actual,
                                                const std::vector<Complex>& expected, double tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i)
    if (std::abs(actual[i] - expected[i]) > tol * std::max(1.0, std::abs(expected[i])))
      return ::testing::AssertionFailure() << "element " << i << ": " << actual[i] << " vs "
                                           << expected[i] << " (tol " << tol << ")";
  return ::testing::AssertionSuccess();
}

// The row-major position in `from` of element i of the broadcast shape `to`.
inline size_t broadcast_source(size_t i, const Shape& from, const Shape& to) {
  size_t pos = 0, stride = 1;
  for (int64_t d = static_cast<int64_t>(to.size()) - 1, k = static_cast<int64_t>(from.size()) - 1;
       d >= 0; --d, --k) {
    const int64_t index = static_cast<int64_t>(i % static_cast<size_t>(to[d]));
    i /= static_cast<size_t>(to[d]);
    if (k >= 0) {
      if (from[k] != 1) pos += static_cast<size_t>(index) * stride;
      stride *= static_cast<size_t>(from[k]);
    }
  }
  return pos;
}

}  // namespace rcuda::test
