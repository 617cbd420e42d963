// Entry points of the factorisations (rcuda/autograd/linalg_factor.h): one FactorBackward node
// per call (grads/linalg_factor.cpp); tensorinv, tensorsolve, pinv and cond compose recorded ops.
#include "rcuda/autograd/linalg_factor.h"

#include <algorithm>
#include <string>
#include <vector>

#include "grads/linalg_factor.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::FactorBackward;
using autograd::FactorOp;
using autograd::OpCall;
using autograd::SavedTensor;

std::shared_ptr<FactorBackward> factor_node(OpId id, FactorOp op, const Tensor& A) {
  auto node = autograd::make_node<FactorBackward>(id, A);
  node->op = op;
  return node;
}

// Records the full SVD; `values_only` says whether the caller hands out S alone.
SvdResult recorded_svd(OpId id, const Tensor& A, bool full_matrices, bool values_only) {
  SvdResult r = autograd::below_autograd([&] { return ops::linalg_svd(A, full_matrices); });
  auto node = factor_node(id, FactorOp::Svd, A);
  node->flag = full_matrices;
  node->saved = {SavedTensor(r.U), SavedTensor(r.S), SavedTensor(r.Vh)};
  node->set_num_outputs(3);
  autograd::set_history(r.S, node, 1);
  if (!values_only) {
    autograd::set_history(r.U, node, 0);
    autograd::set_history(r.Vh, node, 2);
  }
  return r;
}

EighResult recorded_eigh(OpId id, const Tensor& A, const std::string& uplo, bool values_only) {
  EighResult r = autograd::below_autograd([&] { return ops::linalg_eigh(A, uplo); });
  auto node = factor_node(id, FactorOp::Eigh, A);
  node->saved = {SavedTensor(r.eigenvalues), SavedTensor(r.eigenvectors)};
  node->set_num_outputs(2);
  autograd::set_history(r.eigenvalues, node, 0);
  if (!values_only) autograd::set_history(r.eigenvectors, node, 1);
  return r;
}

// The composed ops, when they record: the checks and the output shape from the no-grad op, the
// values through recorded ops.
Tensor recorded_tensorinv(const Tensor& A, int64_t ind) {
  const Tensor checked = autograd::below_autograd([&] { return ops::linalg_tensorinv(A, ind); });
  int64_t rows = 1;  // = prod(A.shape[ind:]) = prod(A.shape[:ind]), as the op checked
  for (int64_t d = ind; d < A.dim(); ++d) rows *= A.shape()[d];
  return reshape(linalg_inv(reshape(A, {rows, rows})), checked.shape());
}

Tensor recorded_tensorsolve(const Tensor& A, const Tensor& B,
                            const std::optional<std::vector<int64_t>>& dims) {
  const Tensor checked =
      autograd::below_autograd([&] { return ops::linalg_tensorsolve(A, B, dims); });
  Tensor a = A;
  if (dims && !dims->empty()) {
    std::vector<int64_t> order, moved;
    for (int64_t d : *dims) moved.push_back(d < 0 ? d + A.dim() : d);
    for (int64_t d = 0; d < A.dim(); ++d)
      if (std::find(moved.begin(), moved.end(), d) == moved.end()) order.push_back(d);
    order.insert(order.end(), moved.begin(), moved.end());
    a = A.permute(order);
  }
  const int64_t rows = B.numel();
  return reshape(linalg_solve(reshape(a, {rows, rows}), reshape(B, {rows})), checked.shape());
}

Tensor recorded_pinv(const Tensor& A, Tolerances tol, bool hermitian) {
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1];
  const double atol = tol.atol.value_or(0.0);
  const double eps = A.dtype() == DType::Float32 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
  const double rtol = tol.rtol                      ? *tol.rtol
                      : (tol.atol && *tol.atol > 0) ? 0.0
                                                    : eps * static_cast<double>(std::max(m, n));
  if (hermitian) {
    const EighResult e = linalg_eigh(A);
    const Tensor magnitude = autograd::below_autograd([&] { return ops::abs(e.eigenvalues); });
    const Tensor cut = autograd::below_autograd([&] {
      const Tensor largest = std::get<0>(ops::max(magnitude, -1, true));
      return ops::maximum(ops::mul(largest, rtol), ops::full_like(largest, atol));
    });
    const Tensor keep = autograd::below_autograd([&] { return ops::gt(magnitude, cut); });
    const Tensor inverse =
        where(keep, div(ones_like(e.eigenvalues), where(keep, e.eigenvalues, 1.0)), 0.0);
    const Tensor V = e.eigenvectors;
    return matmul(mul(V, inverse.unsqueeze(-2)), V.transpose(-2, -1));
  }
  const SvdResult s = linalg_svd(A, false);
  const Tensor cut = autograd::below_autograd([&] {
    const Tensor largest = s.S.narrow(-1, 0, 1);
    return ops::maximum(ops::mul(largest, rtol), ops::full_like(largest, atol));
  });
  const Tensor keep = autograd::below_autograd([&] { return ops::gt(s.S, cut); });
  const Tensor inverse = where(keep, div(ones_like(s.S), where(keep, s.S, 1.0)), 0.0);
  return matmul(mul(s.Vh.transpose(-2, -1), inverse.unsqueeze(-2)), s.U.transpose(-2, -1));
}

