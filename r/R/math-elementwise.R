# torch for R's elementwise math composed from the engine's ops (lerp, addcmul, addcdiv, clip,
# square, fmod, logaddexp, deg2rad, isclose, signbit, sgn, heaviside, frac), so that they
# record autograd and run on any device.

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

# ---- methods ------------------------------------------------------------------------------

m <- tensor_methods
for (name in c("lerp", "addcmul", "addcdiv", "clip", "square", "fmod", "logaddexp", "logaddexp2",
               "deg2rad", "rad2deg", "isclose", "signbit", "sgn", "heaviside", "frac")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name)

# In-place forms (Note [In-place methods as copies] in tensor-inplace.R).
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
