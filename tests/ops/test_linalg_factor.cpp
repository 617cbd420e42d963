// Tests of the factorisations (rcuda/ops/linalg_factor.h, through the public rcuda:: entry
// points) against double-precision loops (tests/ops/linalg_reference.h): each factorisation
// rebuilds its input, its factors have their structure (triangular, orthogonal, a
// permutation), and solve, inv, det and cholesky match textbook elimination. Inputs are fresh
// random matrices, batched, non-contiguous and empty, in float32 and float64; errors are
// checked by their messages.
#include <cmath>
#include <string>
#include <vector>

#include "ops/linalg_reference.h"

namespace rcuda::test {
namespace {

double factor_tolerance(DType dtype) { return dtype == DType::Float32 ? 2e-4 : 1e-10; }

const std::vector<DType>& solver_dtypes() {
  static const std::vector<DType> d = {DType::Float32, DType::Float64};
  return d;
}

::testing::AssertionResult is_orthonormal_columns(const Mat& q, double tol) {
  return mat_near(matmul_mat(transpose_mat(q), q), identity_mat(q.cols), tol);
}

TEST(LinalgFactor, LuRebuildsAFromPermutationAndTriangles) {
  for (DType dtype : solver_dtypes())
    for (const Shape& shape : {Shape{4, 4}, Shape{2, 5, 3}, Shape{3, 2, 6}}) {
      const Tensor A = random_tensor(shape, dtype);
      const LuResult r = linalg_lu(A);
      const std::vector<Mat> a = matrices(A), p = matrices(r.P), l = matrices(r.L),
                             u = matrices(r.U);
      const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
      ASSERT_EQ(r.L.shape().back(), k);
      ASSERT_EQ(r.U.shape()[r.U.dim() - 2], k);
      for (size_t b = 0; b < a.size(); ++b) {
        EXPECT_TRUE(
            mat_near(matmul_mat(p[b], matmul_mat(l[b], u[b])), a[b], factor_tolerance(dtype)))
            << "batch " << b << " " << shape_str(shape);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < k; ++j) {
            if (j > i) {
              EXPECT_EQ(l[b].at(i, j), 0.0);
            } else if (j == i) {
              EXPECT_EQ(l[b].at(i, j), 1.0);
            } else {
              EXPECT_LE(std::fabs(l[b].at(i, j)), 1.0 + 1e-6);  // partial pivoting
            }
          }
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < i; ++j) EXPECT_EQ(u[b].at(i, j), 0.0);
        // P is a permutation matrix: one 1 in every row and column.
        for (int64_t i = 0; i < m; ++i) {
          double row = 0, col = 0;
          for (int64_t j = 0; j < m; ++j) {
            row += p[b].at(i, j);
            col += p[b].at(j, i);
          }
          EXPECT_EQ(row, 1.0);
          EXPECT_EQ(col, 1.0);
        }
      }
    }
}

TEST(LinalgFactor, LuFactorPivotsAreOneBasedRowIndices) {
  const Tensor A = random_tensor({3, 5, 4}, DType::Float64);
  const LuFactorResult f = linalg_lu_factor(A);
  EXPECT_EQ(f.pivots.dtype(), DType::Int32);
  EXPECT_EQ(f.pivots.shape(), (Shape{3, 4}));
  const std::vector<double> piv = to_doubles(f.pivots);
  for (size_t i = 0; i < piv.size(); ++i) {
    EXPECT_GE(piv[i], static_cast<double>(i % 4) + 1);  // LAPACK swaps row j with a row >= j
    EXPECT_LE(piv[i], 5.0);
  }
  // Same LU as lu(): U's upper triangle is LU's.
  const LuResult r = linalg_lu(A);
  EXPECT_TRUE(all_close(to_doubles(r.U), to_doubles(ops::linalg::triu(f.LU.narrow(-2, 0, 4))), 0));
}

