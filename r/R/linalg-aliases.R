# torch for R's older linear-algebra names (det, logdet, inverse, pinverse, cholesky,
# matrix_power) over the linalg_* functions, and the distances dist and cosine_similarity.

# ---- linear algebra -----------------------------------------------------------------------

#' @export
torch_det <- function(self) linalg_det(extra_tensor(self, "torch_det"))

# log(det): NaN for a negative determinant, -Inf for a singular matrix.
#' @export
torch_logdet <- function(self) {
  parts <- linalg_slogdet(extra_tensor(self, "torch_logdet"))
  torch_where(parts$sign < 0, NaN, parts$logabsdet)
}

#' @export
torch_inverse <- function(self) linalg_inv(extra_tensor(self, "torch_inverse"))

#' @export
torch_pinverse <- function(self, rcond = 1e-15) {
  linalg_pinv(extra_tensor(self, "torch_pinverse"), rcond = number_arg(rcond, "torch_pinverse", "rcond"))
}

#' @export
torch_cholesky <- function(self, upper = FALSE) {
  linalg_cholesky(extra_tensor(self, "torch_cholesky"), upper = extra_flag(upper, "torch_cholesky", "upper"))
}

#' @export
torch_matrix_power <- function(self, n) {
  linalg_matrix_power(extra_tensor(self, "torch_matrix_power"), extra_whole(n, "torch_matrix_power", "n"))
}

# The p-norm of self - other (broadcast).
#' @export
torch_dist <- function(self, other, p = 2L) {
  self <- extra_tensor(self, "torch_dist")
  other <- extra_tensor(other, "torch_dist", "other")
  linalg_vector_norm(self - other, ord = number_arg(p, "torch_dist", "p"))
}

# Each vector divided by its norm (at least eps), then their dot product along dim.
#' @export
torch_cosine_similarity <- function(x1, x2, dim = 2L, eps = 1e-08) {
  fn <- "torch_cosine_similarity"
  x1 <- extra_tensor(x1, fn, "x1")
  x2 <- extra_tensor(x2, fn, "x2")
  if (number_arg(eps, fn, "eps") < 0) value_error(fn, ": eps must be non-negative, got ", eps)
  ndim <- max(x1$ndim, x2$ndim)
  d <- extra_dim(dim, ndim, fn, "dim")
  unit <- function(x) x / torch_clamp(linalg_vector_norm(x, dim = d - ndim + x$ndim, keepdim = TRUE), min = eps)
  torch_sum(unit(x1) * unit(x2), dim = d)
}

# ---- methods ------------------------------------------------------------------------------

m <- tensor_methods
for (name in c("det", "logdet", "inverse", "pinverse", "cholesky", "matrix_power", "dist")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name)
rm(m)
