# torch for R's fused products (addmm, baddbmm, ...), elementwise math (lerp, fmod, logaddexp,
# ...), linear algebra aliases (det, inverse, cholesky, ...), torch_result_type, torch_normal and
# torch_bincount, composed from the engine's ops so that they record autograd and run on any
# device. Dims are 1-based, negative from the end, as everywhere in the package.

# ---- helpers ------------------------------------------------------------------------------

# x times a number; a whole number keeps an integer tensor integer, as torch's integer scalars do.
scaled <- function(x, s) {
  if (s == 1) return(x)
  if (!is_float_tensor(x) && s == trunc(s)) s <- as.integer(s)
  x * s
}

# beta * self + alpha * product, torch's addmm family. With beta 0 self is ignored (its NaN and
# infinities do not spread, as in torch), but it must still broadcast to the product's shape.
add_scaled_product <- function(self, product, beta, alpha, fn) {
  beta <- number_arg(beta, fn, "beta")
  alpha <- number_arg(alpha, fn, "alpha")
  shape <- as.integer(product$shape)
  tryCatch(self$expand(shape), rcuda_error = function(e) {
    shape_error(fn, ": self of shape [", paste(self$shape, collapse = ", "),
                "] does not broadcast to the product's shape [", paste(shape, collapse = ", "), "]")
  })
  product <- scaled(product, alpha)
  if (beta == 0) return(product)
  scaled(self, beta) + product
}

# The ndim check of a matrix-product argument.
math_ndim <- function(x, ndim, fn, arg) {
  if (x$ndim != ndim) shape_error(fn, ": ", arg, " must be ", ndim, "-d, got ", x$ndim, "-d")
  x
}

# out_dtype: torch computes the product in that dtype (float16 inputs accumulated in float32).
with_out_dtype <- function(tensors, out_dtype) {
  if (is.null(out_dtype)) return(tensors)
  lapply(tensors, function(t) t$to(dtype = out_dtype))
}

# ---- products -----------------------------------------------------------------------------

#' @export
torch_addmm <- function(self, mat1, mat2, out_dtype, beta = 1L, alpha = 1L) {
  fn <- "torch_addmm"
  t <- list(extra_tensor(self, fn), math_ndim(extra_tensor(mat1, fn, "mat1"), 2, fn, "mat1"),
            math_ndim(extra_tensor(mat2, fn, "mat2"), 2, fn, "mat2"))
  t <- with_out_dtype(t, if (missing(out_dtype)) NULL else out_dtype)
  add_scaled_product(t[[1]], torch_mm(t[[2]], t[[3]]), beta, alpha, fn)
}

#' @export
torch_baddbmm <- function(self, batch1, batch2, out_dtype, beta = 1L, alpha = 1L) {
  fn <- "torch_baddbmm"
  t <- list(extra_tensor(self, fn), math_ndim(extra_tensor(batch1, fn, "batch1"), 3, fn, "batch1"),
            math_ndim(extra_tensor(batch2, fn, "batch2"), 3, fn, "batch2"))
  t <- with_out_dtype(t, if (missing(out_dtype)) NULL else out_dtype)
  add_scaled_product(t[[1]], torch_bmm(t[[2]], t[[3]]), beta, alpha, fn)
}

# The batch of products summed: one [n, p] matrix.
#' @export
torch_addbmm <- function(self, batch1, batch2, beta = 1L, alpha = 1L) {
  fn <- "torch_addbmm"
  batch1 <- math_ndim(extra_tensor(batch1, fn, "batch1"), 3, fn, "batch1")
  batch2 <- math_ndim(extra_tensor(batch2, fn, "batch2"), 3, fn, "batch2")
  add_scaled_product(extra_tensor(self, fn), torch_sum(torch_bmm(batch1, batch2), dim = 1L), beta, alpha, fn)
}

#' @export
torch_mv <- function(self, vec) {
  self <- math_ndim(extra_tensor(self, "torch_mv"), 2, "torch_mv", "self")
  vec <- math_ndim(extra_tensor(vec, "torch_mv", "vec"), 1, "torch_mv", "vec")
  if (self$shape[2] != vec$shape[1]) {
    shape_error("torch_mv: self has ", self$shape[2], " columns but vec has ", vec$shape[1], " elements")
  }
  torch_matmul(self, vec)
}

#' @export
torch_addmv <- function(self, mat, vec, beta = 1L, alpha = 1L) {
  add_scaled_product(extra_tensor(self, "torch_addmv"), torch_mv(mat, vec), beta, alpha, "torch_addmv")
}

