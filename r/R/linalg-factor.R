# torch for R's linalg_* factorisations and what builds on them, over the engine's LAPACK
# (CPU) and cuSOLVER (CUDA) solvers (docs/linalg.md). Each returns what torch for R returns:
# a tensor, or a list named as torch's named tuples (list(Q = , R = ), ...), so both
# `qr$Q` and `qr[[1]]` work. Pivots are LAPACK's, 1-based, as torch for R returns them.

linalg_call <- function(op, A, B = NULL, ...) .Call(rc_linalg, op, A, B, list(...))

linalg_matrix_arg <- function(A, fn, arg = "A") extra_tensor(A, fn, arg)

linalg_number <- function(x, fn, arg) {
  if (is.null(x)) return(NULL)
  if (is_torch_tensor(x)) {
    if (x$numel() != 1) value_error(fn, ": ", arg, " as a tensor must have one element (rcuda does not broadcast tolerances)")
    x <- x$item()
  }
  if (!is.numeric(x) || length(x) != 1 || is.na(x)) value_error(fn, ": ", arg, " must be a number or NULL")
  as.double(x)
}

#' @export
linalg_solve <- function(A, B) {
  fn <- "linalg_solve"
  linalg_call("solve", linalg_matrix_arg(A, fn), linalg_matrix_arg(B, fn, "B"))
}

#' @export
linalg_inv <- function(A) linalg_call("inv", linalg_matrix_arg(A, "linalg_inv"))

#' @export
linalg_inv_ex <- function(A, check_errors = FALSE) {
  fn <- "linalg_inv_ex"
  A <- linalg_matrix_arg(A, fn)
  if (extra_flag(check_errors, fn, "check_errors")) return(list(inverse = linalg_inv(A), info = NULL))
  out <- linalg_call("inv_ex", A)
  list(inverse = out[[1]], info = out[[2]])
}

#' @export
linalg_det <- function(A) linalg_call("det", linalg_matrix_arg(A, "linalg_det"))

#' @export
linalg_slogdet <- function(A) {
  out <- linalg_call("slogdet", linalg_matrix_arg(A, "linalg_slogdet"))
  list(sign = out[[1]], logabsdet = out[[2]])
}

#' @export
linalg_cholesky <- function(A, upper = FALSE) {
  fn <- "linalg_cholesky"
  linalg_call("cholesky", linalg_matrix_arg(A, fn), upper = extra_flag(upper, fn, "upper"))
}

#' @export
linalg_qr <- function(A, mode = "reduced") {
  fn <- "linalg_qr"
  if (!is.character(mode) || length(mode) != 1) value_error(fn, ": mode must be \"reduced\", \"complete\" or \"r\"")
  out <- linalg_call("qr", linalg_matrix_arg(A, fn), mode = mode)
  list(Q = out[[1]], R = out[[2]])
}

#' @export
linalg_svd <- function(A, full_matrices = TRUE) {
  fn <- "linalg_svd"
  out <- linalg_call("svd", linalg_matrix_arg(A, fn), full_matrices = extra_flag(full_matrices, fn, "full_matrices"))
  list(U = out[[1]], S = out[[2]], Vh = out[[3]])
}

#' @export
linalg_svdvals <- function(A) linalg_call("svdvals", linalg_matrix_arg(A, "linalg_svdvals"))

linalg_uplo <- function(UPLO, fn) {
  if (!is.character(UPLO) || length(UPLO) != 1) value_error(fn, ": UPLO must be \"L\" or \"U\"")
  UPLO
}

#' @export
linalg_eigh <- function(A, UPLO = "L") {
  fn <- "linalg_eigh"
  out <- linalg_call("eigh", linalg_matrix_arg(A, fn), uplo = linalg_uplo(UPLO, fn))
  list(eigenvalues = out[[1]], eigenvectors = out[[2]])
}

#' @export
linalg_eigvalsh <- function(A, UPLO = "L") {
  fn <- "linalg_eigvalsh"
  linalg_call("eigvalsh", linalg_matrix_arg(A, fn), uplo = linalg_uplo(UPLO, fn))
}

# A general square matrix's complex eigenvalues and right eigenvectors (columns of unit norm),
# computed by LAPACK's geev on the CPU for every device, as PyTorch does (Note [General
# eigenproblems] in src/ops/linalg_spectral.cpp). Real input gives complex64 or complex128.
#' @export
linalg_eig <- function(A) {
  out <- linalg_call("eig", linalg_matrix_arg(A, "linalg_eig"))
  list(eigenvalues = out[[1]], eigenvectors = out[[2]])
}

#' @export
linalg_eigvals <- function(A) linalg_call("eigvals", linalg_matrix_arg(A, "linalg_eigvals"))

