# torch for R's elementwise tests and functions built from the engine's ops (comparisons, where,
# log, mul), so they carry gradients wherever those ops do: isnan, isinf, isfinite, nan_to_num,
# logit, xlogy, outer, and the whole-tensor comparisons allclose and equal. Also the argument
# helpers (extra_*) that the composed torch_* functions of the package share. Dims are 1-based,
# negative from the end, as everywhere in the package.

# A tensor argument, or an error naming the function and the argument.
extra_tensor <- function(x, fn, arg = "self") {
  x <- as_tensor_arg(x)
  if (!is_torch_tensor(x)) value_error(fn, ": ", arg, " must be a tensor, got ", describe(x))
  x
}

# One 1-based dim (negative from the end) as a positive position among ndim dims.
extra_dim <- function(d, ndim, fn, arg = "dims") {
  if (!is.numeric(d) || length(d) != 1 || is.na(d) || d != trunc(d)) {
    value_error(fn, ": ", arg, " must be whole numbers (1-based; negative from the end), got ", deparse(d, nlines = 1)[1])
  }
  # (torch for R's words and classes, which scripts and its tests match)
  if (d == 0) value_error(fn, ": ", arg, ": Dimension is 1-based, but found 0.")
  if (abs(d) > ndim) {
    index_error(fn, ": ", arg, ": ", dim_out_of_range_words(d, ndim))
  }
  as.integer(if (d > 0) d else ndim + d + 1)
}

extra_flag <- function(x, fn, arg) {
  if (!is.logical(x) || length(x) != 1 || is.na(x)) value_error(fn, ": ", arg, " must be TRUE or FALSE, got ", deparse(x, nlines = 1)[1])
  x
}

extra_whole <- function(x, fn, arg) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || x != trunc(x)) {
    value_error(fn, ": ", arg, " must be a whole number, got ", deparse(x, nlines = 1)[1])
  }
  as.integer(x)
}

is_float_tensor <- function(x) is_floating_dtype(.Call(rc_meta, x)[[2]])

# ---- elementwise -------------------------------------------------------------------------

#' @export
torch_isnan <- function(self) {
  self <- extra_tensor(self, "torch_isnan")
  if (!is_float_tensor(self)) return(torch_zeros_like(self, dtype = torch_bool()))
  self != self
}

#' @export
torch_isinf <- function(self) {
  self <- extra_tensor(self, "torch_isinf")
  if (!is_float_tensor(self)) return(torch_zeros_like(self, dtype = torch_bool()))
  self$abs() == Inf
}

#' @export
torch_isfinite <- function(self) {
  self <- extra_tensor(self, "torch_isfinite")
  if (!is_float_tensor(self)) return(torch_ones_like(self, dtype = torch_bool()))
  # x - x is 0 for finite x and NaN for NaN and infinities.
  (self - self) == 0
}

# The largest finite value of each floating dtype (torch's finfo(dtype)$max).
float_max <- c(float32 = 3.4028234663852886e38, float64 = .Machine$double.xmax, float16 = 65504,
               bfloat16 = 3.3895313892515355e38)

#' @export
torch_nan_to_num <- function(self, nan = 0, posinf = NULL, neginf = NULL) {
  self <- extra_tensor(self, "torch_nan_to_num")
  for (arg in c("nan", "posinf", "neginf")) {
    v <- get(arg)
    if (!is.null(v) && (!is.numeric(v) || length(v) != 1 || is.na(v))) {
      value_error("torch_nan_to_num: ", arg, " must be a number or NULL, got ", deparse(v, nlines = 1)[1])
    }
  }
  if (!is_float_tensor(self)) return(self$clone())
  big <- float_max[[.Call(rc_meta, self)[[2]]]]
  if (is.null(posinf)) posinf <- big
  if (is.null(neginf)) neginf <- -big
  out <- torch_where(self != self, nan, self)
  out <- torch_where(self == Inf, posinf, out)
  torch_where(self == -Inf, neginf, out)
}

