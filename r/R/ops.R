# Arithmetic, comparisons and math: base R operators (Ops and Math group generics), the
# torch_* functions and the `$` methods, all over two .Call entry points (rc_unary and
# rc_binary) that take the engine's op name. The operator path is kept to one dispatch and one
# .Call: it is what per-element R loops pay for (bench/bench_r_overhead.R).

# The engine's op for each binary base R operator; rc_binary accepts a tensor, a number or an
# R vector on either side, so a method is one .Call. `%%` and `%/%` round toward minus
# infinity, as base R (and torch's remainder and floor_divide), so
# a == (a %/% b) * b + a %% b; torch for R truncates in both (fmod, rounding_mode = "trunc").
operator_ops <- c(
  "+" = "add", "-" = "sub", "*" = "mul", "/" = "div", "^" = "pow", "%%" = "remainder",
  "%/%" = "floor_divide",
  "==" = "eq", "!=" = "ne", "<" = "lt", "<=" = "le", ">" = "gt", ">=" = "ge",
  "&" = "logical_and", "|" = "logical_or"
)

# Operators normally arrive through their S4 methods (Note [Operator dispatch] in s4.R); this
# group method serves `!` and any call S4 dispatch passes on. operator_ops names every binary
# member of the Ops group; its unary members are !, - and +.
#' @export
Ops.rcuda_tensor <- function(e1, e2) {
  if (.Generic == "!") return(.Call(rc_unary, "logical_not", e1))
  if (missing(e2)) return(if (.Generic == "-") .Call(rc_unary, "neg", e1) else e1)
  .Call(rc_binary, operator_ops[[.Generic]], e1, e2)
}

math_names <- c(
  abs = "abs", sign = "sign", sqrt = "sqrt", floor = "floor", ceiling = "ceil", round = "round",
  exp = "exp", expm1 = "expm1", log1p = "log1p", cos = "cos", sin = "sin", tanh = "tanh"
)

#' @export
Math.rcuda_tensor <- function(x, ...) {
  switch(.Generic,
    log = {
      base <- list(...)$base
      out <- .Call(rc_unary, "log", x)
      if (is.null(base)) out else out / log(base)
    },
    log2 = .Call(rc_unary, "log", x) / log(2),
    log10 = .Call(rc_unary, "log", x) / log(10),
    cumsum = .Call(rc_along, "cumsum", x$flatten(), 1L),
    trunc = {
      # Toward zero: floor for positives, ceiling for negatives.
      torch_where(x >= 0, .Call(rc_unary, "floor", x), .Call(rc_unary, "ceil", x))
    },
    {
      op <- math_names[.Generic]
      if (is.na(op)) value_error(.Generic, "() is not implemented for rcuda tensors")
      if (op == "round" && length(list(...)) && list(...)[[1]] != 0) {
        value_error("round(): digits other than 0 are not supported for tensors")
      }
      .Call(rc_unary, op, x)
    }
  )
}

#' @export
Summary.rcuda_tensor <- function(..., na.rm = FALSE) {
  args <- list(...)
  if (length(args) != 1) value_error(.Generic, "(): expected one tensor")
  x <- args[[1]]
  switch(.Generic,
    sum = .Call(rc_reduce, "sum", x, NULL, FALSE, NULL),
    prod = .Call(rc_reduce, "prod", x, NULL, FALSE, NULL),
    max = .Call(rc_extreme, "max", x, NULL, FALSE),
    min = .Call(rc_extreme, "min", x, NULL, FALSE),
    any = .Call(rc_reduce, "any", x, NULL, FALSE, NULL),
    all = .Call(rc_reduce, "all", x, NULL, FALSE, NULL),
    range = torch_stack(list(.Call(rc_extreme, "min", x, NULL, FALSE), .Call(rc_extreme, "max", x, NULL, FALSE))),
    value_error(.Generic, "() is not implemented for rcuda tensors")
  )
}

#' @export
mean.rcuda_tensor <- function(x, ...) .Call(rc_reduce, "mean", x, NULL, FALSE, NULL)

# ---- torch_* functions and methods over one op ----------------------------------------------

unary_ops <- c(
  "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
  "sigmoid", "relu", "silu", "floor", "ceil", "round", "neg", "logical_not"
)
binary_ops <- c(
  "mul", "div", "remainder", "floor_divide", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
  "logical_and", "logical_or", "logical_xor"
)

make_unary <- function(op) {
  force(op)
  function(self) .Call(rc_unary, op, self)
}
make_binary <- function(op) {
  force(op)
  function(self, other) .Call(rc_binary, op, self, other)
}