TEST(LinalgFactor, SolveMatchesGaussianEliminationWithBroadcastAndVectors) {
  for (DType dtype : solver_dtypes()) {
    const double tol = factor_tolerance(dtype);
    // Matrix right-hand sides, batch dims broadcast: [2, 1, 4, 4] with [3, 4, 2].
    const Tensor A = well_conditioned({2, 1, 4, 4}, dtype);
    const Tensor B = random_tensor({3, 4, 2}, dtype);
    const Tensor X = linalg_solve(A, B);
    ASSERT_EQ(X.shape(), (Shape{2, 3, 4, 2}));
    const std::vector<Mat> a = matrices(A), b = matrices(B), x = matrices(X);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_TRUE(mat_near(x[i * 3 + j], gauss_solve(a[i], b[j]).second, tol));
    // A vector right-hand side, and a batch of them with A's batch shape.
    const Tensor A2 = well_conditioned({3, 5, 5}, dtype);
    const Tensor v = random_tensor({3, 5}, dtype);
    const Tensor y = linalg_solve(A2, v);
    ASSERT_EQ(y.shape(), (Shape{3, 5}));
    const std::vector<Mat> a2 = matrices(A2), ym = matrices(y.unsqueeze(-1)),
                           vm = matrices(v.unsqueeze(-1));
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(mat_near(ym[i], gauss_solve(a2[i], vm[i]).second, tol));
    const Tensor w = random_tensor({5}, dtype);
    EXPECT_EQ(linalg_solve(A2, w).shape(), (Shape{3, 5}));
  }
}

TEST(LinalgFactor, SolveAndInvReadNonContiguousInputs) {
  const Tensor A = transposed_copy(well_conditioned({5, 5}, DType::Float64));
  const Tensor B = transposed_copy(random_tensor({5, 3}, DType::Float64));
  ASSERT_FALSE(B.is_contiguous());
  ASSERT_FALSE(A.is_contiguous());
  const Mat x = matrices(linalg_solve(A, B))[0];
  EXPECT_TRUE(mat_near(x, gauss_solve(matrices(A)[0], matrices(B)[0]).second, 1e-10));
  const Mat inv = matrices(linalg_inv(A))[0];
  EXPECT_TRUE(mat_near(inv, gauss_solve(matrices(A)[0], identity_mat(5)).second, 1e-10));
  // The input is left as it was (the solvers work on copies).
  EXPECT_TRUE(all_close(to_doubles(A), to_doubles(A.transpose(0, 1).transpose(0, 1)), 0));
}

TEST(LinalgFactor, InvTimesAIsTheIdentity) {
  for (DType dtype : solver_dtypes()) {
    const Tensor A = well_conditioned({3, 6, 6}, dtype);
    const std::vector<Mat> a = matrices(A), inv = matrices(linalg_inv(A));
    for (size_t b = 0; b < a.size(); ++b) {
      EXPECT_TRUE(mat_near(matmul_mat(a[b], inv[b]), identity_mat(6), factor_tolerance(dtype)));
      EXPECT_TRUE(
          mat_near(inv[b], gauss_solve(a[b], identity_mat(6)).second, factor_tolerance(dtype)));
    }
  }
}

TEST(LinalgFactor, DetAndSlogdetMatchElimination) {
  for (DType dtype : solver_dtypes()) {
    const Tensor A = random_tensor({4, 5, 5}, dtype);
    const std::vector<Mat> a = matrices(A);
    const std::vector<double> det = to_doubles(linalg_det(A));
    const SlogdetResult s = linalg_slogdet(A);
    const std::vector<double> sign = to_doubles(s.sign), logabs = to_doubles(s.logabsdet);
    for (size_t b = 0; b < a.size(); ++b) {
      const double expected = gauss_solve(a[b], zeros_mat(5, 0)).first;
      EXPECT_NEAR(det[b], expected, factor_tolerance(dtype) * std::max(1.0, std::fabs(expected)));
      EXPECT_EQ(sign[b], expected > 0 ? 1.0 : -1.0);
      EXPECT_NEAR(logabs[b], std::log(std::fabs(expected)), factor_tolerance(dtype) * 10);
    }
  }
  // A singular matrix: det 0, sign 0, logabsdet -inf; no error.
  const Tensor S = tensor_of({1, 2, 3, 2, 4, 6, 0, 1, 1}, {3, 3}, DType::Float64);
  EXPECT_NEAR(to_doubles(linalg_det(S))[0], 0.0, 1e-12);
  const SlogdetResult s = linalg_slogdet(tensor_of({1, 2, 2, 4}, {2, 2}, DType::Float64));
  EXPECT_EQ(to_doubles(s.sign)[0], 0.0);
  EXPECT_TRUE(std::isinf(to_doubles(s.logabsdet)[0]));
  // The empty matrix has determinant 1.
  EXPECT_EQ(to_doubles(linalg_det(Tensor::empty({0, 0}, DType::Float64)))[0], 1.0);
}