#' @export
torch_addr <- function(self, vec1, vec2, beta = 1L, alpha = 1L) {
  fn <- "torch_addr"
  vec1 <- math_ndim(extra_tensor(vec1, fn, "vec1"), 1, fn, "vec1")
  vec2 <- math_ndim(extra_tensor(vec2, fn, "vec2"), 1, fn, "vec2")
  add_scaled_product(extra_tensor(self, fn), torch_outer(vec1, vec2), beta, alpha, fn)
}

# torch's dot and vdot take two 1-d tensors of one dtype and length (rcuda has no complex
# dtypes, so vdot's conjugate is the identity).
dot_product <- function(self, other, fn, arg) {
  self <- math_ndim(extra_tensor(self, fn), 1, fn, "self")
  other <- math_ndim(extra_tensor(other, fn, arg), 1, fn, arg)
  if (self$dtype != other$dtype) {
    dtype_error(fn, ": self and ", arg, " must have the same dtype, got ", self$dtype$name, " and ", other$dtype$name)
  }
  if (self$shape != other$shape) {
    shape_error(fn, ": self and ", arg, " must have the same length, got ", self$shape, " and ", other$shape)
  }
  torch_sum(self * other)
}

#' @export
torch_dot <- function(self, tensor) dot_product(self, tensor, "torch_dot", "tensor")

#' @export
torch_vdot <- function(self, other) dot_product(self, other, "torch_vdot", "other")

# Sums over the last dim of both: shape self$shape[-last] followed by other$shape[-last].
#' @export
torch_inner <- function(self, other) {
  self <- extra_tensor(self, "torch_inner")
  other <- extra_tensor(other, "torch_inner", "other")
  if (self$ndim == 0 || other$ndim == 0) return(self * other)
  a <- as.integer(self$shape)
  b <- as.integer(other$shape)
  k <- a[length(a)]
  if (k != b[length(b)]) {
    shape_error("torch_inner: the last dims of self and other must match, got ", k, " and ", b[length(b)])
  }
  rows <- self$reshape(c(-1L, k))
  cols <- other$reshape(c(-1L, k))
  torch_sum(rows$unsqueeze(2) * cols$unsqueeze(1), dim = 3L)$reshape(c(a[-length(a)], b[-length(b)]))
}

# ---- elementwise --------------------------------------------------------------------------

# self + weight * (end - self), from whichever end is nearer, as torch does, so that
# weight 1 gives end exactly.
#' @export
torch_lerp <- function(self, end, weight) {
  self <- extra_tensor(self, "torch_lerp")
  end <- extra_tensor(end, "torch_lerp", "end")
  if (!is_torch_tensor(weight)) weight <- number_arg(weight, "torch_lerp", "weight")
  diff <- end - self
  if (!is_torch_tensor(weight)) return(if (abs(weight) < 0.5) self + weight * diff else end - diff * (1 - weight))
  torch_where(weight$abs() < 0.5, self + weight * diff, end - diff * (1 - weight))
}

#' @export
torch_addcmul <- function(self, tensor1, tensor2, value = 1L) {
  fn <- "torch_addcmul"
  value <- number_arg(value, fn, "value")
  self + scaled(extra_tensor(tensor1, fn, "tensor1") * extra_tensor(tensor2, fn, "tensor2"), value)
}

#' @export
torch_addcdiv <- function(self, tensor1, tensor2, value = 1L) {
  fn <- "torch_addcdiv"
  value <- number_arg(value, fn, "value")
  tensor1 <- extra_tensor(tensor1, fn, "tensor1")
  tensor2 <- extra_tensor(tensor2, fn, "tensor2")
  if (!is_float_tensor(tensor1) && !is_float_tensor(tensor2)) {
    dtype_error(fn, ": integer division is not supported; give tensor1 or tensor2 a floating dtype")
  }
  self + scaled(tensor1 / tensor2, value)
}

# torch_clamp, also with tensor bounds (broadcast against self).
#' @export
torch_clip <- function(self, min = NULL, max = NULL) {
  self <- extra_tensor(self, "torch_clip")
  if (!is_torch_tensor(min) && !is_torch_tensor(max)) return(torch_clamp(self, min, max))
  out <- self
  if (!is.null(min)) out <- if (is_torch_tensor(min)) torch_maximum(out, min) else torch_clamp(out, min = min)
  if (!is.null(max)) out <- if (is_torch_tensor(max)) torch_minimum(out, max) else torch_clamp(out, max = max)
  out
}

