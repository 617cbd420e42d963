// The factorisations of rcuda/autograd/linalg_factor.h for R/linalg-factor.R: one entry point,
// rc_linalg(op, A, B, options), where options is a named list of the op's other arguments
// (already checked and converted to engine terms on the R side: 0-based dims, ind). Returns a
// tensor or an unnamed list of tensors, which the R side names as torch for R does.
#include <optional>
#include <string>
#include <vector>

#include "rcuda/autograd/linalg_factor.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

bool flag(SEXP options, const char* name) {
  SEXP x = list_element(options, name);
  return x != R_NilValue && Rf_asLogical(x) == TRUE;
}
std::string text(SEXP options, const char* name, const char* fallback) {
  SEXP x = list_element(options, name);
  return x == R_NilValue ? fallback : CHAR(STRING_ELT(x, 0));
}
std::optional<double> number(SEXP options, const char* name) {
  SEXP x = list_element(options, name);
  if (x == R_NilValue) return std::nullopt;
  return Rf_asReal(x);
}

SEXP run(const std::string& op, const Tensor& A, SEXP b, SEXP options) {
  const Tolerances tol{number(options, "atol"), number(options, "rtol")};
  if (op == "solve") return wrap(linalg_solve(A, unwrap(b)));
  if (op == "inv") return wrap(linalg_inv(A));
  if (op == "inv_ex") {
    const ExResult r = linalg_inv_ex(A);
    return wrap_tensors({r.result, r.info});
  }
  if (op == "det") return wrap(linalg_det(A));
  if (op == "slogdet") {
    const SlogdetResult r = linalg_slogdet(A);
    return wrap_tensors({r.sign, r.logabsdet});
  }
  if (op == "cholesky") return wrap(linalg_cholesky(A, flag(options, "upper")));
  if (op == "qr") {
    const QrResult r = linalg_qr(A, text(options, "mode", "reduced"));
    return wrap_tensors({r.Q, r.R});
  }
  if (op == "svd") {
    const SvdResult r = linalg_svd(A, flag(options, "full_matrices"));
    return wrap_tensors({r.U, r.S, r.Vh});
  }
  if (op == "svdvals") return wrap(linalg_svdvals(A));
  if (op == "eigh") {
    const EighResult r = linalg_eigh(A, text(options, "uplo", "L"));
    return wrap_tensors({r.eigenvalues, r.eigenvectors});
  }
  if (op == "eigvalsh") return wrap(linalg_eigvalsh(A, text(options, "uplo", "L")));
  if (op == "eig") {
    const EigResult r = linalg_eig(A);
    return wrap_tensors({r.eigenvalues, r.eigenvectors});
  }
  if (op == "eigvals") return wrap(linalg_eigvals(A));
  if (op == "lstsq") {
    const LstsqResult r = linalg_lstsq(A, unwrap(b), number(options, "rcond"));
    return wrap_tensors({r.solution, r.residuals, r.rank, r.singular_values});
  }
  if (op == "pinv") return wrap(linalg_pinv(A, tol, flag(options, "hermitian")));
  if (op == "matrix_rank") return wrap(linalg_matrix_rank(A, tol, flag(options, "hermitian")));
  if (op == "cond") return wrap(linalg_cond(A, number(options, "p").value_or(2)));
  if (op == "lu_factor") {
    const LuFactorResult r = linalg_lu_factor(A);
    return wrap_tensors({r.LU, r.pivots});
  }
  if (op == "lu") {
    const LuResult r = linalg_lu(A);
    return wrap_tensors({r.P, r.L, r.U});
  }
  if (op == "householder_product") return wrap(linalg_householder_product(A, unwrap(b)));
  if (op == "geqrf") {
    const GeqrfResult r = geqrf(A);
    return wrap_tensors({r.a, r.tau});
  }
  if (op == "tensorinv")
    return wrap(linalg_tensorinv(A, static_cast<int64_t>(number(options, "ind").value_or(2))));
  if (op == "tensorsolve") {
    SEXP dims = list_element(options, "dims");
    std::optional<std::vector<int64_t>> d;
    if (dims != R_NilValue) {
      d.emplace();
      for (R_xlen_t i = 0; i < Rf_xlength(dims); ++i)
        d->push_back(static_cast<int64_t>(REAL(dims)[i]));
    }
    return wrap(linalg_tensorsolve(A, unwrap(b), d));
  }
  throw InternalError("rc_linalg: unknown op " + op);
}

}  // namespace

extern "C" SEXP rc_linalg(SEXP op, SEXP a, SEXP b, SEXP options) {
  RCUDA_BEGIN
  return run(CHAR(STRING_ELT(op, 0)), unwrap(a), b, options);
  RCUDA_END
}
