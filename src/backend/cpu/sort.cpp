// sort: each row sorted with std::stable_sort on (value, position) pairs (Note [Row primitives]
// in rcuda/backend/backend.h). NaN compares above everything, so it ends last ascending and
// first descending, as torch.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(x);
  else
    return false;
}

// a < b with NaN above every number (and NaNs equal to each other).
template <typename T>
bool nan_last_less(T a, T b) {
  if (is_nan(a)) return false;
  if (is_nan(b)) return true;
  return a < b;
}

template <typename T>
void sort_rows(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) {
  const int64_t rows = in.shape()[0], n = in.shape()[1];
  const T* x = in.data<T>();
  T* v = values.data<T>();
  int64_t* idx = indices.data<int64_t>();
  parallel_units(rows, n * 8, [&](int64_t first, int64_t last) {
    std::vector<int64_t> order(n);
    for (int64_t r = first; r < last; ++r) {
      const T* row = x + r * n;
      std::iota(order.begin(), order.end(), int64_t{0});
      if (descending)
        std::stable_sort(order.begin(), order.end(),
                         [row](int64_t a, int64_t b) { return nan_last_less(row[b], row[a]); });
      else
        std::stable_sort(order.begin(), order.end(),
                         [row](int64_t a, int64_t b) { return nan_last_less(row[a], row[b]); });
      for (int64_t j = 0; j < n; ++j) {
        v[r * n + j] = row[order[j]];
        idx[r * n + j] = order[j];
      }
    }
  });
}

}  // namespace

void CpuBackend::sort(const Tensor& values, const Tensor& indices, const Tensor& in,
                      bool descending) {
  switch (in.dtype()) {
    case DType::Float32:
      return sort_rows<float>(values, indices, in, descending);
    case DType::Float64:
      return sort_rows<double>(values, indices, in, descending);
    case DType::Int32:
      return sort_rows<int32_t>(values, indices, in, descending);
    case DType::Int64:
      return sort_rows<int64_t>(values, indices, in, descending);
    case DType::Int16:
      return sort_rows<int16_t>(values, indices, in, descending);
    case DType::Int8:
      return sort_rows<int8_t>(values, indices, in, descending);
    case DType::UInt8:
      return sort_rows<uint8_t>(values, indices, in, descending);
    default:
      throw DTypeError(std::string("sort: the backend sorts float32, float64, int64, int32, "
                                   "int16, int8 and uint8, got ") +
                       dtype_name(in.dtype()));
  }
}

}  // namespace rcuda::cpu
