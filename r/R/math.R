# The Math group for tensors (torch_* functions, `$` methods and base R's Math generics) over
# the engine's unary ops, atan2, and the cumulative ops. Each is one engine op, so gradients come
# from the engine's formulas (src/backend/unary_math.h).

math_ops <- c(
  "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "trunc", "erf",
  "erfc", "erfinv", "lgamma", "digamma", "log2", "log10", "exp2", "reciprocal"
)
for (op in math_ops) tensor_methods[[op]] <- make_unary(op)
rm(op)

#' @export
torch_tan <- make_unary("tan", convert = TRUE)
#' @export
torch_asin <- make_unary("asin", convert = TRUE)
#' @export
torch_acos <- make_unary("acos", convert = TRUE)
#' @export
torch_atan <- make_unary("atan", convert = TRUE)
#' @export
torch_sinh <- make_unary("sinh", convert = TRUE)
#' @export
torch_cosh <- make_unary("cosh", convert = TRUE)
#' @export
torch_asinh <- make_unary("asinh", convert = TRUE)
#' @export
torch_acosh <- make_unary("acosh", convert = TRUE)
#' @export
torch_atanh <- make_unary("atanh", convert = TRUE)
#' @export
torch_trunc <- make_unary("trunc", convert = TRUE)
#' @export
torch_erf <- make_unary("erf", convert = TRUE)
#' @export
torch_erfc <- make_unary("erfc", convert = TRUE)
#' @export
torch_erfinv <- make_unary("erfinv", convert = TRUE)
#' @export
torch_lgamma <- make_unary("lgamma", convert = TRUE)
#' @export
torch_digamma <- make_unary("digamma", convert = TRUE)
#' @export
torch_log2 <- make_unary("log2", convert = TRUE)
#' @export
torch_log10 <- make_unary("log10", convert = TRUE)
#' @export
torch_exp2 <- make_unary("exp2", convert = TRUE)
#' @export
torch_reciprocal <- make_unary("reciprocal", convert = TRUE)

# Aliases torch for R has.
#' @export
torch_arcsin <- torch_asin
#' @export
torch_arccos <- torch_acos
#' @export
torch_arctan <- torch_atan
#' @export
torch_fix <- torch_trunc

#' @export
torch_atan2 <- function(self, other) .Call(rc_binary, "atan2", as_tensor_arg(self), as_tensor_arg(other))
tensor_methods$atan2 <- function(self, other) torch_atan2(self, other)

# ---- cumulative ops ------------------------------------------------------------------------

cumulative <- function(kind, self, dim) {
  fn <- paste0("torch_", kind)
  self <- as_tensor_arg(self)
  if (!is_torch_tensor(self)) value_error(fn, ": self must be a tensor, got ", describe(self))
  .Call(rc_cumulative, kind, self, dims_value(dim, fn, one = TRUE))
}

#' @export
torch_cumprod <- function(self, dim, dtype = NULL) {
  out <- cumulative("cumprod", self, dim)
  if (is.null(dtype)) out else out$to(dtype = dtype)
}

# list(values, indices), 1-based indices of the running extreme (the latest on ties).
#' @export
torch_cummax <- function(self, dim) cumulative("cummax", self, dim)

#' @export
torch_cummin <- function(self, dim) cumulative("cummin", self, dim)

#' @export
torch_logcumsumexp <- function(self, dim) cumulative("logcumsumexp", self, dim)

tensor_methods$cumprod <- torch_cumprod
tensor_methods$cummax <- torch_cummax
tensor_methods$cummin <- torch_cummin
tensor_methods$logcumsumexp <- torch_logcumsumexp
