# torch for R's methods that take their shape or dtype from another tensor or from self (the
# *_as and new_* methods, nelement, is_floating_point, is_complex), torch_numel,
# torch_narrow_copy, torch_one_hot and the one-sided clamps. Each is a composition of rcuda's own
# ops, so it records for autograd and runs on the CPU and CUDA alike. Dims and indices count
# from 1, as in torch for R.

convenience_tensor <- function(x, fn, arg) {
  if (!is_torch_tensor(x)) value_error(fn, ": ", arg, " must be a tensor, got ", describe(x))
  x
}

convenience_number <- function(x, fn, arg, ok, expected) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || !ok(x)) {
    value_error(fn, ": ", arg, " must be ", expected, ", got ", deparse(x, nlines = 1)[1])
  }
  x
}

dtype_of <- function(x) .Call(rc_meta, x)[[2]]

# ---- methods that take their shape or dtype from another tensor ---------------------------

m <- tensor_methods
m$expand_as <- function(self, other) self$expand(convenience_tensor(other, "expand_as", "other")$shape)
m$view_as <- function(self, other) self$view(convenience_tensor(other, "view_as", "other")$shape)
m$reshape_as <- function(self, other) self$reshape(convenience_tensor(other, "reshape_as", "other")$shape)
m$type_as <- function(self, other) self$to(dtype = convenience_tensor(other, "type_as", "other")$dtype)
m$nelement <- function(self) self$numel()
m$is_floating_point <- function(self) is_floating_dtype(dtype_of(self))
m$is_complex <- function(self) is_complex_dtype(dtype_of(self))

# torch for R's new_*(size, options): options holds dtype, device and requires_grad, which
# default to self's dtype and device and FALSE.
new_options <- function(self, options, fn) {
  if (!is.list(options)) value_error(fn, ": options must be a list (dtype, device, requires_grad), got ", describe(options))
  unknown <- setdiff(names(options), c("dtype", "device", "requires_grad"))
  if (length(unknown) || (length(options) && is.null(names(options)))) {
    value_error(fn, ": options may hold dtype, device and requires_grad, got ",
                paste(if (length(unknown)) unknown else "an unnamed entry", collapse = ", "))
  }
  list(dtype = options$dtype %||% self$dtype, device = options$device %||% self$device,
       requires_grad = options$requires_grad %||% FALSE)
}
new_like <- function(self, fn, size, fill, options) {
  o <- new_options(self, options, fn)
  t <- filled(fill$kind, size_value(size, fn), fill$value, o$dtype, o$device, FALSE, NULL, fn)
  with_requires_grad(t, o$requires_grad)
}
m$new_zeros <- function(self, size, options = list()) new_like(self, "new_zeros", size, list(kind = "zeros"), options)
m$new_ones <- function(self, size, options = list()) new_like(self, "new_ones", size, list(kind = "ones"), options)
m$new_empty <- function(self, size, options = list()) new_like(self, "new_empty", size, list(kind = "empty"), options)
m$new_full <- function(self, size, fill_value, options = list()) {
  new_like(self, "new_full", size, list(kind = "full", value = fill_value), options)
}
# As PyTorch's: data takes self's dtype and device unless given (not the dtype data would infer).
m$new_tensor <- function(self, data, dtype = NULL, device = NULL, requires_grad = FALSE) {
  torch_tensor(data, dtype = dtype %||% self$dtype, device = device %||% self$device, requires_grad = requires_grad)
}
m$clamp_max <- function(self, max) torch_clamp_max(self, max)
m$clamp_min <- function(self, min) torch_clamp_min(self, min)
rm(m)

#' @export
torch_numel <- function(self) convenience_tensor(self, "torch_numel", "self")$numel()

#' @export
torch_size <- function(self, dim) convenience_tensor(self, "torch_size", "self")$size(dim)

#' @export
torch_is_floating_point <- function(self) convenience_tensor(self, "torch_is_floating_point", "self")$is_floating_point()

#' @export
torch_is_complex <- function(self) convenience_tensor(self, "torch_is_complex", "self")$is_complex()

# As torch for R: the function's `start` counts from 0 (its binding passes it to libtorch
# untranslated: -1 is the last position), while the method $narrow_copy(), like narrow,
# counts from 1.
#' @export
torch_narrow_copy <- function(self, dim, start, length) {
  self <- as_tensor_arg(self)
  start <- number_arg(start, "torch_narrow_copy", "start", "one number")
  if (start < 0) start <- start + self$size(dim)
  self$narrow_copy(dim, start + 1, length)
}

#' @export
torch_one_hot <- function(self, num_classes = -1L) nnf_one_hot(self, num_classes)

# A tensor max (or min) broadcasts as torch_maximum does; a number goes to torch_clamp.
#' @export
torch_clamp_max <- function(self, max) {
  self <- as_tensor_arg(self)
  if (is_torch_tensor(max)) torch_minimum(self, max) else torch_clamp(self, max = max)
}

#' @export
torch_clamp_min <- function(self, min) {
  self <- as_tensor_arg(self)
  if (is_torch_tensor(min)) torch_maximum(self, min) else torch_clamp(self, min = min)
}