#' @export
torch_square <- function(self) {
  self <- extra_tensor(self, "torch_square")
  # torch squares bool as pow(self, 2), an int64 result.
  if (self$dtype == torch_bool()) self <- self$to(dtype = torch_long())
  self * self
}

# The remainder of truncated division: it takes self's sign (remainder takes other's).
#' @export
torch_fmod <- function(self, other) {
  self <- extra_tensor(self, "torch_fmod")
  r <- torch_remainder(self, other)
  torch_where((r != 0) & ((r < 0) != (self < 0)), r - other, r)
}

# log(exp(self) + exp(other)) around the larger one, m. The gradient is exact whichever way the
# tie in maximum splits, since the result does not depend on m; an infinite m is replaced by 0
# so that equal infinities give themselves, not NaN.
#' @export
torch_logaddexp <- function(self, other) {
  self <- extra_tensor(self, "torch_logaddexp")
  other <- extra_tensor(other, "torch_logaddexp", "other")
  if (!is_float_tensor(self) && !is_float_tensor(other)) self <- self$to(dtype = torch_get_default_dtype())
  m <- torch_maximum(self, other)
  m <- torch_where(torch_isfinite(m), m, torch_zeros_like(m))
  m + torch_log(torch_exp(self - m) + torch_exp(other - m))
}

#' @export
torch_logaddexp2 <- function(self, other) {
  self <- extra_tensor(self, "torch_logaddexp2")
  other <- extra_tensor(other, "torch_logaddexp2", "other")
  torch_logaddexp(self * log(2), other * log(2)) / log(2)
}

#' @export
torch_deg2rad <- function(self) extra_tensor(self, "torch_deg2rad") * (pi / 180)

#' @export
torch_rad2deg <- function(self) extra_tensor(self, "torch_rad2deg") * (180 / pi)

# Elementwise |self - other| <= atol + rtol * |other|, or equal (equal infinities).
#' @export
torch_isclose <- function(self, other, rtol = 1e-05, atol = 1e-08, equal_nan = FALSE) {
  fn <- "torch_isclose"
  self <- extra_tensor(self, fn)
  other <- extra_tensor(other, fn, "other")
  for (arg in c("rtol", "atol")) {
    if (number_arg(get(arg), fn, arg) < 0) value_error(fn, ": ", arg, " must be non-negative, got ", get(arg))
  }
  extra_flag(equal_nan, fn, "equal_nan")
  if (self$dtype != other$dtype) {
    dtype_error(fn, ": self and other must have the same dtype, got ", self$dtype$name, " and ", other$dtype$name)
  }
  a <- if (is_float_tensor(self)) self else self$double()
  b <- if (is_float_tensor(other)) other else other$double()
  close <- (a == b) | ((a - b)$abs() <= atol + rtol * b$abs())
  if (equal_nan) close <- close | ((a != a) & (b != b))
  close
}

# TRUE where the sign bit is set: negative numbers and -0 (1 / -0 is -Inf). The engine has no
# bit view, so a NaN's sign bit is not seen.
#' @export
torch_signbit <- function(self) {
  self <- extra_tensor(self, "torch_signbit")
  if (self$dtype == torch_bool()) return(torch_zeros_like(self))
  if (!is_float_tensor(self)) return(self < 0)
  (self < 0) | ((self == 0) & ((1 / self) < 0))
}

# For real tensors, sgn is sign.
#' @export
torch_sgn <- function(self) torch_sign(extra_tensor(self, "torch_sgn"))

# 0 where self < 0, 1 where self > 0, values where self is 0.
#' @export
torch_heaviside <- function(self, values) {
  self <- extra_tensor(self, "torch_heaviside")
  values <- extra_tensor(values, "torch_heaviside", "values")
  if (self$dtype != values$dtype) {
    dtype_error("torch_heaviside: self and values must have the same dtype, got ", self$dtype$name,
                " and ", values$dtype$name)
  }
  step <- (self > 0)$to(dtype = self$dtype)
  torch_where(self == 0, values, step)
}

#' @export
torch_frac <- function(self) {
  self <- extra_tensor(self, "torch_frac")
  if (!is_float_tensor(self)) dtype_error("torch_frac: self must have a floating dtype, got ", self$dtype$name)
  self - torch_trunc(self)
}

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

# ---- dtypes and random numbers ------------------------------------------------------------

