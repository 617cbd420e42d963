# Reductions with torch for R's arguments: 1-based dims (negative from the end), keepdim,
# 1-based indices from max/min/argmax/argmin.

#' @export
torch_sum <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  .Call(rc_reduce, "sum", self, dim, keepdim, dtype_name(dtype))
}

#' @export
torch_mean <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  .Call(rc_reduce, "mean", self, dim, keepdim, dtype_name(dtype))
}

#' @export
torch_prod <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  out <- .Call(rc_reduce, "prod", self, dim, keepdim, NULL)
  if (is.null(dtype)) out else out$to(dtype = dtype)
}

#' @export
torch_all <- function(self, dim = NULL, keepdim = FALSE) .Call(rc_reduce, "all", self, dim, keepdim, NULL)

#' @export
torch_any <- function(self, dim = NULL, keepdim = FALSE) .Call(rc_reduce, "any", self, dim, keepdim, NULL)

#' @export
torch_logsumexp <- function(self, dim, keepdim = FALSE) .Call(rc_reduce, "logsumexp", self, dim, keepdim, NULL)

# max(x) over everything; max(x, dim) -> list(values, indices); max(x, other = y) elementwise.
extreme <- function(kind, self, dim, other, keepdim) {
  if (!is.null(other)) {
    if (!is.null(dim)) value_error("torch_", kind, ": give dim or other, not both")
    return(.Call(rc_binary, if (kind == "max") "maximum" else "minimum", self, other))
  }
  .Call(rc_extreme, kind, self, dim, keepdim)
}

#' @export
torch_max <- function(self, dim = NULL, other = NULL, keepdim = FALSE) extreme("max", self, dim, other, keepdim)

#' @export
torch_min <- function(self, dim = NULL, other = NULL, keepdim = FALSE) extreme("min", self, dim, other, keepdim)

#' @export
torch_argmax <- function(self, dim = NULL, keepdim = FALSE) .Call(rc_argextreme, "argmax", self, dim, keepdim)

#' @export
torch_argmin <- function(self, dim = NULL, keepdim = FALSE) .Call(rc_argextreme, "argmin", self, dim, keepdim)

# unbiased = TRUE is Bessel's correction, as torch; `correction` overrides it.
#' @export
torch_var <- function(self, dim = NULL, unbiased = TRUE, keepdim = FALSE, correction = NULL) {
  if (is.null(correction)) correction <- if (isTRUE(unbiased)) 1 else 0
  .Call(rc_spread, "var", self, dim, correction, keepdim)
}

#' @export
torch_std <- function(self, dim = NULL, unbiased = TRUE, keepdim = FALSE, correction = NULL) {
  if (is.null(correction)) correction <- if (isTRUE(unbiased)) 1 else 0
  .Call(rc_spread, "std", self, dim, correction, keepdim)
}

#' @export
torch_norm <- function(self, p = 2, dim = NULL, keepdim = FALSE) .Call(rc_norm, self, p, dim, keepdim)

#' @export
torch_softmax <- function(self, dim, dtype = NULL) {
  if (!is.null(dtype)) self <- self$to(dtype = dtype)
  .Call(rc_along, "softmax", self, dim)
}

#' @export
torch_log_softmax <- function(self, dim, dtype = NULL) {
  if (!is.null(dtype)) self <- self$to(dtype = dtype)
  .Call(rc_along, "log_softmax", self, dim)
}

#' @export
torch_cumsum <- function(self, dim, dtype = NULL) {
  out <- .Call(rc_along, "cumsum", self, dim)
  if (is.null(dtype)) out else out$to(dtype = dtype)
}

for (name in c("sum", "mean", "prod", "all", "any", "logsumexp", "max", "min", "argmax", "argmin",
               "var", "std", "norm", "softmax", "log_softmax", "cumsum")) {
  tensor_methods[[name]] <- get(paste0("torch_", name))
}
rm(name)
