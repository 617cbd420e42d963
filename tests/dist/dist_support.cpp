// Tensor helpers and the shared group of the process-group tests (dist_support.h).
#include "dist/dist_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rcuda::test::dist {

Tensor make_tensor(const std::vector<double>& v, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype) {
      case DType::Bool:
        t.data<bool>()[i] = v[i] != 0;
        break;
      case DType::UInt8:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
        break;
      case DType::Int8:
        t.data<int8_t>()[i] = static_cast<int8_t>(v[i]);
        break;
      case DType::Int16:
        t.data<int16_t>()[i] = static_cast<int16_t>(v[i]);
        break;
      case DType::Int32:
        t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
        break;
      case DType::Int64:
        t.data<int64_t>()[i] = static_cast<int64_t>(v[i]);
        break;
      case DType::Float16:
        t.data<uint16_t>()[i] = float_to_half_bits(static_cast<float>(v[i]));
        break;
      case DType::BFloat16:
        t.data<uint16_t>()[i] = float_to_bfloat16_bits(static_cast<float>(v[i]));
        break;
      case DType::Float32:
        t.data<float>()[i] = static_cast<float>(v[i]);
        break;
      case DType::Float64:
        t.data<double>()[i] = v[i];
        break;
      default:
        ADD_FAILURE() << "make_tensor: " << dtype_name(dtype);
    }
  }
  return t;
}

std::vector<double> read_tensor(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype()) {
      case DType::Bool:
        v[i] = t.data<bool>()[i];
        break;
      case DType::UInt8:
        v[i] = t.data<uint8_t>()[i];
        break;
      case DType::Int8:
        v[i] = t.data<int8_t>()[i];
        break;
      case DType::Int16:
        v[i] = t.data<int16_t>()[i];
        break;
      case DType::Int32:
        v[i] = t.data<int32_t>()[i];
        break;
      case DType::Int64:
        v[i] = static_cast<double>(t.data<int64_t>()[i]);
        break;
      case DType::Float16:
        v[i] = half_bits_to_float(t.data<uint16_t>()[i]);
        break;
      case DType::BFloat16:
        v[i] = bfloat16_bits_to_float(t.data<uint16_t>()[i]);
        break;
      case DType::Float32:
        v[i] = t.data<float>()[i];
        break;
      case DType::Float64:
        v[i] = t.data<double>()[i];
        break;
      default:
        ADD_FAILURE() << "read_tensor: " << dtype_name(t.dtype());
    }
  }
  return v;
}

Tensor random_bytes(int rank, int call, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  const size_t n = static_cast<size_t>(t.numel()) * t.element_size();
  const std::vector<double> v = rank_values(rank, call, static_cast<int64_t>(n), DType::UInt8);
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  // Bool must hold 0 or 1; every other dtype takes any byte.
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<uint8_t>(dtype == DType::Bool ? static_cast<int>(v[i]) % 2
                                                     : static_cast<int>(v[i] * 6.4) & 0xff);
  return t;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  return std::vector<uint8_t>(p, p + t.numel() * t.element_size());
}

namespace {

double reduce(const std::vector<double>& values, rcuda::dist::ReduceOp op, DType dtype) {
  double r = values[0];
  for (size_t i = 1; i < values.size(); ++i) {
    if (op == rcuda::dist::ReduceOp::Max ||
        (dtype == DType::Bool && op == rcuda::dist::ReduceOp::Sum))
      r = std::max(r, values[i]);  // a bool sum is a logical or
    else if (op == rcuda::dist::ReduceOp::Min)
      r = std::min(r, values[i]);
    else
      r += values[i];
  }
  return op == rcuda::dist::ReduceOp::Avg ? r / static_cast<double>(values.size()) : r;
}

}  // namespace

std::vector<double> reference(int call, int64_t n, DType dtype, rcuda::dist::ReduceOp op,
                              int size) {
  std::vector<std::vector<double>> all;
  // Each rank's values as its tensor holds them (rounded to the dtype).
  for (int r = 0; r < size; ++r)
    all.push_back(read_tensor(make_tensor(rank_values(r, call, n, dtype), {n}, dtype)));
  std::vector<double> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<double> column;
    for (int r = 0; r < size; ++r) column.push_back(all[r][i]);
    out[i] = reduce(column, op, dtype);
  }
  return out;
}

void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                  double tol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_LE(std::abs(actual[i] - expected[i]), tol * std::max(1.0, std::abs(expected[i])))
        << what << " element " << i << ": " << actual[i] << " vs " << expected[i];
}

std::vector<DType> all_dtypes() {
  std::vector<DType> all;
  for (int i = 0; i < kNumDTypes; ++i) all.push_back(static_cast<DType>(i));
  return all;
}

}  // namespace rcuda::test::dist