TEST(LinalgFactor, CholeskyMatchesTheTextbookLoops) {
  for (DType dtype : solver_dtypes()) {
    const Tensor A = positive_definite({3, 5, 5}, dtype);
    const std::vector<Mat> a = matrices(A), l = matrices(linalg_cholesky(A)),
                           u = matrices(linalg_cholesky(A, /*upper=*/true));
    for (size_t b = 0; b < a.size(); ++b) {
      const Mat expected = cholesky_mat(a[b]);
      EXPECT_TRUE(mat_near(l[b], expected, factor_tolerance(dtype)));
      EXPECT_TRUE(mat_near(u[b], transpose_mat(expected), factor_tolerance(dtype)));
    }
  }
}

TEST(LinalgFactor, QrModesRebuildAWithOrthonormalQ) {
  for (DType dtype : solver_dtypes())
    for (const Shape& shape : {Shape{6, 4}, Shape{2, 3, 5}, Shape{4, 4}})
      for (const std::string mode : {"reduced", "complete"}) {
        const Tensor A = random_tensor(shape, dtype);
        const QrResult r = linalg_qr(A, mode);
        const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
        const int64_t qc = mode == "complete" ? m : k;
        EXPECT_EQ(r.Q.shape().back(), qc);
        EXPECT_EQ(r.R.shape()[r.R.dim() - 2], qc);
        const std::vector<Mat> a = matrices(A), q = matrices(r.Q), rr = matrices(r.R);
        for (size_t b = 0; b < a.size(); ++b) {
          EXPECT_TRUE(is_orthonormal_columns(q[b], factor_tolerance(dtype)));
          EXPECT_TRUE(mat_near(matmul_mat(q[b], rr[b]), a[b], factor_tolerance(dtype)))
              << mode << " " << shape_str(shape);
          for (int64_t i = 0; i < rr[b].rows; ++i)
            for (int64_t j = 0; j < std::min(i, n); ++j) EXPECT_EQ(rr[b].at(i, j), 0.0);
        }
        // mode "r": the same R, no Q.
        if (mode == "reduced") {
          const QrResult only_r = linalg_qr(A, "r");
          EXPECT_EQ(only_r.Q.numel(), 0);
          EXPECT_TRUE(all_close(to_doubles(only_r.R), to_doubles(r.R), 0));
        }
      }
}

// geqrf's reflectors, multiplied out in double loops (H_1 ... H_k, H_i = I - tau_i v_i v_i^T
// with v_i below a's diagonal, unit on it), rebuild A with R from a's upper triangle.
TEST(LinalgFactor, GeqrfReflectorsAndRRebuildA) {
  for (DType dtype : solver_dtypes())
    for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 6}, Shape{4, 4}, Shape{0, 3, 2}}) {
      const Tensor A = random_tensor(shape, dtype);
      const GeqrfResult r = geqrf(A);
      const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
      EXPECT_EQ(r.a.shape(), A.shape());
      Shape tau_shape(shape.begin(), shape.end() - 2);
      tau_shape.push_back(k);
      EXPECT_EQ(r.tau.shape(), tau_shape);
      const std::vector<Mat> a = matrices(A), f = matrices(r.a);
      const std::vector<double> t = to_doubles(r.tau);
      for (size_t b = 0; b < a.size(); ++b) {
        Mat h = identity_mat(m);
        for (int64_t i = 0; i < k; ++i) {
          Mat hi = identity_mat(m);
          for (int64_t row = 0; row < m; ++row)
            for (int64_t col = 0; col < m; ++col) {
              const double vr = row < i ? 0 : row == i ? 1 : f[b].at(row, i);
              const double vc = col < i ? 0 : col == i ? 1 : f[b].at(col, i);
              hi.at(row, col) -= t[b * k + i] * vr * vc;
            }
          h = matmul_mat(h, hi);
        }
        Mat upper = zeros_mat(m, n);
        for (int64_t row = 0; row < m; ++row)
          for (int64_t col = row; col < n; ++col) upper.at(row, col) = f[b].at(row, col);
        EXPECT_TRUE(is_orthonormal_columns(h, factor_tolerance(dtype)));
        EXPECT_TRUE(mat_near(matmul_mat(h, upper), a[b], factor_tolerance(dtype)))
            << shape_str(shape);
      }
    }
  EXPECT_NE(error_message([&] { geqrf(random_tensor({3}, DType::Float64)); }).find("geqrf"),
            std::string::npos);
}

