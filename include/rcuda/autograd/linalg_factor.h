// The public factorisation ops (the no-grad contract: rcuda/ops/linalg_factor.h), recording for
// backward where torch has a gradient: solve, inv, det, slogdet, cholesky, qr, svd, svdvals,
// eigh, eigvalsh, and tensorinv, tensorsolve, pinv and cond, which compose them. Formulas in
// src/autograd/grads/linalg_factor.cpp. A header of its own rather than part of api.h, so that
// adding to it rebuilds only what uses it (docs/linalg.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rcuda/ops/linalg_factor.h"

namespace rcuda {

using ops::EighResult;
using ops::EigResult;
using ops::ExResult;
using ops::LstsqResult;
using ops::LuFactorResult;
using ops::LuResult;
using ops::QrResult;
using ops::SlogdetResult;
using ops::SvdResult;

Tensor linalg_solve(const Tensor& A, const Tensor& B);
Tensor linalg_inv(const Tensor& A);
Tensor linalg_det(const Tensor& A);
SlogdetResult linalg_slogdet(const Tensor& A);
Tensor linalg_cholesky(const Tensor& A, bool upper = false);
QrResult linalg_qr(const Tensor& A, const std::string& mode = "reduced");
SvdResult linalg_svd(const Tensor& A, bool full_matrices = true);
Tensor linalg_svdvals(const Tensor& A);
EighResult linalg_eigh(const Tensor& A, const std::string& uplo = "L");
Tensor linalg_eigvalsh(const Tensor& A, const std::string& uplo = "L");
Tensor linalg_tensorinv(const Tensor& A, int64_t ind = 2);
Tensor linalg_tensorsolve(const Tensor& A, const Tensor& B,
                          const std::optional<std::vector<int64_t>>& dims = {});
// Differentiable through the SVD (or eigh when hermitian); the cutoff itself carries none.
Tensor linalg_pinv(const Tensor& A, Tolerances tol = {}, bool hermitian = false);
Tensor linalg_cond(const Tensor& A, double p = 2);

// No gradient (as torch for lu_factor's pivots, matrix_rank, lstsq's rank and geqrf; rcuda also
// records none for lu, householder_product and lstsq's solution: docs/linalg.md).
using ops::geqrf;
using ops::GeqrfResult;
using ops::linalg_eig;
using ops::linalg_eigvals;
using ops::linalg_householder_product;
using ops::linalg_inv_ex;
using ops::linalg_lstsq;
using ops::linalg_lu;
using ops::linalg_lu_factor;
using ops::linalg_matrix_rank;
using ops::linalg_solve_ex;

}  // namespace rcuda
