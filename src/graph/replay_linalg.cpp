// Replay of the linalg_* ops that record for autograd (rcuda/autograd/linalg_factor.h).
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/linalg_factor.h"
#include "rcuda/core/error.h"
#include "replay.h"

namespace rcuda::graph::replay {

Tensors linalg(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& A = input(in, 0, op);
  switch (op) {
    case OpId::LinalgSolve:
      return {linalg_solve(A, input(in, 1, op))};
    case OpId::LinalgInv:
      return {linalg_inv(A)};
    case OpId::LinalgDet:
      return {linalg_det(A)};
    case OpId::LinalgSlogdet: {
      SlogdetResult r = linalg_slogdet(A);
      return {r.sign, r.logabsdet};
    }
    case OpId::LinalgCholesky:
      return {linalg_cholesky(A, flag(a, "upper", op, false))};
    case OpId::LinalgQr: {
      // Mode "r" leaves Q empty; it is still the first output, as reported.
      QrResult r = linalg_qr(A, text(a, "mode", op, "reduced"));
      return {r.Q, r.R};
    }
    case OpId::LinalgSvd: {
      SvdResult r = linalg_svd(A, flag(a, "full_matrices", op, true));
      return {r.U, r.S, r.Vh};
    }
    case OpId::LinalgSvdvals:
      return {linalg_svdvals(A)};
    case OpId::LinalgEigh: {
      EighResult r = linalg_eigh(A, text(a, "UPLO", op, "L"));
      return {r.eigenvalues, r.eigenvectors};
    }
    case OpId::LinalgEigvalsh:
      return {linalg_eigvalsh(A, text(a, "UPLO", op, "L"))};
    case OpId::LinalgTensorinv:
      return {linalg_tensorinv(A, integer(a, "ind", op))};
    case OpId::LinalgTensorsolve: {
      std::optional<std::vector<int64_t>> dims;
      if (a.has("dims")) dims = integers(a, "dims", op);
      return {linalg_tensorsolve(A, input(in, 1, op), dims)};
    }
    case OpId::LinalgPinv: {
      Tolerances tol;
      if (a.has("atol")) tol.atol = number(a, "atol", op);
      if (a.has("rtol")) tol.rtol = number(a, "rtol", op);
      return {linalg_pinv(A, tol, flag(a, "hermitian", op, false))};
    }
    case OpId::LinalgCond:
      return {linalg_cond(A, number(a, "p", op))};
    default:
      throw InternalError(std::string("graph: no linalg replay for ") + op_name(op));
  }
}

}  // namespace rcuda::graph::replay
