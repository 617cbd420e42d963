# Matrix products and joins.

#' @export
torch_matmul <- function(self, other) .Call(rc_matmul, "matmul", self, other)

#' @export
torch_mm <- function(self, mat2) .Call(rc_matmul, "mm", self, mat2)

#' @export
torch_bmm <- function(self, mat2) .Call(rc_matmul, "bmm", self, mat2)

#' @export
torch_cat <- function(tensors, dim = 1L) .Call(rc_join, "cat", as_tensor_list(tensors), dim)

#' @export
torch_stack <- function(tensors, dim = 1L) .Call(rc_join, "stack", as_tensor_list(tensors), dim)

as_tensor_list <- function(tensors) {
  if (is_torch_tensor(tensors)) tensors <- list(tensors)
  if (!is.list(tensors) || !all(vapply(tensors, is_torch_tensor, logical(1)))) {
    value_error("expected a list of tensors")
  }
  tensors
}

tensor_methods$matmul <- torch_matmul
tensor_methods$mm <- torch_mm
tensor_methods$bmm <- torch_bmm

# Note [%*% on R 4.2]
# R >= 4.3 dispatches %*% through the matrixOps group generic (registered in .onLoad). R 4.2
# dispatches %*% only on S4 objects. Giving every tensor the S4 bit (with setOldClass and an S4
# method) works, but then R tries S4 dispatch before S3 for every operator on a tensor, which
# cost 2 us of the 5.8 us of `a + b` (bench/RESULTS.md). So on R 4.2 the package exports its own
# %*% instead (NAMESPACE), which masks base's when rcuda is attached and hands every product
# without a tensor back to base::`%*%`. Code in other packages' namespaces still sees base's
# %*% there; torch_matmul() works everywhere.
matrix_product <- function(x, y) {
  # An R matrix takes the tensor's dtype and device, as a product needs both to agree.
  if (!is_torch_tensor(x)) x <- torch_tensor(x, dtype = y$dtype, device = y$device)
  if (!is_torch_tensor(y)) y <- torch_tensor(y, dtype = x$dtype, device = x$device)
  .Call(rc_matmul, "matmul", x, y)
}

# Exported on R < 4.3 only (NAMESPACE).
`%*%` <- function(x, y) {
  if (inherits(x, "rcuda_tensor") || inherits(y, "rcuda_tensor")) matrix_product(x, y)
  else base::`%*%`(x, y)
}

# Registered as an S3 method by .onLoad on R >= 4.3 (matrixOps does not exist on 4.2).
matrixOps.rcuda_tensor <- function(x, y) {
  if (.Generic != "%*%") value_error(.Generic, " is not implemented for rcuda tensors")
  matrix_product(x, y)
}
