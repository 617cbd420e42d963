// Spectral ops: svd, svdvals (gesdd / gesvd), eigh, eigvalsh (syevd) and what builds on them:
// pinv, matrix_rank, cond, lstsq (rcuda/ops/linalg_factor.h).
#include <algorithm>
#include <string>

#include "linalg_util.h"
#include "ops_util.h"
#include "rcuda/ops/complex.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/linalg.h"
#include "rcuda/ops/linalg_factor.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {
namespace {

using linalg::batched_eye;
using linalg::column_major;
using linalg::count;
using linalg::from_column_major;
using linalg::mT;
using linalg::with_dims;

std::string svd_no_convergence(int32_t info) {
  return detail::concat(
      "The algorithm failed to converge because the input matrix is ill-conditioned or has too "
      "many repeated singular values (error code: ",
      info, ").");
}
std::string eigh_no_convergence(int32_t info) {
  return detail::concat(
      "The algorithm failed to converge because the input matrix is ill-conditioned or has too "
      "many repeated eigenvalues (error code: ",
      info, ").");
}

// The SVD of A [..., m, n] with m >= n, in the solver's layout (Note [Solver layout]).
SvdResult svd_tall(const char* op, const Tensor& A, SvdJob job) {
  const Shape batch = linalg::batch_shape(A);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1];
  const int64_t u_cols = job == SvdJob::Full ? m : n;
  const TensorOptions options(A.dtype(), A.device());
  Tensor buffer = column_major(A);
  Tensor s = empty({count(batch), n}, options);
  Tensor u, vt;
  if (job != SvdJob::ValuesOnly) {
    u = empty({count(batch), u_cols, m}, options);
    vt = empty({count(batch), n, n}, options);
  }
  Tensor info = linalg::info_buffer(count(batch), A.device());
  solver_for(A.device()).svd(buffer, s, u, vt, job, info);
  linalg::check_info(op, info, !batch.empty(), svd_no_convergence);
  const Tensor S = s.view(with_dims(batch, {n}));
  if (job == SvdJob::ValuesOnly) return {Tensor(), S, Tensor()};
  return {from_column_major(u, batch), S, from_column_major(vt, batch)};
}

// Any shape: a wide A is the transpose of a tall one, A^T = U' S Vh' so A = Vh'^T S U'^T.
SvdResult svd_any(const char* op, const Tensor& A, SvdJob job) {
  linalg::check_matrix(op, "A", A);
  const Shape batch = linalg::batch_shape(A);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1], k = std::min(m, n);
  if (count(batch) == 0 || k == 0) {
    const Tensor S = zeros(with_dims(batch, {k}), {A.dtype(), A.device()});
    if (job == SvdJob::ValuesOnly) return {Tensor(), S, Tensor()};
    const bool full = job == SvdJob::Full;
    return {batched_eye(batch, m, full ? m : k, A), S, batched_eye(batch, full ? n : k, n, A)};
  }
  if (m >= n) return svd_tall(op, A, job);
  SvdResult t = svd_tall(op, mT(A), job);
  if (job == SvdJob::ValuesOnly) return t;
  return {mT(t.Vh), t.S, mT(t.U)};
}

// Singular values at or below the cutoff count as zero: max(atol, rtol * largest), with
// torch's default rtol (linalg_factor.h). `largest` [...] keeps the batch shape.
Tensor cutoff(const Tensor& largest, Tolerances tol, int64_t m, int64_t n, DType dtype) {
  const double atol = tol.atol.value_or(0.0);
  const double rtol = tol.rtol ? *tol.rtol
                      : (tol.atol && *tol.atol > 0)
                          ? 0.0
                          : linalg::eps(dtype) * static_cast<double>(std::max(m, n));
  return maximum(mul(largest, Scalar(rtol)), full_like(largest, Scalar(atol)));
}

// 1/s where s > cutoff, else 0.
Tensor inverse_above(const Tensor& s, const Tensor& cut) {
  const Tensor keep = gt(s, cut);
  return where(keep, div(ones_like(s), where(keep, s, Scalar(1))), Scalar(0));
}

}  // namespace

SvdResult linalg_svd(const Tensor& A, bool full_matrices) {
  return svd_any("linalg.svd", A, full_matrices ? SvdJob::Full : SvdJob::Reduced);
}

Tensor linalg_svdvals(const Tensor& A) {
  return svd_any("linalg.svdvals", A, SvdJob::ValuesOnly).S;
}

