# torch for R functions built from the ops above (comparisons, where, index_select, narrow,
# cat, reshape and expand), so they carry gradients wherever those ops do. Dims are 1-based,
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
  if (d == 0 || abs(d) > ndim) {
    index_error(fn, ": ", arg, " ", d, " is out of range for a ", ndim, "-d tensor (expected ", -ndim, " to ", ndim, ", not 0)")
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

# ---- reductions ---------------------------------------------------------------------------

# Positions of dim (NULL or empty: all dims), largest first, for reducing one at a time.
extra_dims <- function(dim, ndim, fn) {
  if (is.list(dim)) dim <- unlist(dim)
  if (is.null(dim) || length(dim) == 0) return(rev(seq_len(ndim)))
  dims <- vapply(dim, extra_dim, integer(1), ndim = ndim, fn = fn, arg = "dim")
  if (anyDuplicated(dims)) value_error(fn, ": dim ", dims[anyDuplicated(dims)], " appears more than once")
  sort(dims, decreasing = TRUE)
}

amax_amin <- function(kind, self, dim, keepdim) {
  fn <- paste0("torch_a", kind)
  self <- extra_tensor(self, fn)
  extra_flag(keepdim, fn, "keepdim")
  if (self$ndim == 0) return(self$clone())
  out <- self
  for (d in extra_dims(dim, self$ndim, fn)) out <- extreme(kind, out, d, NULL, TRUE)[[1]]
  if (keepdim) return(out)
  dims <- extra_dims(dim, self$ndim, fn)
  out$reshape(as.integer(self$shape)[-dims])
}

#' @export
torch_amax <- function(self, dim = list(), keepdim = FALSE) amax_amin("max", self, dim, keepdim)

#' @export
torch_amin <- function(self, dim = list(), keepdim = FALSE) amax_amin("min", self, dim, keepdim)

#' @export
torch_count_nonzero <- function(self, dim = NULL) {
  self <- extra_tensor(self, "torch_count_nonzero")
  torch_sum(self != 0, dim = dims_value(dim, "torch_count_nonzero"), dtype = torch_long())
}

#' @export
torch_nansum <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  self <- extra_tensor(self, "torch_nansum")
  if (is_float_tensor(self)) self <- torch_where(self != self, torch_zeros_like(self), self)
  torch_sum(self, dim = dims_value(dim, "torch_nansum"), keepdim = keepdim, dtype = dtype)
}

#' @export
torch_nanmean <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  self <- extra_tensor(self, "torch_nanmean")
  if (!is_float_tensor(self)) dtype_error("torch_nanmean: self must have a floating dtype, got ", self$dtype$name)
  if (!is.null(dtype)) self <- self$to(dtype = dtype)
  dim <- dims_value(dim, "torch_nanmean")
  kept <- self == self
  torch_nansum(self, dim, keepdim) / torch_sum(kept, dim = dim, keepdim = keepdim)$to(dtype = self$dtype)
}

#' @export
torch_var_mean <- function(self, dim = NULL, unbiased = TRUE, keepdim = FALSE, correction = NULL) {
  self <- extra_tensor(self, "torch_var_mean")
  list(torch_var(self, dim, unbiased, keepdim, correction),
       if (is.null(dim)) torch_mean(self) else torch_mean(self, dim, keepdim))
}

#' @export
torch_std_mean <- function(self, dim = NULL, unbiased = TRUE, keepdim = FALSE, correction = NULL) {
  self <- extra_tensor(self, "torch_std_mean")
  list(torch_std(self, dim, unbiased, keepdim, correction),
       if (is.null(dim)) torch_mean(self) else torch_mean(self, dim, keepdim))
}

# ---- shapes -------------------------------------------------------------------------------