# The dtype torch's type promotion gives for an op on both: the engine's own promotion run on
# empty stand-ins (a 0-d tensor ranks below a dimensioned one, as in torch). R numbers are
# torch's wrapped scalars: doubles rank as the default dtype, integers as int64.
#' @export
torch_result_type <- function(tensor1, tensor2) {
  stand_in <- function(x, arg) {
    if (is_torch_tensor(x)) {
      if (x$ndim == 0) return(torch_zeros(1, dtype = x$dtype)$squeeze())
      return(torch_empty(0, dtype = x$dtype))
    }
    if ((!is.numeric(x) && !is.logical(x)) || length(x) != 1 || is.object(x)) {
      value_error("torch_result_type: ", arg, " must be a tensor or a number, got ", describe(x))
    }
    x
  }
  a <- stand_in(tensor1, "tensor1")
  b <- stand_in(tensor2, "tensor2")
  if (!is_torch_tensor(a) && !is_torch_tensor(b)) {
    if (is.double(a) || is.double(b)) return(torch_get_default_dtype())
    if (is.integer(a) || is.integer(b)) return(torch_long())
    return(torch_bool())
  }
  if (!is_torch_tensor(a)) return(torch_add(b, a)$dtype)
  torch_add(a, b)$dtype
}

#' @export
torch_randint_like <- function(input, low, high, dtype = NULL, layout = NULL, device = NULL,
                               requires_grad = FALSE) {
  input <- extra_tensor(input, "torch_randint_like", "input")
  check_layout(layout, "torch_randint_like")
  # torch_randint_like(x, high) draws from 0 to high - 1, as torch's overload without low.
  if (missing(high)) {
    high <- low
    low <- 0L
  }
  torch_randint(low, high, as.integer(input$shape), dtype = if (is.null(dtype)) input$dtype else dtype,
                device = if (is.null(device)) input$device else device, requires_grad = requires_grad)
}

# mean + std * a standard normal draw from rcuda's generator (torch_manual_seed repeats it).
# As in torch, the draw carries no gradient to mean or std.
#' @export
torch_normal <- function(mean, std, size = NULL, generator = NULL, ...) {
  if (missing(mean)) mean <- 0
  if (missing(std)) std <- 1
  options <- list(...)
  if (!is.null(generator)) {
    return(with_generator(generator, "torch_normal", function() torch_normal(mean, std, size, NULL, ...)))
  }
  tensors <- is_torch_tensor(mean) || is_torch_tensor(std)
  if (!is.null(size) && tensors) value_error("torch_normal: size is set, but one of mean or std is not a scalar value.")
  if (length(options) && tensors) value_error("torch_normal: options is set, but one of mean or std is not a scalar value.")
  if (!tensors && is.null(size)) value_error("torch_normal: size is not set.")
  if (!is_torch_tensor(mean)) number_arg(mean, "torch_normal", "mean")
  if (!is_torch_tensor(std) && number_arg(std, "torch_normal", "std") < 0) {
    value_error("torch_normal: std must be non-negative, got ", std)
  }
  if (!tensors) {
    requires_grad <- isTRUE(options$requires_grad)
    options$requires_grad <- NULL
    draw <- do.call(torch_randn, c(list(size_value(size, "torch_normal")), options))
    return(with_requires_grad(draw * std + mean, requires_grad))
  }
  with_no_grad({
    like <- if (is_torch_tensor(mean)) mean else std
    if (is_torch_tensor(mean) && is_torch_tensor(std)) like <- torch_zeros_like(mean) + torch_zeros_like(std)
    if (!is_float_tensor(like)) value_error("torch_normal: mean and std must have a floating dtype, got ", like$dtype$name)
    torch_randn_like(like) * std + mean
  })
}

# Counts of each value 1..max(self) (torch for R's indices are 1-based), or sums of weights.
#' @export
torch_bincount <- function(self, weights = list(), minlength = 0L) {
  fn <- "torch_bincount"
  self <- math_ndim(extra_tensor(self, fn), 1, fn, "self")
  minlength <- extra_whole(minlength, fn, "minlength")
  if (minlength < 0) value_error(fn, ": minlength must be non-negative, got ", minlength)
  if (is_float_tensor(self) || self$dtype == torch_bool()) {
    dtype_error(fn, ": self must hold integers, got ", self$dtype$name)
  }
  n <- as.integer(self$shape)
  if (n > 0) {
    lowest <- as.numeric(as_array(torch_min(self)))
    if (lowest < 1) value_error(fn, ": Indexing starts at 1 but found a ", lowest, " in self.")
  }
  size <- max(minlength, if (n > 0) as.numeric(as_array(torch_max(self))) else 0)
  if (length(weights) == 0) {
    src <- torch_ones(n, dtype = torch_long(), device = self$device)
  } else {
    src <- math_ndim(extra_tensor(weights, fn, "weights"), 1, fn, "weights")
    if (!identical(as.integer(src$shape), n)) {
      shape_error(fn, ": weights must have one element per element of self (", n, "), got ", src$shape)
    }
    # torch sums float32 weights in float32 and every other dtype in float64.
    if (src$dtype != torch_float32()) src <- src$to(dtype = torch_float64())
  }
  out <- torch_zeros(size, dtype = src$dtype, device = self$device)
  if (n == 0) return(out)
  torch_scatter_add(out, 1L, self$to(dtype = torch_long()), src)
}