TEST(LinalgFactor, HouseholderProductMatchesExplicitReflectors) {
  const int64_t m = 5, n = 3, k = 2;
  const Tensor A = random_tensor({2, m, n}, DType::Float64);
  const Tensor tau = random_tensor({2, k}, DType::Float64, 0.5, 1.5);
  const std::vector<Mat> a = matrices(A), q = matrices(linalg_householder_product(A, tau));
  const std::vector<double> t = to_doubles(tau);
  for (size_t b = 0; b < 2; ++b) {
    Mat h = identity_mat(m);
    for (int64_t i = 0; i < k; ++i) {  // H = H_1 ... H_k, H_i = I - tau_i v_i v_i^T
      Mat v = zeros_mat(m, 1);
      v.at(i, 0) = 1;
      for (int64_t r = i + 1; r < m; ++r) v.at(r, 0) = a[b].at(r, i);
      Mat hi = identity_mat(m);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < m; ++c) hi.at(r, c) -= t[b * k + i] * v.at(r, 0) * v.at(c, 0);
      h = matmul_mat(h, hi);
    }
    Mat first = zeros_mat(m, n);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) first.at(r, c) = h.at(r, c);
    EXPECT_TRUE(mat_near(q[b], first, 1e-12));
  }
}

TEST(LinalgFactor, SvdRebuildsAWithOrthonormalFactors) {
  for (DType dtype : solver_dtypes())
    for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 6}, Shape{4, 4}})
      for (bool full : {false, true}) {
        const Tensor A = random_tensor(shape, dtype);
        const SvdResult r = linalg_svd(A, full);
        const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
        EXPECT_EQ(r.U.shape().back(), full ? m : k);
        EXPECT_EQ(r.Vh.shape()[r.Vh.dim() - 2], full ? n : k);
        const std::vector<Mat> a = matrices(A), u = matrices(r.U), vh = matrices(r.Vh),
                               s = matrices(r.S.unsqueeze(-2));
        const std::vector<Mat> sv = matrices(linalg_svdvals(A).unsqueeze(-2));
        const double tol = factor_tolerance(dtype);
        for (size_t b = 0; b < a.size(); ++b) {
          EXPECT_TRUE(is_orthonormal_columns(u[b], tol));
          EXPECT_TRUE(is_orthonormal_columns(transpose_mat(vh[b]), tol));
          Mat us = zeros_mat(m, k);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < k; ++j) us.at(i, j) = u[b].at(i, j) * s[b].at(0, j);
          Mat vk = zeros_mat(k, n);
          for (int64_t i = 0; i < k; ++i)
            for (int64_t j = 0; j < n; ++j) vk.at(i, j) = vh[b].at(i, j);
          EXPECT_TRUE(mat_near(matmul_mat(us, vk), a[b], tol)) << shape_str(shape);
          double sum_s2 = 0;
          for (int64_t j = 0; j < k; ++j) {
            EXPECT_GE(s[b].at(0, j), 0.0);
            if (j > 0) {
              EXPECT_LE(s[b].at(0, j), s[b].at(0, j - 1));
            }
            sum_s2 += s[b].at(0, j) * s[b].at(0, j);
          }
          EXPECT_NEAR(sum_s2, frobenius2(a[b]), tol * frobenius2(a[b]));
          EXPECT_TRUE(mat_near(sv[b], s[b], tol));
        }
      }
}

