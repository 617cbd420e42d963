// What both solvers (cpu/solver_lapack.cpp, cuda/solver_cusolver.cpp) read off their buffers
// (Note [Solver layout] in rcuda/backend/solver.h): the 32-bit sizes LAPACK and cuSOLVER take,
// a batch's sizes, and the dtype dispatch.
#pragma once

#include <cstdint>

#include "rcuda/core/error.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::backend {

// LAPACK's and cuSOLVER's integers are 32-bit: a matrix side past that is refused rather than
// truncated. `library` names the one refusing.
inline int solver_int(int64_t v, const char* what, const char* library) {
  RCUDA_CHECK(v >= 0 && v <= INT32_MAX, ValueError, "linalg: ", what, " = ", v, " is more than ",
              library, "'s 32-bit sizes allow");
  return static_cast<int>(v);
}

// Sizes of a [B, cols, rows] buffer.
struct SolverBatch {
  int64_t count;
  int rows, cols;
  int64_t stride;  // elements per matrix
};
inline SolverBatch solver_batch(const Tensor& a, const char* library) {
  RCUDA_CHECK(a.dim() == 3 && a.is_contiguous(), InternalError,
              "solver: expected a contiguous [batch, cols, rows] buffer");
  return {a.shape()[0], solver_int(a.shape()[2], "rows", library),
          solver_int(a.shape()[1], "cols", library), a.shape()[1] * a.shape()[2]};
}

// f(float{}) or f(double{}) by a's dtype: the solvers' two.
template <typename F>
void for_solver_dtype(const Tensor& a, F&& f) {
  if (a.dtype() == DType::Float32) {
    f(float{});
  } else {
    RCUDA_CHECK(a.dtype() == DType::Float64, InternalError, "solver: float32 or float64 only");
    f(double{});
  }
}

}  // namespace rcuda::backend