# Each dim's elements in reverse order.
#' @export
torch_flip <- function(self, dims) {
  self <- extra_tensor(self, "torch_flip")
  if (missing(dims) || length(dims) == 0) value_error("torch_flip: dims must name at least one dim")
  dims <- vapply(unlist(dims), extra_dim, integer(1), ndim = self$ndim, fn = "torch_flip")
  if (anyDuplicated(dims)) value_error("torch_flip: dims ", dims[anyDuplicated(dims)], " appears more than once")
  out <- self
  for (d in dims) {
    n <- as.integer(self$shape[d])
    out <- if (n > 1) torch_index_select(out, d, rev(seq_len(n))) else out$clone()
  }
  out
}

# Elements shifted along dims, wrapping around; with dims NULL, over the flattened tensor.
#' @export
torch_roll <- function(self, shifts, dims = NULL) {
  self <- extra_tensor(self, "torch_roll")
  shifts <- unlist(shifts)
  if (!is.numeric(shifts) || length(shifts) == 0 || anyNA(shifts) || any(shifts != trunc(shifts))) {
    value_error("torch_roll: shifts must be whole numbers, got ", deparse(shifts, nlines = 1)[1])
  }
  dims <- unlist(dims)
  if (length(dims) == 0) {
    if (length(shifts) != 1) value_error("torch_roll: without dims, shifts must be one number, got ", length(shifts))
    return(torch_roll(self$flatten(), shifts, 1L)$reshape(as.integer(self$shape)))
  }
  if (length(shifts) != length(dims)) {
    value_error("torch_roll: shifts and dims must have the same length, got ", length(shifts), " and ", length(dims))
  }
  dims <- vapply(dims, extra_dim, integer(1), ndim = self$ndim, fn = "torch_roll")
  out <- self
  for (i in seq_along(dims)) {
    d <- dims[i]
    n <- as.integer(self$shape[d])
    s <- if (n > 0) as.integer(shifts[i] %% n) else 0L
    out <- if (s == 0) out$clone() else torch_cat(list(torch_narrow(out, d, n - s + 1L, s), torch_narrow(out, d, 1L, n - s)), d)
  }
  out
}

# Where column - row is within diagonal of the main diagonal, over the last two dims.
triangle <- function(self, diagonal, lower, fn) {
  self <- extra_tensor(self, fn)
  diagonal <- extra_whole(diagonal, fn, "diagonal")
  if (self$ndim < 2) shape_error(fn, ": self must have at least 2 dims, got ", self$ndim)
  shape <- as.integer(self$shape)
  rows <- shape[length(shape) - 1]
  cols <- shape[length(shape)]
  row <- torch_arange(0L, rows - 1L, device = self$device)$unsqueeze(2)
  col <- torch_arange(0L, cols - 1L, device = self$device)$unsqueeze(1)
  keep <- if (lower) (col - row) <= diagonal else (col - row) >= diagonal
  torch_where(keep, self, torch_zeros_like(self))
}

#' @export
torch_tril <- function(self, diagonal = 0L) triangle(self, diagonal, TRUE, "torch_tril")

#' @export
torch_triu <- function(self, diagonal = 0L) triangle(self, diagonal, FALSE, "torch_triu")

# A vector becomes a square matrix with it on the diagonal-th diagonal; a matrix gives its
# diagonal-th diagonal as a vector (diagonal > 0 above the main one, < 0 below).
#' @export
torch_diag <- function(self, diagonal = 0L) {
  self <- extra_tensor(self, "torch_diag")
  k <- extra_whole(diagonal, "torch_diag", "diagonal")
  shape <- as.integer(self$shape)
  if (length(shape) == 1) {
    n <- shape
    m <- n + abs(k)
    padded <- if (k == 0) self else torch_cat(list(self, torch_zeros(abs(k), dtype = self$dtype, device = self$device)), 1L)
    # Row i holds v[i] at column i + k (k >= 0); column j holds v[j] at row j - k (k < 0).
    values <- if (k >= 0) padded$unsqueeze(2)$expand(c(m, m)) else padded$unsqueeze(1)$expand(c(m, m))
    idx <- torch_arange(0L, m - 1L, device = self$device)
    on_diagonal <- (idx$unsqueeze(1) - idx$unsqueeze(2)) == k
    return(torch_where(on_diagonal, values, torch_zeros_like(values)))
  }
  if (length(shape) != 2) shape_error("torch_diag: self must be 1-d or 2-d, got ", length(shape), "-d")
  rows <- shape[1]
  cols <- shape[2]
  first_row <- max(0L, -k)
  len <- max(0L, min(rows - first_row, cols - (first_row + k)))
  i <- first_row + seq_len(len) - 1L
  flat <- self$reshape(-1L)
  if (len == 0) return(torch_narrow(flat, 1L, 1L, 0L))
  torch_index_select(flat, 1L, i * cols + i + k + 1L)
}

