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
  exp = "exp", expm1 = "expm1", log1p = "log1p", cos = "cos", sin = "sin", tanh = "tanh",
  tan = "tan", acos = "acos", asin = "asin", atan = "atan", cosh = "cosh", sinh = "sinh",
  acosh = "acosh", asinh = "asinh", atanh = "atanh", trunc = "trunc", lgamma = "lgamma",
  digamma = "digamma", log2 = "log2", log10 = "log10"
)

# Base R's Math group: one engine op each; cumsum, cumprod, cummax and cummin run over the
# flattened tensor, as base R's do over a vector (and cummax/cummin give the values only).
#' @export
Math.rcuda_tensor <- function(x, ...) {
  switch(.Generic,
    log = {
      base <- list(...)$base
      out <- .Call(rc_unary, "log", x)
      if (is.null(base)) out else out / log(base)
    },
    cumsum = .Call(rc_along, "cumsum", x$flatten(), 1L),
    cumprod = .Call(rc_cumulative, "cumprod", x$flatten(), 1L),
    cummax = .Call(rc_cumulative, "cummax", x$flatten(), 1L)[[1]],
    cummin = .Call(rc_cumulative, "cummin", x$flatten(), 1L)[[1]],
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

# torch for R's methods: sum(x, dim = 1, keepdim = TRUE) and prod() reduce along dim; max(a, b)
# and min(a, b) are the largest (smallest) element of all their arguments, and sum/prod of several
# arguments add (multiply) each one's total. Beyond torch for R (whose max() and min() take no
# dim), max/min/any/all take dim and keepdim as torch_max() and friends do.
#' @export
Summary.rcuda_tensor <- function(..., na.rm = FALSE) {
  if (!identical(na.rm, FALSE)) value_error(.Generic, "(): tensors have no NA to remove; na.rm must be FALSE")
  args <- list(...)
  named <- if (is.null(names(args))) rep(FALSE, length(args)) else names(args) != ""
  opts <- args[named]
  values <- args[!named]
  unknown <- setdiff(names(opts), c("dim", "keepdim"))
  if (length(unknown)) value_error(.Generic, "(): unknown argument ", unknown[1], " (expected dim or keepdim)")
  if (!is.null(opts$dim)) {
    if (length(values) != 1) value_error(.Generic, "(): dim reduces one tensor, got ", length(values), " arguments")
    x <- values[[1]]
    keepdim <- if (is.null(opts$keepdim)) FALSE else opts$keepdim
    return(switch(.Generic,
      sum = torch_sum(x, dim = opts$dim, keepdim = keepdim),
      prod = torch_prod(x, dim = opts$dim, keepdim = keepdim),
      max = torch_max(x, dim = opts$dim, keepdim = keepdim),
      min = torch_min(x, dim = opts$dim, keepdim = keepdim),
      any = torch_any(x, dim = opts$dim, keepdim = keepdim),
      all = torch_all(x, dim = opts$dim, keepdim = keepdim),
      value_error(.Generic, "() takes no dim for tensors")
    ))
  }
  totals <- function(f) lapply(values, function(v) f(as_tensor_arg(v)))
  switch(.Generic,
    sum = Reduce(`+`, totals(torch_sum)),
    prod = Reduce(`*`, totals(torch_prod)),
    max = Reduce(torch_maximum, totals(torch_max)),
    min = Reduce(torch_minimum, totals(torch_min)),
    any = Reduce(torch_logical_or, totals(torch_any)),
    all = Reduce(torch_logical_and, totals(torch_all)),
    range = torch_stack(list(Reduce(torch_minimum, totals(torch_min)), Reduce(torch_maximum, totals(torch_max)))),
    value_error(.Generic, "() is not implemented for rcuda tensors")
  )
}

#' @export
mean.rcuda_tensor <- function(x, dim, keepdim = FALSE, na.rm = FALSE, ...) {
  if (!identical(na.rm, FALSE)) value_error("mean(): tensors have no NA to remove; na.rm must be FALSE")
  if (missing(dim)) return(torch_mean(x))
  torch_mean(x, dim = dim, keepdim = keepdim)
}

# torch for R runs torch_tensor() on an R vector or array given where a tensor is expected
# (torch_max(c(2, 1), other = c(1, 2)), torch_stack() of matrices); NULL and tensors pass.
as_tensor_arg <- function(x) {
  if (is.null(x) || is_torch_tensor(x)) return(x)
  if ((is.numeric(x) || is.logical(x) || is.complex(x)) && !is.object(x)) return(torch_tensor(x))
  x
}

# ---- torch_* functions and methods over one op ----------------------------------------------

unary_ops <- c(
  "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
  "sigmoid", "relu", "silu", "floor", "ceil", "round", "neg", "logical_not"
)
binary_ops <- c(
  "mul", "div", "remainder", "floor_divide", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
  "logical_and", "logical_or", "logical_xor"
)

# The methods get a tensor as self; the torch_* functions (convert = TRUE) also take R values.
make_unary <- function(op, convert = FALSE) {
  force(op)
  if (convert) return(function(self) .Call(rc_unary, op, as_tensor_arg(self)))
  function(self) .Call(rc_unary, op, self)
}
make_binary <- function(op, convert = FALSE) {
  force(op)
  if (convert) return(function(self, other) .Call(rc_binary, op, as_tensor_arg(self), other))
  function(self, other) .Call(rc_binary, op, self, other)
}

for (op in unary_ops) tensor_methods[[op]] <- make_unary(op)
for (op in binary_ops) tensor_methods[[op]] <- make_binary(op)
rm(op)

# torch for R's x$`__and__`(other), `__or__` and `__xor__` (Python's &, | and ^): bitwise ops,
# which on bool tensors are the logical ones. The engine has no bitwise kernels for integer
# tensors, so those are refused by name rather than given the logical ops' answers (5 & 3 is 1,
# where logical_and says TRUE); floating tensors are refused, as in torch.
make_bitwise_method <- function(name, op) {
  force(name)
  force(op)
  function(self, other) {
    if (is.logical(other) && !is.object(other)) {
      other_dtype <- "bool"
      if (length(other) != 1) other <- torch_tensor(other, device = self$device)
    } else {
      other_dtype <- if (is_torch_tensor(other)) dtype_of(other) else class(other)[1]
    }
    if (dtype_of(self) != "bool" || other_dtype != "bool") {
      dtype_error(name, ": rcuda computes it for bool tensors and logical values only (it has no ",
                  "bitwise kernels for integer tensors), got self of dtype ", dtype_labels[[dtype_of(self)]],
                  " and other ", if (is_torch_tensor(other)) paste("of dtype", dtype_labels[[other_dtype]])
                  else paste("an R", other_dtype))
    }
    .Call(rc_binary, op, self, other)
  }
}
tensor_methods$`__and__` <- make_bitwise_method("__and__", "logical_and")
tensor_methods$`__or__` <- make_bitwise_method("__or__", "logical_or")
tensor_methods$`__xor__` <- make_bitwise_method("__xor__", "logical_xor")

#' @export
torch_abs <- make_unary("abs", convert = TRUE)
#' @export
torch_sign <- make_unary("sign", convert = TRUE)
#' @export
torch_exp <- make_unary("exp", convert = TRUE)
#' @export
torch_expm1 <- make_unary("expm1", convert = TRUE)
#' @export
torch_log <- make_unary("log", convert = TRUE)
#' @export
torch_log1p <- make_unary("log1p", convert = TRUE)
#' @export
torch_sqrt <- make_unary("sqrt", convert = TRUE)
#' @export
torch_rsqrt <- make_unary("rsqrt", convert = TRUE)
#' @export
torch_sin <- make_unary("sin", convert = TRUE)
#' @export
torch_cos <- make_unary("cos", convert = TRUE)
#' @export
torch_tanh <- make_unary("tanh", convert = TRUE)
#' @export
torch_sigmoid <- make_unary("sigmoid", convert = TRUE)
#' @export
torch_relu <- make_unary("relu", convert = TRUE)
#' @export
torch_floor <- make_unary("floor", convert = TRUE)
#' @export
torch_ceil <- make_unary("ceil", convert = TRUE)
#' @export
torch_round <- make_unary("round", convert = TRUE)
#' @export
torch_neg <- make_unary("neg", convert = TRUE)
#' @export
torch_logical_not <- make_unary("logical_not", convert = TRUE)

#' @export
torch_mul <- make_binary("mul", convert = TRUE)
#' @export
torch_div <- make_binary("div", convert = TRUE)
#' @export
torch_remainder <- make_binary("remainder", convert = TRUE)
#' @export
torch_floor_divide <- make_binary("floor_divide", convert = TRUE)
#' @export
torch_maximum <- make_binary("maximum", convert = TRUE)
#' @export
torch_minimum <- make_binary("minimum", convert = TRUE)
#' @export
torch_eq <- make_binary("eq", convert = TRUE)
#' @export
torch_ne <- make_binary("ne", convert = TRUE)
#' @export
torch_lt <- make_binary("lt", convert = TRUE)
#' @export
torch_le <- make_binary("le", convert = TRUE)
#' @export
torch_gt <- make_binary("gt", convert = TRUE)
#' @export
torch_ge <- make_binary("ge", convert = TRUE)
#' @export
torch_logical_and <- make_binary("logical_and", convert = TRUE)
#' @export
torch_logical_or <- make_binary("logical_or", convert = TRUE)
#' @export
torch_logical_xor <- make_binary("logical_xor", convert = TRUE)

#' @export
torch_add <- function(self, other, alpha = 1L) {
  self <- as_tensor_arg(self)
  if (alpha == 1) return(.Call(rc_binary, "add", self, other))
  if (!is_torch_tensor(other)) return(.Call(rc_binary, "add", self, other * alpha))
  .Call(rc_add_alpha, self, other, alpha, FALSE)
}

#' @export
torch_sub <- function(self, other, alpha = 1L) {
  self <- as_tensor_arg(self)
  if (alpha == 1) return(.Call(rc_binary, "sub", self, other))
  if (!is_torch_tensor(other)) return(.Call(rc_binary, "sub", self, other * alpha))
  .Call(rc_add_alpha, self, other, alpha, TRUE)
}

#' @export
torch_pow <- function(self, exponent) {
  .Call(rc_binary, "pow", as_tensor_arg(self), exponent)
}

#' @export
torch_clamp <- function(self, min = NULL, max = NULL) .Call(rc_clamp, as_tensor_arg(self), min, max)

#' @export
torch_gelu <- function(self, approximate = "none") .Call(rc_gelu, as_tensor_arg(self), approximate)

# torch_where(condition) is torch_nonzero(condition, as_list = TRUE), as torch for R.
#' @export
torch_where <- function(condition, self = NULL, other = NULL) {
  condition <- as_tensor_arg(condition)
  if (!is_torch_tensor(condition)) value_error("torch_where: condition must be a tensor, got ", class(condition)[1])
  if (is.null(self) != is.null(other)) {
    value_error("torch_where: give both self and other, or neither; got only ", if (is.null(self)) "other" else "self")
  }
  if (is.null(self)) return(torch_nonzero(condition, as_list = TRUE))
  # Numbers stay numbers (each keeps its own dtype); longer R vectors become tensors.
  if (length(self) > 1 || is.array(self)) self <- as_tensor_arg(self)
  if (length(other) > 1 || is.array(other)) other <- as_tensor_arg(other)
  .Call(rc_where, condition, self, other)
}

# 1-based indices of the nonzero (TRUE) elements, in row-major order: a long tensor with one row
# per element, or with as_list = TRUE one long vector per dim (torch's as_tuple).
#' @export
torch_nonzero <- function(self, as_list = FALSE) {
  self <- as_tensor_arg(self)
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