namespace {
EighResult eigh_impl(const char* op, const Tensor& A, const std::string& uplo, bool vectors) {
  linalg::check_matrix(op, "A", A, /*square=*/true);
  RCUDA_CHECK(uplo == "L" || uplo == "U", ValueError, op,
              ": Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  const Shape batch = linalg::batch_shape(A);
  const int64_t n = A.shape()[A.dim() - 1];
  if (count(batch) == 0 || n == 0)
    return {zeros(with_dims(batch, {n}), {A.dtype(), A.device()}),
            vectors ? batched_eye(batch, n, n, A) : Tensor()};
  Tensor buffer = column_major(A);
  Tensor w = empty({count(batch), n}, {A.dtype(), A.device()});
  Tensor info = linalg::info_buffer(count(batch), A.device());
  solver_for(A.device()).eigh(buffer, w, vectors, uplo == "L", info);
  linalg::check_info(op, info, !batch.empty(), eigh_no_convergence);
  return {w.view(with_dims(batch, {n})), vectors ? from_column_major(buffer, batch) : Tensor()};
}
}  // namespace

EighResult linalg_eigh(const Tensor& A, const std::string& uplo) {
  return eigh_impl("linalg.eigh", A, uplo, true);
}

Tensor linalg_eigvalsh(const Tensor& A, const std::string& uplo) {
  return eigh_impl("linalg.eigvalsh", A, uplo, false).eigenvalues;
}

namespace {
std::string eig_no_convergence(int32_t info) {
  return detail::concat(
      "The QR algorithm failed to compute all the eigenvalues (error code: ", info, ").");
}

// Note [General eigenproblems]
// LAPACK's geev runs on the host for every device, as PyTorch's linalg.eig does (its CUDA path
// calls MAGMA's geev, which also computes on the CPU): a CUDA input is copied to the host and
// the results back, so the op waits for the device. cuSOLVER's Xgeev (CUDA 12.6 and later)
// would keep it on the GPU; docs/complex.md says why it is left out. Real input gives
// eigenvalues in the complex type of its width; conjugate pairs come out in LAPACK's order,
// the one with the positive imaginary part first.
EigResult eig_impl(const char* op, const Tensor& A, bool vectors) {
  const DType in = A.dtype();
  RCUDA_CHECK(in == DType::Float32 || in == DType::Float64 || is_complex(in), DTypeError, op,
              ": Expected a float32, float64, complex64 or complex128 tensor as A, got ",
              dtype_name(in));
  RCUDA_CHECK(!A.requires_grad(), ValueError, op,
              ": rcuda records no gradient for the general eigendecomposition; detach() A (the "
              "symmetric linalg_eigh has one)");
  const Tensor real_like = is_complex(in) ? view_as_real(A).select(-1, 0) : A;
  linalg::check_matrix(op, "A", real_like, /*square=*/true);
  const DType out = is_complex(in) ? in : complex_dtype_for(in);
  const Shape batch = linalg::batch_shape(A);
  const int64_t n = A.shape()[A.dim() - 1];
  if (count(batch) == 0 || n == 0)
    return {zeros(with_dims(batch, {n}), {out, A.device()}),
            vectors ? to(batched_eye(batch, n, n, real_like), out) : Tensor()};
  const Device host;
  const Tensor on_host = to(A, host);
  // geev may not return on NaN or infinity: refused first, with torch's message.
  const Tensor values = is_complex(in) ? view_as_real(on_host) : on_host;
  const Tensor gap = sub(values, values);  // NaN exactly where a value is not finite
  RCUDA_CHECK(!item(any(ne(gap, gap))).to_bool(), ValueError, op,
              ": The algorithm failed to converge because the input matrix contained non-finite "
              "values.");
  Tensor buffer = column_major(on_host);
  Tensor w = empty({count(batch), n}, {out, host});
  Tensor v = vectors ? empty({count(batch), n, n}, {out, host}) : Tensor();
  Tensor info = linalg::info_buffer(count(batch), host);
  solver_for(host).eig(buffer, w, v, vectors, info);
  linalg::check_info(op, info, !batch.empty(), eig_no_convergence);
  return {to(w.view(with_dims(batch, {n})), A.device()),
          vectors ? to(contiguous(from_column_major(v, batch)), A.device()) : Tensor()};
}
}  // namespace

EigResult linalg_eig(const Tensor& A) { return eig_impl("linalg.eig", A, true); }

Tensor linalg_eigvals(const Tensor& A) { return eig_impl("linalg.eigvals", A, false).eigenvalues; }

Tensor linalg_pinv(const Tensor& A, Tolerances tol, bool hermitian) {
  const char* op = "linalg.pinv";
  linalg::check_matrix(op, "A", A, /*square=*/hermitian);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1];
  if (A.numel() == 0)
    return zeros(with_dims(linalg::batch_shape(A), {n, m}), {A.dtype(), A.device()});
  if (hermitian) {
    const EighResult e = eigh_impl(op, A, "L", true);
    const Tensor magnitude = abs(e.eigenvalues);
    const Tensor cut = cutoff(std::get<0>(max(magnitude, -1, true)), tol, m, n, A.dtype());
    const Tensor inverse = mul(inverse_above(magnitude, cut), ops::sign(e.eigenvalues));
    return matmul(mul(e.eigenvectors, inverse.unsqueeze(-2)), mT(e.eigenvectors));
  }
  const SvdResult s = svd_any(op, A, SvdJob::Reduced);
  const Tensor cut = cutoff(s.S.narrow(-1, 0, 1), tol, m, n, A.dtype());
  return matmul(mul(mT(s.Vh), inverse_above(s.S, cut).unsqueeze(-2)), mT(s.U));
}

