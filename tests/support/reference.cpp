// Test support: the bodies of reference.h's element readers and writers, random inputs and
// all_close. They live here, built with optimisation (tests/CMakeLists.txt), because the tests
// themselves are built at -O0: as inline functions every test file would hold an unoptimised copy
// of them and of the standard library templates they call (the random engine, vector indexing),
// and the linker keeps whichever copy it sees first, so the reference loops ran three times slower.
#include "support/reference.h"

namespace rcuda::test {

double read_element(const char* p, DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return *reinterpret_cast<const bool*>(p) ? 1.0 : 0.0;
    case DType::UInt8:
      return *reinterpret_cast<const uint8_t*>(p);
    case DType::Int8:
      return *reinterpret_cast<const int8_t*>(p);
    case DType::Int16:
      return *reinterpret_cast<const int16_t*>(p);
    case DType::Int32:
      return *reinterpret_cast<const int32_t*>(p);
    case DType::Int64:
      return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case DType::Float16:
      return half_bits_to_float(*reinterpret_cast<const uint16_t*>(p));
    case DType::BFloat16:
      return bfloat16_bits_to_float(*reinterpret_cast<const uint16_t*>(p));
    case DType::Float32:
      return *reinterpret_cast<const float*>(p);
    case DType::Float64:
      return *reinterpret_cast<const double*>(p);
    case DType::Float8E4M3FN:
      return float8_e4m3fn_bits_to_float(*reinterpret_cast<const uint8_t*>(p));
    case DType::Float8E5M2:
      return float8_e5m2_bits_to_float(*reinterpret_cast<const uint8_t*>(p));
    case DType::Complex64:
    case DType::Complex128:
      // A complex element is no double: tests read view_as_real() of complex tensors.
      ADD_FAILURE() << "read_element: complex elements are read through view_as_real()";
      return std::nan("");
  }
  return 0;
}

void write_element(char* p, DType dtype, double v) {
  switch (dtype) {
    case DType::Bool:
      *reinterpret_cast<bool*>(p) = v != 0;
      break;
    case DType::UInt8:
      *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
      break;
    case DType::Int8:  // through int64, so that out-of-range values wrap instead of being UB
      *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(static_cast<int64_t>(v));
      break;
    case DType::Int16:
      *reinterpret_cast<int16_t*>(p) = static_cast<int16_t>(static_cast<int64_t>(v));
      break;
    case DType::Int32:
      *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v);
      break;
    case DType::Int64:
      *reinterpret_cast<int64_t*>(p) = static_cast<int64_t>(v);
      break;
    case DType::Float16:
      *reinterpret_cast<uint16_t*>(p) = float_to_half_bits(static_cast<float>(v));
      break;
    case DType::BFloat16:
      *reinterpret_cast<uint16_t*>(p) = float_to_bfloat16_bits(static_cast<float>(v));
      break;
    case DType::Float32:
      *reinterpret_cast<float*>(p) = static_cast<float>(v);
      break;
    case DType::Float64:
      *reinterpret_cast<double*>(p) = v;
      break;
    case DType::Float8E4M3FN:
      *reinterpret_cast<uint8_t*>(p) = float_to_float8_e4m3fn_bits(static_cast<float>(v));
      break;
    case DType::Float8E5M2:
      *reinterpret_cast<uint8_t*>(p) = float_to_float8_e5m2_bits(static_cast<float>(v));
      break;
    case DType::Complex64:
    case DType::Complex128:
      ADD_FAILURE() << "write_element: complex elements are written through view_as_real()";
      break;
  }
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out;
  const int64_t n = t.numel();
  out.reserve(static_cast<size_t>(n));
  const int64_t nd = t.dim();
  std::vector<int64_t> index(static_cast<size_t>(nd), 0);
  const char* base = static_cast<const char*>(t.storage()->data());
  const int64_t es = static_cast<int64_t>(t.element_size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = t.offset();
    for (int64_t d = 0; d < nd; ++d) off += index[d] * t.strides()[d];
    out.push_back(read_element(base + off * es, t.dtype()));
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Tensor tensor_of(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  char* p = static_cast<char*>(t.data_ptr());
  for (size_t i = 0; i < values.size(); ++i)
    write_element(p + i * t.element_size(), dtype, values[i]);
  return t;
}

Tensor random_tensor(const Shape& shape, DType dtype, double low, double high) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  std::uniform_real_distribution<double> real(low, high);
  for (double& x : v) {
    if (dtype == DType::Bool)
      x = (rng()() & 1) ? 1 : 0;
    else if (is_floating(dtype))
      x = real(rng());
    else
      x = std::floor(real(rng()));
  }
  return tensor_of(v, shape, dtype);
}

Tensor transposed_copy(const Tensor& t) {
  if (t.dim() < 2) return t;
  Shape s = t.shape();
  std::swap(s[0], s[1]);
  Tensor u = Tensor::empty(s, t.dtype());
  Tensor view = u.transpose(0, 1);
  // Fill by hand through the view's strides.
  const std::vector<double> values = to_doubles(t);
  std::vector<int64_t> index(static_cast<size_t>(t.dim()), 0);
  char* base = static_cast<char*>(u.storage()->data());
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t off = view.offset();
    for (int64_t d = 0; d < view.dim(); ++d) off += index[d] * view.strides()[d];
    write_element(base + off * static_cast<int64_t>(u.element_size()), u.dtype(), values[i]);
    for (int64_t d = view.dim() - 1; d >= 0; --d) {
      if (++index[d] < view.shape()[d]) break;
      index[d] = 0;
    }
  }
  return view;
}

::testing::AssertionResult all_close(const std::vector<double>& actual,
                                     const std::vector<double>& expected, double tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) && std::isnan(a)) continue;
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << e;
    }
    if (std::isinf(e) || std::isinf(a)) {
      if (a == e) continue;
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << e;
    }
    if (std::fabs(a - e) > tol * std::max(1.0, std::fabs(e)))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " vs expected " << e << " (tol " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rcuda::test