Tensor recorded_cond(const Tensor& A, double p) {
  autograd::below_autograd([&] { return ops::linalg_cond(A, p); });  // the checks
  const Tensor S = linalg_svdvals(A);
  const int64_t k = S.shape()[S.dim() - 1];
  const Tensor largest = S.select(-1, 0), smallest = S.select(-1, k - 1);
  return p == 2 ? div(largest, smallest) : div(smallest, largest);
}

}  // namespace

Tensor linalg_solve(const Tensor& A, const Tensor& B) {
  OpCall call(OpId::LinalgSolve, A);
  Tensor X;
  if (!OpCall::records(A, B)) {
    X = ops::linalg_solve(A, B);
  } else {
    X = autograd::below_autograd([&] { return ops::linalg_solve(A, B); });
    auto node = autograd::make_node<FactorBackward>(call.op(), A, B);
    node->op = FactorOp::Solve;
    // The vector rule of ops::linalg_solve, recorded for the formula.
    const Shape a_batch_n(A.shape().begin(), A.shape().end() - 1);
    node->flag = B.dim() == 1 || (B.dim() == A.dim() - 1 && B.shape() == a_batch_n);
    node->saved = {SavedTensor(A, SavedTensor::kInput), SavedTensor(X)};
    autograd::set_history(X, node);
  }
  if (call.reported()) call.report({A, B}, {}, {X});
  return X;
}

Tensor linalg_inv(const Tensor& A) {
  OpCall call(OpId::LinalgInv, A);
  Tensor out;
  if (!OpCall::records(A)) {
    out = ops::linalg_inv(A);
  } else {
    out = autograd::below_autograd([&] { return ops::linalg_inv(A); });
    auto node = factor_node(call.op(), FactorOp::Inv, A);
    node->saved = {SavedTensor(out)};
    autograd::set_history(out, node);
  }
  if (call.reported()) call.report({A}, {}, {out});
  return out;
}

Tensor linalg_det(const Tensor& A) {
  OpCall call(OpId::LinalgDet, A);
  Tensor out;
  if (!OpCall::records(A)) {
    out = ops::linalg_det(A);
  } else {
    out = autograd::below_autograd([&] { return ops::linalg_det(A); });
    auto node = factor_node(call.op(), FactorOp::Det, A);
    node->saved = {SavedTensor(A, SavedTensor::kInput), SavedTensor(out)};
    autograd::set_history(out, node);
  }
  if (call.reported()) call.report({A}, {}, {out});
  return out;
}

SlogdetResult linalg_slogdet(const Tensor& A) {
  OpCall call(OpId::LinalgSlogdet, A);
  SlogdetResult r;
  if (!OpCall::records(A)) {
    r = ops::linalg_slogdet(A);
  } else {
    r = autograd::below_autograd([&] { return ops::linalg_slogdet(A); });
    auto node = factor_node(call.op(), FactorOp::Slogdet, A);
    node->saved = {SavedTensor(A, SavedTensor::kInput)};
    node->set_num_outputs(2);
    autograd::set_history(r.sign, node, 0);
    autograd::set_history(r.logabsdet, node, 1);
  }
  if (call.reported()) call.report({A}, {}, {r.sign, r.logabsdet});
  return r;
}

Tensor linalg_cholesky(const Tensor& A, bool upper) {
  OpCall call(OpId::LinalgCholesky, A);
  Tensor out;
  if (!OpCall::records(A)) {
    out = ops::linalg_cholesky(A, upper);
  } else {
    out = autograd::below_autograd([&] { return ops::linalg_cholesky(A, upper); });
    auto node = factor_node(call.op(), FactorOp::Cholesky, A);
    node->flag = upper;
    node->saved = {SavedTensor(out)};
    autograd::set_history(out, node);
  }
  if (call.reported()) call.report({A}, {{"upper", upper}}, {out});
  return out;
}

