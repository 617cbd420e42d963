// sparse_mm (Note [Sparse matrix product] in rcuda/backend/backend.h): each stored entry adds
// its value times one row of `dense` to one row of `out`. Threads split the output's columns, so
// no two write the same element and each element sums its terms in entry order (deterministic).
#include <algorithm>
#include <cstring>

#include "cpu_backend.h"
#include "loops.h"
#include "rcuda/core/error.h"

namespace rcuda::cpu {
namespace {

template <typename T>
void sparse_mm_loop(const Tensor& out, const Tensor& rows, const Tensor& cols, const Tensor& values,
                    const Tensor& dense, bool transpose) {
  const int64_t nnz = values.numel(), k = out.size(1), out_rows = out.size(0);
  const int64_t* r = rows.data<int64_t>();
  const int64_t* c = cols.data<int64_t>();
  const T* v = values.data<T>();
  const T* d = dense.data<T>();
  T* y = out.data<T>();
  std::memset(y, 0, sizeof(T) * static_cast<size_t>(out_rows * k));
  // Units are columns; the cost of one is a pass over the entries.
  parallel_units(k, nnz, [&](int64_t first, int64_t last) {
    for (int64_t i = 0; i < nnz; ++i) {
      const int64_t to = transpose ? c[i] : r[i], from = transpose ? r[i] : c[i];
      const T value = v[i];
      T* y_row = y + to * k;
      const T* d_row = d + from * k;
      for (int64_t j = first; j < last; ++j) y_row[j] += value * d_row[j];
    }
  });
}

}  // namespace

void CpuBackend::sparse_mm(const Tensor& out, const Tensor& rows, const Tensor& cols,
                           const Tensor& values, const Tensor& dense, bool transpose) {
  switch (out.dtype()) {
    case DType::Float32:
      return sparse_mm_loop<float>(out, rows, cols, values, dense, transpose);
    case DType::Float64:
      return sparse_mm_loop<double>(out, rows, cols, values, dense, transpose);
    default:
      throw InternalError(detail::concat("sparse_mm: the CPU primitive got ",
                                         dtype_name(out.dtype()), "; ops pass float32 or float64"));
  }
}

}  // namespace rcuda::cpu