TEST(LinalgFactor, EighDiagonalisesEitherTriangle) {
  for (DType dtype : solver_dtypes()) {
    const Tensor S = positive_definite({2, 5, 5}, dtype);
    const Tensor noise = random_tensor({2, 5, 5}, dtype);
    const double tol = factor_tolerance(dtype) * 10;
    for (const std::string uplo : {"L", "U"}) {
      // Garbage in the triangle that is not read must not matter.
      const Tensor A = uplo == "L" ? add(ops::linalg::tril(S), ops::linalg::triu(noise, 1))
                                   : add(ops::linalg::triu(S), ops::linalg::tril(noise, -1));
      const EighResult e = linalg_eigh(A, uplo);
      const std::vector<Mat> s = matrices(S), v = matrices(e.eigenvectors),
                             w = matrices(e.eigenvalues.unsqueeze(-2)),
                             wv = matrices(linalg_eigvalsh(A, uplo).unsqueeze(-2));
      for (size_t b = 0; b < s.size(); ++b) {
        EXPECT_TRUE(is_orthonormal_columns(v[b], tol));
        Mat vl = v[b];
        for (int64_t i = 0; i < 5; ++i)
          for (int64_t j = 0; j < 5; ++j) vl.at(i, j) *= w[b].at(0, j);
        EXPECT_TRUE(mat_near(matmul_mat(s[b], v[b]), vl, tol)) << uplo;
        for (int64_t j = 1; j < 5; ++j) EXPECT_LE(w[b].at(0, j - 1), w[b].at(0, j));
        EXPECT_TRUE(mat_near(wv[b], w[b], tol));
      }
    }
  }
}

TEST(LinalgFactor, PinvSatisfiesThePenroseConditions) {
  for (const Shape& shape : {Shape{6, 4}, Shape{2, 3, 5}}) {
    const Tensor A = random_tensor(shape, DType::Float64);
    const std::vector<Mat> a = matrices(A), p = matrices(linalg_pinv(A));
    for (size_t b = 0; b < a.size(); ++b) {
      EXPECT_TRUE(mat_near(matmul_mat(a[b], matmul_mat(p[b], a[b])), a[b], 1e-10));
      EXPECT_TRUE(mat_near(matmul_mat(p[b], matmul_mat(a[b], p[b])), p[b], 1e-10));
      const Mat ap = matmul_mat(a[b], p[b]);
      EXPECT_TRUE(mat_near(ap, transpose_mat(ap), 1e-10));
    }
  }
  // hermitian = true: the same for a symmetric matrix.
  const Tensor S = positive_definite({4, 4}, DType::Float64);
  EXPECT_TRUE(mat_near(matrices(linalg_pinv(S, {}, true))[0], matrices(linalg_inv(S))[0], 1e-10));
}

TEST(LinalgFactor, MatrixRankCountsTheIndependentColumns) {
  // [6, 2] x [2, 5]: rank 2 (for random factors, almost surely).
  const Tensor A =
      matmul(random_tensor({3, 6, 2}, DType::Float64), random_tensor({3, 2, 5}, DType::Float64));
  const Tensor rank = linalg_matrix_rank(A);
  EXPECT_EQ(rank.dtype(), DType::Int64);
  EXPECT_TRUE(all_close(to_doubles(rank), {2, 2, 2}, 0));
  EXPECT_TRUE(
      all_close(to_doubles(linalg_matrix_rank(well_conditioned({4, 4}, DType::Float32))), {4}, 0));
  // A tolerance above every singular value: rank 0.
  EXPECT_TRUE(all_close(to_doubles(linalg_matrix_rank(A, {1e6, std::nullopt})), {0, 0, 0}, 0));
}