#' @export
torch_logit <- function(self, eps = NULL) {
  self <- extra_tensor(self, "torch_logit")
  if (!is.null(eps)) {
    if (!is.numeric(eps) || length(eps) != 1 || is.na(eps) || eps < 0 || eps > 0.5) {
      value_error("torch_logit: eps must be NULL or a number in [0, 0.5], got ", deparse(eps, nlines = 1)[1])
    }
    self <- torch_clamp(self, eps, 1 - eps)
  }
  torch_log(self / (1 - self))
}

# x * log(y), 0 where x is 0 (unless y is NaN), as torch's xlogy.
#' @export
torch_xlogy <- function(self, other) {
  self <- extra_tensor(self, "torch_xlogy")
  if (!is_torch_tensor(other) && (!is.numeric(other) || is.object(other))) {
    value_error("torch_xlogy: other must be a tensor or a number, got ", describe(other))
  }
  # A number takes self's floating dtype (a float64 self stays float64), as a scalar in torch;
  # longer R vectors become tensors as torch_tensor() makes them.
  if (!is_torch_tensor(other) && length(other) == 1 && !is.array(other)) {
    other <- torch_full_like(self, other,
                             dtype = if (is_float_tensor(self)) NULL else torch_get_default_dtype())
  }
  other <- as_tensor_arg(other)
  product <- self * torch_log(other)
  torch_where((self == 0) & (other == other), torch_zeros_like(product), product)
}

#' @export
torch_outer <- function(self, vec2) {
  self <- extra_tensor(self, "torch_outer")
  vec2 <- extra_tensor(vec2, "torch_outer", "vec2")
  if (self$ndim != 1) shape_error("torch_outer: self must be 1-d, got ", self$ndim, "-d")
  if (vec2$ndim != 1) shape_error("torch_outer: vec2 must be 1-d, got ", vec2$ndim, "-d")
  self$unsqueeze(2) * vec2$unsqueeze(1)
}

# ---- comparisons of whole tensors ---------------------------------------------------------

# TRUE when every element of self is within atol + rtol * |other| of other's (broadcasting).
#' @export
torch_allclose <- function(self, other, rtol = 1e-05, atol = 1e-08, equal_nan = FALSE) {
  self <- extra_tensor(self, "torch_allclose")
  other <- extra_tensor(other, "torch_allclose", "other")
  for (arg in c("rtol", "atol")) {
    v <- get(arg)
    if (!is.numeric(v) || length(v) != 1 || is.na(v) || v < 0) {
      value_error("torch_allclose: ", arg, " must be a non-negative number, got ", deparse(v, nlines = 1)[1])
    }
  }
  extra_flag(equal_nan, "torch_allclose", "equal_nan")
  # (complex tensors compare as they are: |a - b| is their modulus)
  a <- if (is_float_tensor(self) || self$is_complex()) self else self$double()
  b <- if (is_float_tensor(other) || other$is_complex()) other else other$double()
  # a == b covers equal infinities, whose difference is NaN.
  close <- (a == b) | ((a - b)$abs() <= atol + rtol * b$abs())
  if (equal_nan) close <- close | ((a != a) & (b != b))
  isTRUE(as.logical(as_array(torch_all(close))))
}

# TRUE when self and other have the same shape and equal elements.
#' @export
torch_equal <- function(self, other) {
  self <- extra_tensor(self, "torch_equal")
  other <- extra_tensor(other, "torch_equal", "other")
  if (!identical(as.integer(self$shape), as.integer(other$shape))) return(FALSE)
  isTRUE(as.logical(as_array(torch_all(self == other))))
}

# ---- methods ------------------------------------------------------------------------------

m <- tensor_methods
for (name in c("isnan", "isinf", "isfinite", "nan_to_num", "logit", "xlogy", "outer", "allclose",
               "equal")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name)
m$half <- dtype_conversion("float16")
rm(m)
