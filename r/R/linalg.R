# Matrix products and joins.

#' @export
torch_matmul <- function(self, other) {
  if (is_sparse_tensor(self)) return(torch_sparse_mm(self, other))  # sparse.R
  .Call(rc_matmul, "matmul", as_tensor_arg(self), as_tensor_arg(other))
}

#' @export
torch_mm <- function(self, mat2) {
  if (is_sparse_tensor(self)) return(torch_sparse_mm(self, mat2))  # sparse.R
  .Call(rc_matmul, "mm", as_tensor_arg(self), as_tensor_arg(mat2))
}

#' @export
torch_bmm <- function(self, mat2) .Call(rc_matmul, "bmm", as_tensor_arg(self), as_tensor_arg(mat2))

# A dim given by name is the first tensor's; the result keeps the names the tensors share
# (Note [Named tensors]).
#' @export
torch_cat <- function(tensors, dim = 1L) {
  tensors <- as_tensor_list(tensors, "torch_cat")
  if (is.character(dim)) dim <- dim_index(dim, if (length(tensors)) tensors[[1]], "torch_cat")
  out <- .Call(rc_join, "cat", tensors, dim)
  names <- if (length(tensors)) tensor_names(tensors[[1]])
  if (is.null(names) || !all(vapply(tensors, function(t) identical(tensor_names(t), names), logical(1)))) return(out)
  with_names(out, names)
}

#' @export
torch_stack <- function(tensors, dim = 1L) .Call(rc_join, "stack", as_tensor_list(tensors, "torch_stack"), dim)

# A list of tensors; R vectors and arrays in it become tensors, as torch for R converts them.
as_tensor_list <- function(tensors, fn) {
  if (is_torch_tensor(tensors)) tensors <- list(tensors)
  if (!is.list(tensors)) value_error(fn, ": tensors must be a list of tensors, got ", class(tensors)[1])
  tensors <- lapply(tensors, as_tensor_arg)
  bad <- which(!vapply(tensors, is_torch_tensor, logical(1)))
  if (length(bad)) {
    value_error(fn, ": tensors[[", bad[1], "]] is an R ", class(tensors[[bad[1]]])[1], ", not a tensor")
  }
  tensors
}

tensor_methods$matmul <- torch_matmul
tensor_methods$mm <- torch_mm
tensor_methods$bmm <- torch_bmm

# %*% reaches this through S4 methods (R/s4.R): R 4.2 dispatches %*% only on S4 objects.
matrix_product <- function(x, y) {
  if (is_sparse_tensor(x)) return(torch_sparse_mm(x, y))  # sparse.R
  # An R matrix takes the tensor's dtype and device, as a product needs both to agree.
  if (!is_torch_tensor(x)) x <- torch_tensor(x, dtype = y$dtype, device = y$device)
  if (!is_torch_tensor(y)) y <- torch_tensor(y, dtype = x$dtype, device = x$device)
  .Call(rc_matmul, "matmul", x, y)
}

