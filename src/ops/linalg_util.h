// Shared plumbing of the factorisation ops (linalg_lu.cpp, linalg_qr.cpp, linalg_spectral.cpp,
// linalg_lstsq.cpp): argument checks, the solvers' column-major buffers, and error checks.
//
// Note [Solver errors]
// LAPACK and cuSOLVER report a singular matrix, a matrix that is not positive-definite or an
// iteration that did not converge through `info`, one int per matrix. Reading it on the host
// waits for the GPU, so only the ops whose result would otherwise be silently wrong read it:
// solve, inv (singular), cholesky (not positive-definite), svd, eigh and what builds on them
// (no convergence), as torch's non-_ex functions do. det, slogdet, lu_factor and lu return
// what the factorisation gives (a zero pivot is a valid answer there) and never wait; neither
// do qr and householder_product, whose LAPACK routines cannot fail on valid arguments.
#pragma once

#include <initializer_list>
#include <string>

#include "rcuda/backend/solver.h"
#include "rcuda/ops/linalg_factor.h"

#include "rcuda/tensor/tensor.h"

namespace rcuda::ops::linalg {

// DTypeError unless A is float32 or float64; ShapeError unless it has >= 2 dims; `square` adds
// the check that the last two sizes agree.
void check_matrix(const char* op, const char* arg, const Tensor& A, bool square = false);
Shape batch_shape(const Tensor& A);  // all but the last two dims
int64_t count(const Shape& batch);

// A [..., m, n] as the solvers' [B, n, m] buffer (Note [Solver layout]): always a new copy,
// which the solver may overwrite.
Tensor column_major(const Tensor& A);
// A solver buffer [B, cols, rows] as the tensor [batch..., rows, cols] (a transposed view).
Tensor from_column_major(const Tensor& buffer, const Shape& batch);

Tensor info_buffer(int64_t count, Device device);  // int32 zeros
// Throws ValueError `op: <message>` for the first matrix whose info is not zero, with torch's
// "(Batch element i): " prefix when A is batched. `what(info)` words the failure.
void check_info(const char* op, const Tensor& info, bool batched,
                std::string (*what)(int32_t info));

double eps(DType dtype);  // machine epsilon of float32 / float64

// The batch dims followed by `dims` (a matrix's [rows, cols], a vector's [n]).
Shape with_dims(Shape batch, std::initializer_list<int64_t> dims);
// The identity's first `cols` columns, [batch..., rows, cols], contiguous, of like's dtype and
// device.
Tensor batched_eye(const Shape& batch, int64_t rows, int64_t cols, const Tensor& like);

}  // namespace rcuda::ops::linalg
