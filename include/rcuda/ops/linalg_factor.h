// torch.linalg's factorisations and what is built on them: LAPACK on the CPU, cuSOLVER on
// CUDA (rcuda/backend/solver.h, docs/linalg.md). Every op takes a matrix or a batch of them
// (leading dims), float32 or float64 (other dtypes: DTypeError naming the op), and returns
// results in A's dtype and device, batched as A. Argument errors name the op as torch's
// Python API does ("linalg.solve: ...").
//
// Errors that depend on the values (a singular matrix for solve and inv, a matrix that is not
// positive-definite for cholesky, an SVD or eigensolver that does not converge) read LAPACK's
// info on the host, which waits for the GPU, as torch's non-_ex functions do (Note [Solver
// errors] in src/ops/linalg_util.h). Everything else queues without waiting.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda {

// Tolerances as torch: singular values at or below max(atol, rtol * largest) count as zero;
// rtol defaults to eps(dtype) * max(m, n) when neither is given, else to 0. In rcuda, not
// rcuda::ops, so that argument-dependent lookup does not make rcuda::linalg_pinv(A, tol)
// ambiguous with the no-grad op.
struct Tolerances {
  std::optional<double> atol, rtol;
};

namespace ops {

// A = P L U with partial pivoting. pivots: int32 [..., min(m, n)], 1-based (LAPACK's).
struct LuFactorResult {
  Tensor LU, pivots;
};
LuFactorResult linalg_lu_factor(const Tensor& A);
struct LuResult {
  Tensor P, L, U;
};
LuResult linalg_lu(const Tensor& A);

// X with A X = B. B is a batch of matrices [..., n, k], or of vectors [..., n] when it is 1-D or
// has A's batch shape plus one dim (as torch); batch dims broadcast. Singular A: ValueError.
Tensor linalg_solve(const Tensor& A, const Tensor& B);
Tensor linalg_inv(const Tensor& A);
// torch's _ex forms: the same results and LAPACK's info (int32 [...], 0 where it worked)
// without reading it, so they never wait for the GPU; a singular matrix gives inf/nan values.
struct ExResult {
  Tensor result, info;
};
ExResult linalg_solve_ex(const Tensor& A, const Tensor& B);
ExResult linalg_inv_ex(const Tensor& A);
Tensor linalg_det(const Tensor& A);  // 0 for a singular matrix, never an error
struct SlogdetResult {
  Tensor sign, logabsdet;
};
SlogdetResult linalg_slogdet(const Tensor& A);

// L with A = L L^T (upper: U = L^T with A = U^T U). Reads A's lower triangle.
Tensor linalg_cholesky(const Tensor& A, bool upper = false);
// mode "reduced" (Q [m, k], R [k, n]), "complete" (Q [m, m], R [m, n]) or "r" (Q empty).
struct QrResult {
  Tensor Q, R;
};
QrResult linalg_qr(const Tensor& A, const std::string& mode = "reduced");
// LAPACK's geqrf as it stands: `a` [..., m, n] holds R on and above the diagonal and the
// Householder vectors below it (unit diagonal implied), tau [..., min(m, n)] their scales; Q is
// householder_product(a, tau) for m >= n.
struct GeqrfResult {
  Tensor a, tau;
};
GeqrfResult geqrf(const Tensor& A);
// The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i in A's column i below the
// diagonal (unit on it). A [..., m, n] with m >= n; tau [..., k] with k <= n.
Tensor linalg_householder_product(const Tensor& A, const Tensor& tau);

// A = U diag(S) Vh; S descending. full_matrices: U [m, m], Vh [n, n]; else [m, k], [k, n].
struct SvdResult {
  Tensor U, S, Vh;
};
SvdResult linalg_svd(const Tensor& A, bool full_matrices = true);
Tensor linalg_svdvals(const Tensor& A);
// Symmetric A from its lower ("L") or upper ("U") triangle: ascending eigenvalues and the
// eigenvectors as columns.
struct EighResult {
  Tensor eigenvalues, eigenvectors;
};
EighResult linalg_eigh(const Tensor& A, const std::string& uplo = "L");
Tensor linalg_eigvalsh(const Tensor& A, const std::string& uplo = "L");
// A general square A (float32, float64, complex64, complex128): complex eigenvalues [..., n]
// in LAPACK's order and the right eigenvectors as columns [..., n, n] (unit 2-norm, the largest
// component real), in A's complex dtype. Computed on the CPU for every device, as PyTorch's
// (Note [General eigenproblems] in src/ops/linalg_spectral.cpp).
struct EigResult {
  Tensor eigenvalues, eigenvectors;
};
EigResult linalg_eig(const Tensor& A);
Tensor linalg_eigvals(const Tensor& A);

Tensor linalg_pinv(const Tensor& A, Tolerances tol = {}, bool hermitian = false);
Tensor linalg_matrix_rank(const Tensor& A, Tolerances tol = {}, bool hermitian = false);
// The 2-norm condition number, largest over smallest singular value (torch's p = None or 2;
// -2: smallest over largest). The other norms compose norms and inv (r/R/linalg.R).
Tensor linalg_cond(const Tensor& A, double p = 2);

// Least squares through the SVD (LAPACK's gelsd, torch's "gelsd" driver): min ||A X - B||.
// rank int64 [...]; residuals: squared residual norms [..., k] when m > n and every matrix has
// full rank, else an empty tensor, as torch.
struct LstsqResult {
  Tensor solution, residuals, rank, singular_values;
};
LstsqResult linalg_lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond = {});

// Reshapes of inv and solve (torch.linalg.tensorinv and tensorsolve).
Tensor linalg_tensorinv(const Tensor& A, int64_t ind = 2);
Tensor linalg_tensorsolve(const Tensor& A, const Tensor& B,
                          const std::optional<std::vector<int64_t>>& dims = {});

// Small tensor helpers the factorisations and their gradients share (not torch's API names:
// torch_tril and friends belong to the tensor functions).
namespace linalg {
Tensor mT(const Tensor& x);  // transpose of the last two dims (a view)
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor diag_embed(const Tensor& v);              // [..., k] -> [..., k, k]
Tensor eye_like(int64_t n, const Tensor& like);  // n x n identity in like's dtype and device
}  // namespace linalg

}  // namespace ops
}  // namespace rcuda
