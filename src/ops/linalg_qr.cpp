// Triangular factorisations: cholesky (potrf), qr (geqrf + orgqr), geqrf itself and
// householder_product (orgqr) (rcuda/ops/linalg_factor.h).
#include <algorithm>
#include <string>

#include "linalg_util.h"
#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/linalg_factor.h"

namespace rcuda::ops {
namespace {

using linalg::batched_eye;
using linalg::column_major;
using linalg::count;
using linalg::from_column_major;
using linalg::with_dims;

std::string not_positive_definite(int32_t info) {
  return detail::concat(
      "The factorization could not be completed because the input is not positive-definite "
      "(the leading minor of order ",
      info, " is not positive-definite).");
}

}  // namespace

Tensor linalg_cholesky(const Tensor& A, bool upper) {
  const char* op = "linalg.cholesky";
  linalg::check_matrix(op, "A", A, /*square=*/true);
  const Shape batch = linalg::batch_shape(A);
  const int64_t n = A.shape()[A.dim() - 1];
  if (count(batch) == 0 || n == 0) return zeros(A.shape(), {A.dtype(), A.device()});
  Tensor buffer = column_major(A);
  Tensor info = linalg::info_buffer(count(batch), A.device());
  solver_for(A.device()).cholesky(buffer, info);
  linalg::check_info(op, info, !batch.empty(), not_positive_definite);
  const Tensor L = linalg::tril(from_column_major(buffer, batch));
  return upper ? contiguous(linalg::mT(L)) : L;
}

QrResult linalg_qr(const Tensor& A, const std::string& mode) {
  const char* op = "linalg.qr";
  linalg::check_matrix(op, "A", A);
  RCUDA_CHECK(mode == "reduced" || mode == "complete" || mode == "r", ValueError, op,
              ": qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const Shape batch = linalg::batch_shape(A);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1], k = std::min(m, n);
  const bool complete = mode == "complete";
  const int64_t r_rows = complete ? m : k;
  if (count(batch) == 0 || k == 0) {
    const Tensor R = zeros(with_dims(batch, {r_rows, n}), {A.dtype(), A.device()});
    if (mode == "r") return {empty({0}, {A.dtype(), A.device()}), R};
    return {batched_eye(batch, m, complete ? m : k, A), R};
  }
  Tensor buffer = column_major(A);  // [B, n, m]
  Tensor tau = empty({count(batch), k}, {A.dtype(), A.device()});
  Solver& solver = solver_for(A.device());
  solver.qr_factor(buffer, tau);
  const Tensor R = linalg::triu(from_column_major(buffer, batch).narrow(-2, 0, r_rows));
  if (mode == "r") return {empty({0}, {A.dtype(), A.device()}), R};
  const int64_t q_cols = complete ? m : k;
  Tensor q = zeros({count(batch), q_cols, m}, {A.dtype(), A.device()});
  const int64_t copied = std::min(q_cols, n);
  copy_(q.narrow(1, 0, copied), buffer.narrow(1, 0, copied));
  solver.householder_product(q, tau);
  return {from_column_major(q, batch), R};
}

GeqrfResult geqrf(const Tensor& A) {
  linalg::check_matrix("geqrf", "input", A);
  const Shape batch = linalg::batch_shape(A);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1], k = std::min(m, n);
  if (count(batch) == 0 || k == 0) {
    return {contiguous(A), zeros(with_dims(batch, {k}), {A.dtype(), A.device()})};
  }
  Tensor buffer = column_major(A);  // [B, n, m]
  Tensor tau = empty({count(batch), k}, {A.dtype(), A.device()});
  solver_for(A.device()).qr_factor(buffer, tau);
  return {from_column_major(buffer, batch), tau.view(with_dims(batch, {k}))};
}

Tensor linalg_householder_product(const Tensor& A, const Tensor& tau) {
  const char* op = "linalg.householder_product";
  linalg::check_matrix(op, "input", A);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1];
  RCUDA_CHECK(m >= n, ShapeError, op,
              ": input.shape[-2] must be greater than or equal to input.shape[-1], got shape ",
              shape_str(A.shape()));
  RCUDA_CHECK(tau.dtype() == A.dtype(), DTypeError, op, ": tau dtype must be input's dtype ",
              dtype_name(A.dtype()), ", got ", dtype_name(tau.dtype()));
  check_same_device(op, {A, tau});
  const Shape batch = linalg::batch_shape(A);
  RCUDA_CHECK(tau.dim() == A.dim() - 1, ShapeError, op,
              ": tau must have one dim less than input, got shapes ", shape_str(tau.shape()),
              " and ", shape_str(A.shape()));
  const int64_t k = tau.shape()[tau.dim() - 1];
  RCUDA_CHECK(k <= n, ShapeError, op,
              ": input.shape[-1] must be greater than or equal to tau.shape[-1], got ", n, " < ",
              k);
  RCUDA_CHECK(Shape(tau.shape().begin(), tau.shape().end() - 1) == batch, ShapeError, op,
              ": Expected batch dimensions of tau to be equal to input.shape[:-2], got tau of "
              "shape ",
              shape_str(tau.shape()), " and input of shape ", shape_str(A.shape()));
  if (count(batch) == 0 || n == 0) return zeros(A.shape(), {A.dtype(), A.device()});
  Tensor buffer = column_major(A);
  const Tensor tau_buffer = clone(tau).view({count(batch), k});
  solver_for(A.device()).householder_product(buffer, tau_buffer);
  return from_column_major(buffer, batch);
}

}  // namespace rcuda::ops