Tensor linalg_matrix_rank(const Tensor& A, Tolerances tol, bool hermitian) {
  const char* op = "linalg.matrix_rank";
  linalg::check_matrix(op, "A", A, /*square=*/hermitian);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1];
  if (A.numel() == 0) return zeros(linalg::batch_shape(A), {DType::Int64, A.device()});
  const Tensor s = hermitian ? abs(eigh_impl(op, A, "L", false).eigenvalues)
                             : svd_any(op, A, SvdJob::ValuesOnly).S;
  const Tensor largest = std::get<0>(max(s, -1, true));
  return sum(gt(s, cutoff(largest, tol, m, n, A.dtype())), {-1}, false, DType::Int64);
}

Tensor linalg_cond(const Tensor& A, double p) {
  const char* op = "linalg.cond";
  RCUDA_CHECK(p == 2 || p == -2, ValueError, op, ": p = ", p,
              " is not one of the singular-value norms 2 and -2 (the other norms compose "
              "matrix_norm and inv)");
  const Tensor s = svd_any(op, A, SvdJob::ValuesOnly).S;
  const int64_t k = s.shape()[s.dim() - 1];
  RCUDA_CHECK(k > 0, ValueError, op, ": A has no singular values (shape ", shape_str(A.shape()),
              ")");
  const Tensor largest = s.select(-1, 0), smallest = s.select(-1, k - 1);
  return p == 2 ? div(largest, smallest) : div(smallest, largest);
}

LstsqResult linalg_lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond) {
  const char* op = "linalg.lstsq";
  linalg::check_matrix(op, "A", A);
  RCUDA_CHECK(B.dtype() == A.dtype(), DTypeError, op,
              ": Expected A and B to have the same dtype, but got A of type ",
              dtype_name(A.dtype()), " and B of type ", dtype_name(B.dtype()));
  check_same_device(op, {A, B});
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1];
  const bool vector = B.dim() == A.dim() - 1;
  const Tensor B2 = vector ? B.unsqueeze(-1) : B;
  RCUDA_CHECK(B2.dim() >= 2 && B2.shape()[B2.dim() - 2] == m, ShapeError, op,
              ": A and B must have the same number of rows, got A of shape ", shape_str(A.shape()),
              " and B of shape ", shape_str(B.shape()));
  const int64_t k = B2.shape()[B2.dim() - 1];
  const Shape batch = broadcast_shapes(linalg::batch_shape(A), linalg::batch_shape(B2), op);
  const Tensor a = A.expand(with_dims(batch, {m, n}));
  const Tensor b = B2.expand(with_dims(batch, {m, k}));
  const int64_t r = std::min(m, n);
  const TensorOptions options(A.dtype(), A.device());
  if (count(batch) == 0 || r == 0) {
    const Tensor X = zeros(with_dims(batch, {n, k}), options);
    return {vector ? X.squeeze(-1) : X, empty({0}, options),
            zeros(batch, {DType::Int64, A.device()}), zeros(with_dims(batch, {r}), options)};
  }
  const SvdResult s = svd_any(op, a, SvdJob::Reduced);
  const double relative =
      rcond.value_or(linalg::eps(A.dtype()) * static_cast<double>(std::max(m, n)));
  const Tensor cut = mul(s.S.narrow(-1, 0, 1), Scalar(relative));
  const Tensor projected = mul(inverse_above(s.S, cut).unsqueeze(-1), matmul(mT(s.U), b));
  const Tensor X = matmul(mT(s.Vh), projected);
  const Tensor rank = sum(gt(s.S, cut), {-1}, false, DType::Int64);
  Tensor residuals = empty({0}, options);
  // Only when every matrix has full column rank, as torch; reading the ranks waits for the GPU.
  if (m > n && item(min(rank)).to_double() == static_cast<double>(n)) {
    const Tensor r_ = sub(matmul(a, X), b);
    residuals = sum(mul(r_, r_), {-2});
    if (vector) residuals = residuals.squeeze(-1);
  }
  return {vector ? X.squeeze(-1) : X, residuals, rank, s.S};
}

}  // namespace rcuda::ops
