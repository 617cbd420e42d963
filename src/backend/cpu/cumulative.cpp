// cumulative and cumulative_backward: one row per loop iteration, rows split over threads, with
// the formulas the CUDA backend shares (backend/row_scan.h).
#include "backend/row_scan.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {

void CpuBackend::cumulative(CumulativeOp op, const Tensor& out, const Tensor& indices,
                            const Tensor& in) {
  const int64_t rows = in.shape()[0], n = in.shape()[1];
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.data<T>();
    T* y = out.data<T>();
    int64_t* idx = indices.defined() ? indices.data<int64_t>() : nullptr;
    parallel_units(rows, n, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r)
        backend::scan_row<T>(op, y + r * n, idx ? idx + r * n : nullptr, x + r * n, n);
    });
  });
}

void CpuBackend::cumulative_backward(CumulativeOp op, const Tensor& grad_in, const Tensor& grad_out,
                                     const Tensor& in, const Tensor& out) {
  const int64_t rows = in.shape()[0], n = in.shape()[1];
  dispatch_floating(in.dtype(), "cumulative_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *g = grad_out.data<T>(), *x = in.data<T>(), *y = out.data<T>();
    T* gi = grad_in.data<T>();
    parallel_units(rows, n, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r)
        backend::scan_row_backward<T>(op, gi + r * n, g + r * n, x + r * n, y + r * n, n);
    });
  });
}

}  // namespace rcuda::cpu
