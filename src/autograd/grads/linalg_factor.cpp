// Gradients of the factorisations, real case, after PyTorch's FunctionsManual.cpp (which
// cites the derivations): solve, inv, det, slogdet, cholesky, qr, eigh, svd. Inputs are the
// outputs' gradients (undefined where none flowed); formulas use the no-grad ops, so there is
// no double backward (docs/autograd.md).
#include "linalg_factor.h"

#include <algorithm>

#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/linalg.h"
#include "rcuda/ops/linalg_factor.h"

namespace rcuda::autograd {
namespace {

using ops::linalg::diag_embed;
using ops::linalg::mT;
using ops::linalg::tril;

// Backward never waits for the GPU (docs/autograd.md): the _ex forms skip the host read of
// LAPACK's info that the user-facing ops make (Note [Solver errors] in src/ops/linalg_util.h).
Tensor solve(const Tensor& A, const Tensor& B) { return ops::linalg_solve_ex(A, B).result; }
Tensor inv(const Tensor& A) { return ops::linalg_inv_ex(A).result; }

Tensor unsqueeze2(const Tensor& x) { return x.unsqueeze(-1).unsqueeze(-1); }

// X R^-1 for square invertible R: (R^-T X^T)^T.
Tensor solve_right(const Tensor& X, const Tensor& R) { return mT(solve(mT(R), mT(X))); }

// X = A^-1 B: gB = A^-T gX, gA = -gB X^T (vectors as one-column matrices).
TensorList solve_backward(const Tensor& g, const Tensor& A, const Tensor& X, bool vector,
                          bool need_a) {
  const Tensor gB = solve(mT(A), g);
  if (!need_a) return {Tensor(), gB};
  const Tensor gB2 = vector ? gB.unsqueeze(-1) : gB, X2 = vector ? X.unsqueeze(-1) : X;
  return {ops::neg(ops::matmul(gB2, mT(X2))), gB};
}

// A = L L^T: gA = sym(L^-T Phi(L^T gL) L^-1), Phi: the lower triangle with its diagonal halved.
Tensor cholesky_backward(Tensor gL, Tensor L, bool upper) {
  if (upper) {
    L = mT(L);
    gL = mT(gL);
  }
  Tensor phi = tril(ops::matmul(mT(L), tril(gL)));
  phi = ops::sub(phi, ops::mul(diag_embed(phi.diagonal(0, -2, -1)), 0.5));
  const Tensor inner = solve(mT(L), phi);   // L^-T Phi
  const Tensor gA = solve_right(inner, L);  // L^-T Phi L^-1
  return ops::mul(ops::add(gA, mT(gA)), 0.5);
}

// copyltu(M) = tril(M) + tril(M, -1)^T: the symmetric matrix with M's lower triangle.
Tensor copyltu(const Tensor& M) { return ops::add(tril(M), mT(tril(M, -1))); }

// A = Q R with R square (m >= n reduced, or m == n): gA = (gQ + Q copyltu(M)) R^-T,
// M = R gR^T - gQ^T Q.
Tensor qr_backward_square(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  Tensor M, b;
  if (gR.defined()) M = ops::matmul(R, mT(gR));
  if (gQ.defined()) {
    const Tensor QgQ = ops::matmul(mT(gQ), Q);
    M = M.defined() ? ops::sub(M, QgQ) : ops::neg(QgQ);
  }
  b = ops::matmul(Q, copyltu(M));
  if (gQ.defined()) b = ops::add(b, gQ);
  return solve_right(b, mT(R));
}

TensorList qr_backward(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  const int64_t m = Q.shape()[Q.dim() - 2], n = R.shape()[R.dim() - 1];
  RCUDA_CHECK(Q.shape()[Q.dim() - 1] == std::min(m, n), ValueError,
              "linalg.qr: The derivative of linalg.qr is not implemented when mode='complete' "
              "and nrows > ncols, nor when mode='r' (Q was not computed)");
  if (m >= n) return {qr_backward_square(gQ, gR, Q, R)};
  // Wide A = [A1 | A2] = Q [X | Y]: Y = Q^T A2 adds A2 gY^T = Q Y gY^T to Q's gradient, then
  // A1 = Q X is a square QR; A2's own gradient is Q gY.
  const Tensor X = R.narrow(-1, 0, m), Y = R.narrow(-1, m, n - m);
  Tensor gX, gY, gQ2 = gQ;
  if (gR.defined()) {
    gX = gR.narrow(-1, 0, m);
    gY = gR.narrow(-1, m, n - m);
    const Tensor extra = ops::matmul(ops::matmul(Q, Y), mT(gY));
    gQ2 = gQ.defined() ? ops::add(gQ, extra) : extra;
  }
  const Tensor gAX = qr_backward_square(gQ2, gX, Q, X);
  const Tensor gAY = gY.defined() ? ops::matmul(Q, gY) : ops::zeros_like(Y);
  return {ops::cat({gAX, gAY}, -1)};
}

// A = V diag(L) V^T: gA = V (skew(V^T gV) / E + diag(gL)) V^T, E_ij = L_j - L_i (1 on the
// diagonal, where the skew part is zero).
Tensor eigh_backward(const Tensor& gL, const Tensor& gV, const Tensor& L, const Tensor& V) {
  const int64_t n = L.shape()[L.dim() - 1];
  Tensor inner;
  if (gV.defined()) {
    const Tensor VgV = ops::matmul(mT(V), gV);
    const Tensor skew = ops::mul(ops::sub(VgV, mT(VgV)), 0.5);
    const Tensor E =
        ops::add(ops::sub(L.unsqueeze(-2), L.unsqueeze(-1)), ops::linalg::eye_like(n, L));
    inner = ops::div(skew, E);
  }
  if (gL.defined()) inner = inner.defined() ? ops::add(inner, diag_embed(gL)) : diag_embed(gL);
  return ops::matmul(ops::matmul(V, inner), mT(V));
}

// A = U diag(S) Vh (reduced; full matrices are narrowed to k first, as torch).
Tensor svd_backward(Tensor gU, const Tensor& gS, Tensor gVh, Tensor U, const Tensor& S, Tensor Vh) {
  const int64_t m = U.shape()[U.dim() - 2], n = Vh.shape()[Vh.dim() - 1];
  const int64_t k = S.shape()[S.dim() - 1];
  U = U.narrow(-1, 0, k);
  Vh = Vh.narrow(-2, 0, k);
  if (gU.defined()) gU = gU.narrow(-1, 0, k);
  if (gVh.defined()) gVh = gVh.narrow(-2, 0, k);
  if (!gU.defined() && !gVh.defined()) {
    return ops::matmul(ops::mul(U, gS.unsqueeze(-2)), Vh);
  }
  const Tensor V = mT(Vh);
  const Tensor gV = gVh.defined() ? mT(gVh) : Tensor();
  const Tensor S2 = ops::mul(S, S);
  const Tensor E =
      ops::add(ops::sub(S2.unsqueeze(-2), S2.unsqueeze(-1)), ops::linalg::eye_like(k, S));
  Tensor inner;
  if (gU.defined()) {
    const Tensor UgU = ops::matmul(mT(U), gU);
    inner = ops::mul(ops::sub(UgU, mT(UgU)), S.unsqueeze(-2));
  }
  if (gV.defined()) {
    const Tensor VgV = ops::matmul(mT(V), gV);
    const Tensor term = ops::mul(S.unsqueeze(-1), ops::sub(VgV, mT(VgV)));
    inner = inner.defined() ? ops::add(inner, term) : term;
  }
  inner = ops::div(inner, E);
  if (gS.defined()) inner = ops::add(inner, diag_embed(gS));
  if (m > k && gU.defined()) {
    Tensor gA = ops::matmul(U, inner);
    const Tensor gUSinv = ops::div(gU, S.unsqueeze(-2));
    gA = ops::sub(ops::add(gA, gUSinv), ops::matmul(U, ops::matmul(mT(U), gUSinv)));
    return ops::matmul(gA, Vh);
  }
  if (n > k && gV.defined()) {
    Tensor gA = ops::matmul(inner, Vh);
    const Tensor gVSinv = ops::div(gV, S.unsqueeze(-2));
    gA = ops::sub(ops::add(gA, mT(gVSinv)), ops::matmul(ops::matmul(mT(gVSinv), V), Vh));
    return ops::matmul(U, gA);
  }
  return ops::matmul(ops::matmul(U, inner), Vh);
}

}  // namespace

const char* FactorBackward::name() const {
  switch (op) {
    case FactorOp::Solve:
      return "LinalgSolveExBackward";
    case FactorOp::Inv:
      return "LinalgInvExBackward";
    case FactorOp::Det:
      return "LinalgDetBackward";
    case FactorOp::Slogdet:
      return "LinalgSlogdetBackward";
    case FactorOp::Cholesky:
      return "LinalgCholeskyExBackward";
    case FactorOp::Qr:
      return "LinalgQrBackward";
    case FactorOp::Eigh:
      return "LinalgEighBackward";
    case FactorOp::Svd:
      return "LinalgSvdBackward";
  }
  return "FactorBackward";
}

TensorList FactorBackward::apply(TensorList&& grads) {
  auto get = [&](size_t i) { return saved[i].unpack(*this); };
  switch (op) {
    case FactorOp::Solve:
      return solve_backward(grads[0], get(0), get(1), flag, needs_input_grad(0));
    case FactorOp::Inv: {
      const Tensor Ainv_t = mT(get(0));
      return {ops::neg(ops::matmul(ops::matmul(Ainv_t, grads[0]), Ainv_t))};
    }
    case FactorOp::Det: {
      const Tensor A = get(0);
      return {ops::mul(unsqueeze2(ops::mul(grads[0], get(1))), mT(inv(A)))};
    }
    case FactorOp::Slogdet: {
      if (!grads[1].defined()) return {Tensor()};
      return {ops::mul(unsqueeze2(grads[1]), mT(inv(get(0))))};
    }
    case FactorOp::Cholesky:
      return {cholesky_backward(grads[0], get(0), flag)};
    case FactorOp::Qr:
      return qr_backward(grads[0], grads[1], get(0), get(1));
    case FactorOp::Eigh:
      return {eigh_backward(grads[0], grads[1], get(0), get(1))};
    case FactorOp::Svd:
      return {svd_backward(grads[0], grads[1], grads[2], get(0), get(1), get(2))};
  }
  throw InternalError("FactorBackward: unknown op");
}

}  // namespace rcuda::autograd