#' @export
linalg_lstsq <- function(A, B, rcond = NULL, ..., driver = NULL) {
  fn <- "linalg_lstsq"
  if (!is.null(driver) && !identical(driver, "gelsd")) {
    value_error(fn, ": driver \"", driver, "\" is not available: rcuda solves least squares through ",
                "the SVD on every device (\"gelsd\"), which returns the rank and singular values too")
  }
  out <- linalg_call("lstsq", linalg_matrix_arg(A, fn), linalg_matrix_arg(B, fn, "B"),
                     rcond = linalg_number(rcond, fn, "rcond"))
  list(solution = out[[1]], residuals = out[[2]], rank = out[[3]], singular_values = out[[4]])
}

#' @export
linalg_pinv <- function(A, rcond = NULL, hermitian = FALSE, atol = NULL, rtol = NULL) {
  fn <- "linalg_pinv"
  if (!is.null(rcond)) {  # torch: rcond is an alias of rtol, deprecated
    warning("linalg_pinv: `rcond` is deprecated in favor of `rtol`.", call. = FALSE)
    rtol <- rcond
  }
  linalg_call("pinv", linalg_matrix_arg(A, fn), hermitian = extra_flag(hermitian, fn, "hermitian"),
              atol = linalg_number(atol, fn, "atol"), rtol = linalg_number(rtol, fn, "rtol"))
}

#' @export
linalg_matrix_rank <- function(A, ..., atol = NULL, rtol = NULL, tol = NULL, hermitian = FALSE) {
  fn <- "linalg_matrix_rank"
  # torch: tol is the absolute tolerance of older releases (rtol 0 then).
  if (!is.null(tol)) {
    warning("linalg_matrix_rank: `tol` is deprecated in favor of `atol` and `rtol`.", call. = FALSE)
    atol <- tol
    rtol <- 0
  }
  linalg_call("matrix_rank", linalg_matrix_arg(A, fn), hermitian = extra_flag(hermitian, fn, "hermitian"),
              atol = linalg_number(atol, fn, "atol"), rtol = linalg_number(rtol, fn, "rtol"))
}

#' @export
linalg_cond <- function(A, p = NULL) {
  fn <- "linalg_cond"
  A <- linalg_matrix_arg(A, fn)
  if (is.null(p) || (is.numeric(p) && length(p) == 1 && abs(p) == 2)) {
    return(linalg_call("cond", A, p = if (is.null(p)) 2 else as.double(p)))
  }
  # The other norms: norm(A) * norm(A^-1), for square invertible A (as torch).
  s <- A$shape
  if (length(s) < 2 || s[length(s)] != s[length(s) - 1]) {
    value_error(fn, ": p = ", deparse(p), " needs square matrices, got shape ", paste(s, collapse = "x"))
  }
  linalg_matrix_norm(A, ord = p) * linalg_matrix_norm(linalg_inv(A), ord = p)
}

#' @export
linalg_lu_factor <- function(A, pivot = TRUE) {
  fn <- "linalg_lu_factor"
  if (!isTRUE(extra_flag(pivot, fn, "pivot"))) {
    value_error(fn, ": LU without pivoting is not implemented (LAPACK and cuSOLVER pivot)")
  }
  out <- linalg_call("lu_factor", linalg_matrix_arg(A, fn))
  list(LU = out[[1]], pivots = out[[2]])
}

#' @export
linalg_lu <- function(A, pivot = TRUE) {
  fn <- "linalg_lu"
  if (!isTRUE(extra_flag(pivot, fn, "pivot"))) {
    value_error(fn, ": LU without pivoting is not implemented (LAPACK and cuSOLVER pivot)")
  }
  out <- linalg_call("lu", linalg_matrix_arg(A, fn))
  list(P = out[[1]], L = out[[2]], U = out[[3]])
}

#' @export
linalg_householder_product <- function(A, tau) {
  fn <- "linalg_householder_product"
  linalg_call("householder_product", linalg_matrix_arg(A, fn), linalg_matrix_arg(tau, fn, "tau"))
}

# LAPACK's geqrf, as torch_geqrf(): list(a, tau), R above a's diagonal and the Householder
# vectors below it; linalg_householder_product(a, tau) is Q. No gradient, as in PyTorch.
#' @export
torch_geqrf <- function(self) {
  out <- linalg_call("geqrf", linalg_matrix_arg(self, "torch_geqrf", "self"))
  list(out[[1]], out[[2]])
}
tensor_methods$geqrf <- function(self) torch_geqrf(self)

#' @export
linalg_tensorinv <- function(A, ind = 3L) {
  fn <- "linalg_tensorinv"
  ind <- extra_whole(ind, fn, "ind")
  # torch for R's ind is one more than torch's: the first ind - 1 dims form the rows.
  if (ind < 2) value_error(fn, ": ind must be at least 2 (the first ind - 1 dims are the rows), got ", ind)
  linalg_call("tensorinv", linalg_matrix_arg(A, fn), ind = as.double(ind - 1L))
}