# Each element (or each slice along dim) repeated repeats times, in place; repeats may also give
# one count per slice. With dim NULL, over the flattened tensor.
#' @export
torch_repeat_interleave <- function(self, repeats, dim = NULL, output_size = NULL) {
  self <- extra_tensor(self, "torch_repeat_interleave")
  if (is_torch_tensor(repeats)) repeats <- as.integer(as_array(repeats))
  if (!is.numeric(repeats) || length(repeats) == 0 || anyNA(repeats) || any(repeats != trunc(repeats)) || any(repeats < 0)) {
    value_error("torch_repeat_interleave: repeats must be non-negative whole numbers, got ", deparse(repeats, nlines = 1)[1])
  }
  if (is.null(dim)) {
    self <- self$flatten()
    dim <- 1L
  }
  dim <- extra_dim(dim, self$ndim, "torch_repeat_interleave", "dim")
  n <- as.integer(self$shape[dim])
  if (length(repeats) != 1 && length(repeats) != n) {
    shape_error("torch_repeat_interleave: repeats must be one number or one per slice (", n, "), got ", length(repeats))
  }
  index <- rep(seq_len(n), times = if (length(repeats) == 1) rep(repeats, n) else repeats)
  if (!is.null(output_size) && output_size != length(index)) {
    value_error("torch_repeat_interleave: output_size is ", output_size, " but the repeats give ", length(index))
  }
  if (length(index) == 0) return(torch_narrow(self, dim, 1L, 0L))
  torch_index_select(self, dim, index)
}

# The tensor tiled sizes[i] times along each dim (leading sizes add new dims), torch's repeat.
tensor_repeat <- function(self, ..., fn = "repeat") {
  sizes <- unlist(list(...), use.names = FALSE)
  if (!is.numeric(sizes) || anyNA(sizes) || any(sizes != trunc(sizes)) || any(sizes < 0)) {
    value_error(fn, ": sizes must be non-negative whole numbers, got ", deparse(sizes, nlines = 1)[1])
  }
  shape <- as.integer(self$shape)
  if (length(sizes) < length(shape)) {
    value_error(fn, ": sizes must have at least one entry per dim (", length(shape), "), got ", length(sizes))
  }
  sizes <- as.integer(sizes)
  shape <- c(rep(1L, length(sizes) - length(shape)), shape)
  # [s1, s2, ...] viewed as [1, s1, 1, s2, ...], expanded to [r1, s1, r2, s2, ...], then merged.
  spread <- as.integer(rbind(1L, shape))
  expanded <- as.integer(rbind(sizes, shape))
  self$reshape(spread)$expand(expanded)$reshape(sizes * shape)
}

#' @export
torch_tile <- function(self, dims) {
  self <- extra_tensor(self, "torch_tile")
  dims <- unlist(dims)
  if (length(dims) < self$ndim) dims <- c(rep(1L, self$ndim - length(dims)), dims)
  tensor_repeat(self, dims, fn = "torch_tile")
}

# ---- methods ------------------------------------------------------------------------------

m <- tensor_methods
for (name in c("isnan", "isinf", "isfinite", "nan_to_num", "logit", "xlogy",
               "outer", "allclose", "equal", "amax", "amin", "count_nonzero", "nansum", "nanmean",
               "flip", "roll", "tril", "triu", "diag", "repeat_interleave", "tile")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name)
m[["repeat"]] <- tensor_repeat
m$half <- dtype_conversion("float16")
rm(m)