# ---- integration --------------------------------------------------------------------------

# The trapezoids' areas along dim: (y[i] + y[i + 1]) / 2 times the spacing, dx or diff(x).
trapezoids <- function(y, dx, x, dim, fn) {
  y <- extra_tensor(y, fn, "y")
  if (y$ndim == 0) shape_error(fn, ": y must have at least 1 dim")
  d <- extra_dim(dim, y$ndim, fn, "dim")
  n <- as.integer(y$shape[d])
  if (n == 0) return(list(area = torch_narrow(y, d, 1L, 0L), d = d))
  heights <- (torch_narrow(y, d, 1L, n - 1L) + torch_narrow(y, d, 2L, n - 1L)) / 2
  if (is.null(x)) return(list(area = heights * number_arg(dx, fn, "dx"), d = d))
  x <- extra_tensor(x, fn, "x")
  if (x$ndim == 1) {
    if (x$shape != n) shape_error(fn, ": a 1-d x must have y's size along dim (", n, "), got ", x$shape)
    shape <- rep(1L, y$ndim)
    shape[d] <- n
    x <- x$reshape(shape)
    xd <- d
  } else {
    xd <- d - y$ndim + x$ndim
    if (xd < 1 || as.integer(x$shape[xd]) != n) shape_error(fn, ": x must have y's size along dim (", n, ")")
  }
  spacing <- torch_narrow(x, xd, 2L, n - 1L) - torch_narrow(x, xd, 1L, n - 1L)
  list(area = heights * spacing, d = d)
}

#' @export
torch_trapezoid <- function(y, dx = 1L, x, dim = -1L) {
  t <- trapezoids(y, dx, if (missing(x)) NULL else x, dim, "torch_trapezoid")
  torch_sum(t$area, dim = t$d)
}

#' @export
torch_cumulative_trapezoid <- function(y, dx = 1L, x, dim = -1L) {
  t <- trapezoids(y, dx, if (missing(x)) NULL else x, dim, "torch_cumulative_trapezoid")
  if (as.integer(t$area$shape[t$d]) == 0) return(t$area)
  torch_cumsum(t$area, dim = t$d)
}

# ---- methods ------------------------------------------------------------------------------

m <- tensor_methods
for (name in c("addmm", "addbmm", "baddbmm", "addmv", "addr", "mv", "dot", "vdot", "inner", "lerp",
               "addcmul", "addcdiv", "clip", "square", "fmod", "logaddexp", "logaddexp2", "deg2rad",
               "rad2deg", "isclose", "signbit", "sgn", "heaviside", "frac", "det", "logdet", "inverse",
               "pinverse", "cholesky", "matrix_power", "dist", "bincount")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name)

# In-place forms (Note [In-place methods as copies] in tensor-inplace.R).
m$addmm_ <- function(self, mat1, mat2, beta = 1L, alpha = 1L) {
  inplace("addmm_", self, torch_addmm, mat1, mat2, beta = beta, alpha = alpha)
}
m$lerp_ <- function(self, end, weight) inplace("lerp_", self, torch_lerp, end, weight)
m$addcmul_ <- function(self, tensor1, tensor2, value = 1L) {
  inplace("addcmul_", self, torch_addcmul, tensor1, tensor2, value = value)
}
m$addcdiv_ <- function(self, tensor1, tensor2, value = 1L) {
  inplace("addcdiv_", self, torch_addcdiv, tensor1, tensor2, value = value)
}
m$clip_ <- function(self, min = NULL, max = NULL) inplace("clip_", self, torch_clip, min = min, max = max)
m$square_ <- function(self) inplace("square_", self, torch_square)
m$fmod_ <- function(self, other) inplace("fmod_", self, torch_fmod, other)
rm(m)
