# Reductions with torch for R's arguments: 1-based dims (negative from the end), keepdim,
# 1-based indices from max/min/argmax/argmin. `self` may be an R vector or array (torch_tensor()
# makes it a tensor, as torch for R does).

# dim as the glue takes it: NULL, or whole numbers (a list of them is unlisted, as torch for R's
# int arrays), or names of self's dims (Note [Named tensors]); anything else is refused here,
# naming the function.
dims_value <- function(dim, fn, one = FALSE, self = NULL) {
  if (is.null(dim)) return(NULL)
  if (is.character(dim)) dim <- dim_index(dim, self, fn)
  if (is.list(dim) && all(vapply(dim, function(d) is.numeric(d) && length(d) == 1, logical(1)))) dim <- unlist(dim)
  if (!is.numeric(dim) || is.object(dim) || length(dim) == 0 || anyNA(dim) || any(dim != trunc(dim))) {
    value_error(fn, ": dim must be ", if (one) "a whole number" else "whole numbers", " (1-based; negative from the end), got ",
                deparse(dim, nlines = 1)[1])
  }
  if (one && length(dim) != 1) value_error(fn, ": dim must be a single number, got ", length(dim))
  dim
}

#' @export
torch_sum <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  self <- as_tensor_arg(self)
  .Call(rc_reduce, "sum", self, dims_value(dim, "torch_sum", self = self), keepdim, dtype_name(dtype))
}

#' @export
torch_mean <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  self <- as_tensor_arg(self)
  .Call(rc_reduce, "mean", self, dims_value(dim, "torch_mean", self = self), keepdim, dtype_name(dtype))
}

#' @export
torch_prod <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  self <- as_tensor_arg(self)
  out <- .Call(rc_reduce, "prod", self, dims_value(dim, "torch_prod", self = self), keepdim, NULL)
  if (is.null(dtype)) out else out$to(dtype = dtype)
}

#' @export
torch_all <- function(self, dim = NULL, keepdim = FALSE) {
  self <- as_tensor_arg(self)
  .Call(rc_reduce, "all", self, dims_value(dim, "torch_all", self = self), keepdim, NULL)
}

#' @export
torch_any <- function(self, dim = NULL, keepdim = FALSE) {
  self <- as_tensor_arg(self)
  .Call(rc_reduce, "any", self, dims_value(dim, "torch_any", self = self), keepdim, NULL)
}

#' @export
torch_logsumexp <- function(self, dim, keepdim = FALSE) {
  self <- as_tensor_arg(self)
  .Call(rc_reduce, "logsumexp", self, dims_value(dim, "torch_logsumexp", self = self), keepdim, NULL)
}

# max(x) over everything; max(x, dim) -> list(values, indices); max(x, other = y) elementwise.
extreme <- function(kind, self, dim, other, keepdim) {
  self <- as_tensor_arg(self)
  # torch_max(a, b): a tensor in dim's place is other, as torch for R's overloads take it.
  if (is_torch_tensor(dim) && is.null(other)) {
    other <- dim
    dim <- NULL
  }
  if (!is.null(other)) {
    if (!is.null(dim)) value_error("torch_", kind, ": give dim or other, not both")
    return(.Call(rc_binary, if (kind == "max") "maximum" else "minimum", self, other))
  }
  .Call(rc_extreme, kind, self, dims_value(dim, paste0("torch_", kind), one = TRUE, self = self), keepdim)
}

#' @export
torch_max <- function(self, dim = NULL, other = NULL, keepdim = FALSE) extreme("max", self, dim, other, keepdim)

#' @export
torch_min <- function(self, dim = NULL, other = NULL, keepdim = FALSE) extreme("min", self, dim, other, keepdim)

#' @export
torch_argmax <- function(self, dim = NULL, keepdim = FALSE) {
  self <- as_tensor_arg(self)
  .Call(rc_argextreme, "argmax", self, dims_value(dim, "torch_argmax", one = TRUE, self = self), keepdim)
}

#' @export
torch_argmin <- function(self, dim = NULL, keepdim = FALSE) {
  self <- as_tensor_arg(self)
  .Call(rc_argextreme, "argmin", self, dims_value(dim, "torch_argmin", one = TRUE, self = self), keepdim)
}

# unbiased = TRUE is Bessel's correction, as torch; `correction` overrides it.
#' @export
torch_var <- function(self, dim = NULL, unbiased = TRUE, keepdim = FALSE, correction = NULL) {
  if (is.null(correction)) correction <- if (isTRUE(unbiased)) 1 else 0
  self <- as_tensor_arg(self)
  .Call(rc_spread, "var", self, dims_value(dim, "torch_var", self = self), correction, keepdim)
}

#' @export
torch_std <- function(self, dim = NULL, unbiased = TRUE, keepdim = FALSE, correction = NULL) {
  if (is.null(correction)) correction <- if (isTRUE(unbiased)) 1 else 0
  self <- as_tensor_arg(self)
  .Call(rc_spread, "std", self, dims_value(dim, "torch_std", self = self), correction, keepdim)
}

# dtype: the tensor is converted to it first, so the norm is computed and returned in it.
# A dim given by name is refused, as LibTorch refuses it.
#' @export
torch_norm <- function(self, p = 2, dim = NULL, keepdim = FALSE, dtype = NULL) {
  self <- as_tensor_arg(self)
  if (is.character(dim)) {
    value_error("torch_norm: dim ", describe_value(dim), " is a dim name: a norm over named dims is not yet ",
                "supported with named tensors (give the dim's index)")
  }
  dim <- dims_value(dim, "torch_norm")
  if (!is.null(dtype)) self <- self$to(dtype = dtype)
  .Call(rc_norm, self, p, dim, keepdim)
}

#' @export
torch_softmax <- function(self, dim, dtype = NULL) {
  self <- as_tensor_arg(self)
  dim <- dims_value(dim, "torch_softmax", one = TRUE, self = self)
  if (!is.null(dtype)) self <- self$to(dtype = dtype)
  .Call(rc_along, "softmax", self, dim)
}

#' @export
torch_log_softmax <- function(self, dim, dtype = NULL) {
  self <- as_tensor_arg(self)
  dim <- dims_value(dim, "torch_log_softmax", one = TRUE, self = self)
  if (!is.null(dtype)) self <- self$to(dtype = dtype)
  .Call(rc_along, "log_softmax", self, dim)
}

#' @export
torch_cumsum <- function(self, dim, dtype = NULL) {
  self <- as_tensor_arg(self)
  out <- .Call(rc_along, "cumsum", self, dims_value(dim, "torch_cumsum", one = TRUE, self = self))
  if (is.null(dtype)) out else out$to(dtype = dtype)
}

for (name in c("sum", "mean", "prod", "all", "any", "logsumexp", "max", "min", "argmax", "argmin",
               "var", "std", "norm", "softmax", "log_softmax", "cumsum")) {
  tensor_methods[[name]] <- get(paste0("torch_", name))
}
rm(name)
