# Complex tensors (complex64 = torch_cfloat(), complex128 = torch_cdouble()), as torch for R's:
# made from R complex vectors or from parts, read back as R complex vectors, their parts as
# views (x$real, x$imag, which assignment writes through), arithmetic with broadcasting, abs,
# angle and conj. The engine composes every complex op of real ones (Note [Complex tensors] in
# rcuda/ops/complex.h); other ops refuse complex input with an rcuda_dtype_error, and complex
# tensors record no gradients (docs/complex.md).

complex_call <- function(op, a, b = NULL) .Call(rc_complex, op, a, b)

is_complex_dtype <- function(name) name %in% c("complex64", "complex128")

#' @export
torch_cfloat <- function() new_dtype("complex64")
#' @export
torch_cfloat64 <- torch_cfloat
#' @export
torch_cdouble <- function() new_dtype("complex128")
#' @export
torch_cfloat128 <- torch_cdouble

#' @export
torch_complex <- function(real, imag) {
  complex_call("complex", extra_tensor(real, "torch_complex", "real"), extra_tensor(imag, "torch_complex", "imag"))
}

# abs * (cos(angle) + i sin(angle)), as torch_polar.
#' @export
torch_polar <- function(abs, angle) {
  abs <- extra_tensor(abs, "torch_polar", "abs")
  angle <- extra_tensor(angle, "torch_polar", "angle")
  torch_complex(abs * torch_cos(angle), abs * torch_sin(angle))
}

#' @export
torch_real <- function(self) complex_call("real", extra_tensor(self, "torch_real"))
#' @export
torch_imag <- function(self) complex_call("imag", extra_tensor(self, "torch_imag"))
#' @export
torch_view_as_real <- function(self) complex_call("view_as_real", extra_tensor(self, "torch_view_as_real"))
#' @export
torch_view_as_complex <- function(self) complex_call("view_as_complex", extra_tensor(self, "torch_view_as_complex"))
#' @export
torch_angle <- function(self) complex_call("angle", extra_tensor(self, "torch_angle"))
# rcuda has no lazy conjugate bit: both return a new tensor (a real one comes back as it is).
#' @export
torch_conj <- function(self) complex_call("conj", extra_tensor(self, "torch_conj"))
#' @export
torch_conj_physical <- torch_conj

#' @export
as.complex.rcuda_tensor <- function(x, ...) as.complex(.Call(rc_to_r, x))

tensor_fields$real <- function(self) complex_call("real", self)
tensor_fields$imag <- function(self) complex_call("imag", self)

local({
  m <- tensor_methods
  m$angle <- function(self) complex_call("angle", self)
  m$conj <- function(self) complex_call("conj", self)
  m$conj_physical <- m$conj
  m$cfloat <- function(self) self$to(dtype = torch_cfloat())
  m$cdouble <- function(self) self$to(dtype = torch_cdouble())
})