TEST(LinalgFactor, CondIsTheRatioOfExtremeSingularValues) {
  const Tensor A = random_tensor({2, 4, 4}, DType::Float64);
  const std::vector<Mat> s = matrices(linalg_svdvals(A).unsqueeze(-2));
  const std::vector<double> c = to_doubles(linalg_cond(A)), c2 = to_doubles(linalg_cond(A, -2));
  for (size_t b = 0; b < 2; ++b) {
    EXPECT_NEAR(c[b], s[b].at(0, 0) / s[b].at(0, 3), 1e-9 * c[b]);
    EXPECT_NEAR(c2[b], s[b].at(0, 3) / s[b].at(0, 0), 1e-12);
  }
  EXPECT_NE(error_message([&] { linalg_cond(A, 1); }).find("linalg.cond: p = 1"),
            std::string::npos);
}

TEST(LinalgFactor, LstsqSolvesTheNormalEquations) {
  const Tensor A = random_tensor({2, 7, 3}, DType::Float64);
  const Tensor B = random_tensor({2, 7, 2}, DType::Float64);
  const LstsqResult r = linalg_lstsq(A, B);
  ASSERT_EQ(r.solution.shape(), (Shape{2, 3, 2}));
  const std::vector<Mat> a = matrices(A), b = matrices(B), x = matrices(r.solution),
                         res = matrices(r.residuals.unsqueeze(-2));
  EXPECT_TRUE(all_close(to_doubles(r.rank), {3, 3}, 0));
  EXPECT_EQ(r.singular_values.shape(), (Shape{2, 3}));
  for (size_t i = 0; i < 2; ++i) {
    const Mat at = transpose_mat(a[i]);
    EXPECT_TRUE(
        mat_near(x[i], gauss_solve(matmul_mat(at, a[i]), matmul_mat(at, b[i])).second, 1e-9));
    Mat diff = matmul_mat(a[i], x[i]);
    for (size_t j = 0; j < diff.v.size(); ++j) diff.v[j] -= b[i].v[j];
    for (int64_t c = 0; c < 2; ++c) {
      double s = 0;
      for (int64_t row = 0; row < 7; ++row) s += diff.at(row, c) * diff.at(row, c);
      EXPECT_NEAR(res[i].at(0, c), s, 1e-9);
    }
  }
  // A rank-deficient A: no residuals, rank 1.
  const Tensor low =
      matmul(random_tensor({5, 1}, DType::Float64), random_tensor({1, 3}, DType::Float64));
  const LstsqResult d = linalg_lstsq(low, random_tensor({5, 2}, DType::Float64));
  EXPECT_EQ(d.residuals.numel(), 0);
  EXPECT_TRUE(all_close(to_doubles(d.rank), {1}, 0));
}

TEST(LinalgFactor, TensorinvAndTensorsolveReshapeInvAndSolve) {
  const Tensor A = reshape(well_conditioned({6, 6}, DType::Float64), {6, 2, 3});
  const Tensor Ainv = linalg_tensorinv(A, 1);
  EXPECT_EQ(Ainv.shape(), (Shape{2, 3, 6}));
  EXPECT_TRUE(mat_near(matrices(reshape(Ainv, {6, 6}))[0],
                       gauss_solve(matrices(reshape(A, {6, 6}))[0], identity_mat(6)).second,
                       1e-10));
  const Tensor B = random_tensor({6}, DType::Float64);
  const Tensor X = linalg_tensorsolve(A, B);
  EXPECT_EQ(X.shape(), (Shape{2, 3}));
  EXPECT_TRUE(mat_near(
      matrices(reshape(X, {6, 1}))[0],
      gauss_solve(matrices(reshape(A, {6, 6}))[0], matrices(reshape(B, {6, 1}))[0]).second, 1e-10));
  EXPECT_NE(error_message([&] {
              linalg_tensorinv(random_tensor({2, 3}, DType::Float64), 1);
            }).find("linalg.tensorinv: Expected self to satisfy the requirement"),
            std::string::npos);
}