for (op in unary_ops) tensor_methods[[op]] <- make_unary(op)
for (op in binary_ops) tensor_methods[[op]] <- make_binary(op)
rm(op)

#' @export
torch_abs <- make_unary("abs")
#' @export
torch_sign <- make_unary("sign")
#' @export
torch_exp <- make_unary("exp")
#' @export
torch_expm1 <- make_unary("expm1")
#' @export
torch_log <- make_unary("log")
#' @export
torch_log1p <- make_unary("log1p")
#' @export
torch_sqrt <- make_unary("sqrt")
#' @export
torch_rsqrt <- make_unary("rsqrt")
#' @export
torch_sin <- make_unary("sin")
#' @export
torch_cos <- make_unary("cos")
#' @export
torch_tanh <- make_unary("tanh")
#' @export
torch_sigmoid <- make_unary("sigmoid")
#' @export
torch_relu <- make_unary("relu")
#' @export
torch_floor <- make_unary("floor")
#' @export
torch_ceil <- make_unary("ceil")
#' @export
torch_round <- make_unary("round")
#' @export
torch_neg <- make_unary("neg")
#' @export
torch_logical_not <- make_unary("logical_not")

#' @export
torch_mul <- make_binary("mul")
#' @export
torch_div <- make_binary("div")
#' @export
torch_remainder <- make_binary("remainder")
#' @export
torch_floor_divide <- make_binary("floor_divide")
#' @export
torch_maximum <- make_binary("maximum")
#' @export
torch_minimum <- make_binary("minimum")
#' @export
torch_eq <- make_binary("eq")
#' @export
torch_ne <- make_binary("ne")
#' @export
torch_lt <- make_binary("lt")
#' @export
torch_le <- make_binary("le")
#' @export
torch_gt <- make_binary("gt")
#' @export
torch_ge <- make_binary("ge")
#' @export
torch_logical_and <- make_binary("logical_and")
#' @export
torch_logical_or <- make_binary("logical_or")
#' @export
torch_logical_xor <- make_binary("logical_xor")

#' @export
torch_add <- function(self, other, alpha = 1L) {
  if (alpha == 1) return(.Call(rc_binary, "add", self, other))
  if (!is_torch_tensor(other)) return(.Call(rc_binary, "add", self, other * alpha))
  .Call(rc_add_alpha, self, other, alpha, FALSE)
}

#' @export
torch_sub <- function(self, other, alpha = 1L) {
  if (alpha == 1) return(.Call(rc_binary, "sub", self, other))
  if (!is_torch_tensor(other)) return(.Call(rc_binary, "sub", self, other * alpha))
  .Call(rc_add_alpha, self, other, alpha, TRUE)
}

#' @export
torch_pow <- function(self, exponent) {
  .Call(rc_binary, "pow", self, exponent)
}

#' @export
torch_clamp <- function(self, min = NULL, max = NULL) .Call(rc_clamp, self, min, max)

#' @export
torch_gelu <- function(self, approximate = "none") .Call(rc_gelu, self, approximate)

# torch_where(condition) is torch_nonzero(condition, as_list = TRUE), as torch for R.
#' @export
torch_where <- function(condition, self = NULL, other = NULL) {
  if (!is_torch_tensor(condition)) value_error("torch_where: condition must be a tensor, got ", class(condition)[1])
  if (is.null(self) != is.null(other)) {
    value_error("torch_where: give both self and other, or neither; got only ", if (is.null(self)) "other" else "self")
  }
  if (is.null(self)) return(torch_nonzero(condition, as_list = TRUE))
  .Call(rc_where, condition, self, other)
}

# 1-based indices of the nonzero (TRUE) elements, in row-major order: a long tensor with one row
# per element, or with as_list = TRUE one long vector per dim (torch's as_tuple).
#' @export
torch_nonzero <- function(self, as_list = FALSE) {
  if (!is_torch_tensor(self)) value_error("torch_nonzero: self must be a tensor, got ", class(self)[1])
  if (!is.logical(as_list) || length(as_list) != 1 || is.na(as_list)) {
    value_error("torch_nonzero: as_list must be TRUE or FALSE, got ", deparse(as_list)[1])
  }
  .Call(rc_nonzero, self, as_list)
}

tensor_methods$add <- torch_add
tensor_methods$sub <- torch_sub
tensor_methods$pow <- torch_pow
tensor_methods$clamp <- torch_clamp
tensor_methods$gelu <- torch_gelu
tensor_methods$where <- function(self, condition, other) torch_where(condition, self, other)
tensor_methods$nonzero <- function(self, as_list = FALSE) torch_nonzero(self, as_list)