#' @export
linalg_tensorsolve <- function(A, B, dims = NULL) {
  fn <- "linalg_tensorsolve"
  A <- linalg_matrix_arg(A, fn)
  B <- linalg_matrix_arg(B, fn, "B")
  if (!is.null(dims)) dims <- as.double(product_dims(dims, A$dim(), fn, "dims") - 1L)
  linalg_call("tensorsolve", A, B, dims = dims)
}

# X with A X = B (left = TRUE) or X A = B, for A upper or lower triangular (only that triangle
# is read; unitriangular takes its diagonal as ones), as torch for R's. Composed from
# linalg_solve on the triangle, which records autograd; LU with partial pivoting on a
# triangular matrix is as accurate as substitution.
#' @export
linalg_solve_triangular <- function(A, B, upper, left = TRUE, unitriangular = FALSE) {
  fn <- "linalg_solve_triangular"
  A <- linalg_matrix_arg(A, fn)
  B <- linalg_matrix_arg(B, fn, "B")
  if (missing(upper)) value_error(fn, ": upper must be given (TRUE or FALSE)")
  upper <- extra_flag(upper, fn, "upper")
  left <- extra_flag(left, fn, "left")
  unitriangular <- extra_flag(unitriangular, fn, "unitriangular")
  if (A$dim() < 2 || A$size(-1) != A$size(-2)) {
    value_error(fn, ": A must be a batch of square matrices, got shape ", shape_text(A$shape))
  }
  triangle <- if (upper) A$triu() else A$tril()
  if (unitriangular) {
    n <- A$size(-1)
    eye <- torch_eye(n, dtype = A$dtype, device = A$device)
    triangle <- triangle * (1 - eye) + eye
  }
  if (left) return(linalg_solve(triangle, B))
  # X A = B  <=>  A^T X^T = B^T.
  linalg_solve(triangle$transpose(-1, -2), B$transpose(-1, -2))$transpose(-1, -2)
}

# torch for R's linalg_cholesky_ex(): the factor and `info` (int32, one per matrix): 0 where the
# factorization succeeded, else the order of the first leading minor that is not positive-
# definite, with no error unless check_errors = TRUE. Composed from linalg_cholesky: the whole
# batch at once, and where that fails, each matrix alone; a failing matrix's order is found by
# bisection over its leading blocks (positive-definiteness of leading minors is inherited by the
# smaller ones), and its L holds the factor of the largest positive-definite leading block,
# zeros elsewhere.
#' @export
linalg_cholesky_ex <- function(A, upper = FALSE, check_errors = FALSE) {
  fn <- "linalg_cholesky_ex"
  A <- linalg_matrix_arg(A, fn)
  upper <- extra_flag(upper, fn, "upper")
  if (extra_flag(check_errors, fn, "check_errors")) {
    L <- linalg_cholesky(A, upper = upper)
    return(list(L = L, info = torch_zeros(head(A$shape, -2), dtype = torch_int32(), device = A$device)))
  }
  if (A$dim() < 2 || A$size(-1) != A$size(-2)) {
    value_error(fn, ": A must be a batch of square matrices, got shape ", shape_text(A$shape))
  }
  factor <- function(M) {
    tryCatch(linalg_cholesky(M), rcuda_value_error = function(e) {
      if (grepl("not positive-definite", conditionMessage(e), fixed = TRUE)) NULL else stop(e)
    })
  }
  batch <- head(A$shape, -2)
  n <- A$size(-1)
  L <- factor(A)
  info <- integer(prod(batch))
  if (is.null(L)) {
    flat <- A$reshape(c(-1, n, n))
    pieces <- lapply(seq_len(flat$size(1)), function(b) {
      M <- flat[b, , ]
      Lb <- factor(M)
      if (!is.null(Lb)) return(Lb)
      good <- 0L  # the largest k whose leading k x k block factors; k + 1 fails
      bad <- n
      while (bad - good > 1L) {
        mid <- (good + bad) %/% 2L
        if (is.null(factor(M[1:mid, 1:mid]))) bad <- mid else good <- mid
      }
      info[b] <<- bad
      out <- torch_zeros(n, n, dtype = A$dtype, device = A$device)
      if (good > 0L) out <- nnf_pad(factor(M[1:good, 1:good]), c(0, n - good, 0, n - good))
      out
    })
    L <- torch_stack(pieces)$reshape(A$shape)
  }
  if (upper) L <- L$transpose(-1, -2)
  info <- if (length(batch)) {
    torch_tensor(info, dtype = torch_int32(), device = A$device)$reshape(batch)
  } else {
    torch_scalar_tensor(info, dtype = torch_int32(), device = A$device)
  }
  list(L = L, info = info)
}