QrResult linalg_qr(const Tensor& A, const std::string& mode) {
  OpCall call(OpId::LinalgQr, A);
  QrResult r;
  if (!OpCall::records(A)) {
    r = ops::linalg_qr(A, mode);
  } else {
    r = autograd::below_autograd([&] { return ops::linalg_qr(A, mode); });
    auto node = factor_node(call.op(), FactorOp::Qr, A);
    node->saved = {SavedTensor(r.Q), SavedTensor(r.R)};
    node->set_num_outputs(2);
    if (mode != "r") autograd::set_history(r.Q, node, 0);
    autograd::set_history(r.R, node, 1);
  }
  if (call.reported()) call.report({A}, {{"mode", mode}}, {r.Q, r.R});
  return r;
}

SvdResult linalg_svd(const Tensor& A, bool full_matrices) {
  OpCall call(OpId::LinalgSvd, A);
  SvdResult r = OpCall::records(A) ? recorded_svd(call.op(), A, full_matrices, false)
                                   : ops::linalg_svd(A, full_matrices);
  if (call.reported()) call.report({A}, {{"full_matrices", full_matrices}}, {r.U, r.S, r.Vh});
  return r;
}

Tensor linalg_svdvals(const Tensor& A) {
  OpCall call(OpId::LinalgSvdvals, A);
  Tensor out =
      OpCall::records(A) ? recorded_svd(call.op(), A, false, true).S : ops::linalg_svdvals(A);
  if (call.reported()) call.report({A}, {}, {out});
  return out;
}

EighResult linalg_eigh(const Tensor& A, const std::string& uplo) {
  OpCall call(OpId::LinalgEigh, A);
  EighResult r =
      OpCall::records(A) ? recorded_eigh(call.op(), A, uplo, false) : ops::linalg_eigh(A, uplo);
  if (call.reported()) call.report({A}, {{"UPLO", uplo}}, {r.eigenvalues, r.eigenvectors});
  return r;
}

Tensor linalg_eigvalsh(const Tensor& A, const std::string& uplo) {
  OpCall call(OpId::LinalgEigvalsh, A);
  Tensor out = OpCall::records(A) ? recorded_eigh(call.op(), A, uplo, true).eigenvalues
                                  : ops::linalg_eigvalsh(A, uplo);
  if (call.reported()) call.report({A}, {{"UPLO", uplo}}, {out});
  return out;
}

Tensor linalg_tensorinv(const Tensor& A, int64_t ind) {
  OpCall call(OpId::LinalgTensorinv, A);
  Tensor out = OpCall::records(A) ? recorded_tensorinv(A, ind) : ops::linalg_tensorinv(A, ind);
  if (call.reported()) call.report({A}, {{"ind", ind}}, {out});
  return out;
}

Tensor linalg_tensorsolve(const Tensor& A, const Tensor& B,
                          const std::optional<std::vector<int64_t>>& dims) {
  OpCall call(OpId::LinalgTensorsolve, A);
  Tensor out = OpCall::records(A, B) ? recorded_tensorsolve(A, B, dims)
                                     : ops::linalg_tensorsolve(A, B, dims);
  if (call.reported()) {
    Attributes attrs;
    if (dims) attrs.set("dims", *dims);
    call.report({A, B}, attrs, {out});
  }
  return out;
}

Tensor linalg_pinv(const Tensor& A, Tolerances tol, bool hermitian) {
  OpCall call(OpId::LinalgPinv, A);
  Tensor out = !OpCall::records(A) || A.numel() == 0 ? ops::linalg_pinv(A, tol, hermitian)
                                                     : recorded_pinv(A, tol, hermitian);
  if (call.reported()) {
    Attributes attrs;
    if (tol.atol) attrs.set("atol", *tol.atol);
    if (tol.rtol) attrs.set("rtol", *tol.rtol);
    attrs.set("hermitian", hermitian);
    call.report({A}, attrs, {out});
  }
  return out;
}

Tensor linalg_cond(const Tensor& A, double p) {
  OpCall call(OpId::LinalgCond, A);
  Tensor out = OpCall::records(A) ? recorded_cond(A, p) : ops::linalg_cond(A, p);
  if (call.reported()) call.report({A}, {{"p", p}}, {out});
  return out;
}

}  // namespace rcuda