TEST(LinalgFactor, EmptyBatchesAndMatricesGiveEmptyResults) {
  const Tensor A = Tensor::empty({0, 3, 3}, DType::Float64);
  EXPECT_EQ(linalg_inv(A).shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(linalg_det(A).shape(), (Shape{0}));
  EXPECT_EQ(linalg_cholesky(A).shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(linalg_svd(A).S.shape(), (Shape{0, 3}));
  EXPECT_EQ(linalg_eigh(A).eigenvectors.shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(linalg_qr(A).R.shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(linalg_solve(A, Tensor::empty({0, 3, 2}, DType::Float64)).shape(), (Shape{0, 3, 2}));
  EXPECT_EQ(linalg_lu(A).P.shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(linalg_pinv(Tensor::empty({2, 0, 4}, DType::Float64)).shape(), (Shape{2, 4, 0}));
  EXPECT_EQ(linalg_matrix_rank(A).shape(), (Shape{0}));
}

TEST(LinalgFactor, ErrorsNameTheOpTheArgumentAndTheValues) {
  const Tensor singular = tensor_of({1, 2, 2, 4}, {2, 2}, DType::Float64);
  EXPECT_EQ(error_message([&] { linalg_solve(singular, random_tensor({2}, DType::Float64)); }),
            "linalg.solve: The solver failed because the input matrix is singular.");
  EXPECT_EQ(error_message([&] { linalg_inv(singular); }),
            "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed "
            "because the input matrix is singular.");
  // Batched: torch's "(Batch element i)" prefix names the failing matrix.
  const Tensor batch = stack({eye(2, 2, DType::Float64), singular});
  EXPECT_EQ(error_message([&] { linalg_inv(batch); }).rfind("linalg.inv: (Batch element 1): ", 0),
            0u);
  // Not positive-definite: the order of the first failing leading minor.
  const Tensor indefinite = tensor_of({2, 0, 0, 0, 1, 0, 0, 0, -1}, {3, 3}, DType::Float64);
  EXPECT_EQ(error_message([&] { linalg_cholesky(indefinite); }),
            "linalg.cholesky: The factorization could not be completed because the input is not "
            "positive-definite (the leading minor of order 3 is not positive-definite).");
  EXPECT_EQ(error_message([&] {
              linalg_inv(random_tensor({2, 3}, DType::Float64));
            }),
            "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices");
  EXPECT_EQ(error_message([&] {
              linalg_det(Tensor::empty({3, 3}, DType::Int64));
            }),
            "linalg.det: Expected a floating point tensor (float32 or float64) as A, got int64");
  EXPECT_EQ(error_message([&] { linalg_svd(Tensor::empty({3}, DType::Float32)); }),
            "linalg.svd: A must have at least 2 dimensions, got shape [3]");
  EXPECT_NE(
      error_message([&] {
        linalg_solve(random_tensor({3, 3}, DType::Float64), random_tensor({4, 2}, DType::Float64));
      }).find("Incompatible shapes of A and B for the equation AX = B ([3, 3] and [4, 2])"),
      std::string::npos);
  EXPECT_NE(
      error_message([&] {
        linalg_solve(random_tensor({3, 3}, DType::Float64), random_tensor({3}, DType::Float32));
      }).find("Expected A and B to have the same dtype"),
      std::string::npos);
  EXPECT_EQ(error_message([&] {
              linalg_qr(random_tensor({3, 3}, DType::Float64), "full");
            }),
            "linalg.qr: qr received unrecognized mode 'full' but expected one of 'reduced' "
            "(default), 'r', or 'complete'");
  EXPECT_EQ(error_message([&] {
              linalg_eigh(random_tensor({3, 3}, DType::Float64), "X");
            }),
            "linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got X");
  EXPECT_EQ(error_message([&] {
              linalg_eig(random_tensor({2, 3}, DType::Float64));
            }),
            "linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices");
  EXPECT_NE(error_message([&] {
              linalg_householder_product(random_tensor({2, 3}, DType::Float64),
                                         random_tensor({2}, DType::Float64));
            }).find("input.shape[-2] must be greater than or equal to input.shape[-1]"),
            std::string::npos);
}

}  // namespace
}  // namespace rcuda::test
