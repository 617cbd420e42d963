# The rcuda_tensor class: an external pointer to an engine tensor (freed by its finalizer).
# Methods are reached with `$`, as in torch for R: `x$view(c(2, 3))`, `x$shape`. The method
# table is an environment of functions whose first argument is the tensor; `$` binds it.
# Fields (shape, dtype, ...) are computed on access instead of returning a method.

#' @export
is_torch_tensor <- function(x) inherits(x, "rcuda_tensor")

tensor_methods <- new.env(parent = emptyenv())
tensor_fields <- new.env(parent = emptyenv())

#' @export
`$.rcuda_tensor` <- function(x, name) {
  method <- tensor_methods[[name]]
  if (!is.null(method)) return(function(...) method(x, ...))
  field <- tensor_fields[[name]]
  if (!is.null(field)) return(field(x))
  value_error("rcuda_tensor has no method or field '", name, "'")
}

#' @export
`[[.rcuda_tensor` <- function(x, i) {
  if (is.character(i)) return(`$.rcuda_tensor`(x, i))
  x[i]
}

#' @export
names.rcuda_tensor <- function(x) NULL

#' @importFrom utils .DollarNames
#' @export
.DollarNames.rcuda_tensor <- function(x, pattern = "") {
  candidates <- c(ls(tensor_methods), ls(tensor_fields))
  grep(pattern, candidates, value = TRUE)
}

tensor_fields$shape <- function(self) .Call(rc_shape, self)
tensor_fields$dtype <- function(self) new_dtype(.Call(rc_meta, self)[[2]])
tensor_fields$device <- function(self) device_from_string(.Call(rc_meta, self)[[3]])
tensor_fields$is_cuda <- function(self) startsWith(.Call(rc_meta, self)[[3]], "cuda")
tensor_fields$ndim <- function(self) length(.Call(rc_shape, self))
tensor_fields$ptr <- function(self) self

#' @export
dim.rcuda_tensor <- function(x) .Call(rc_shape, x)

#' @export
length.rcuda_tensor <- function(x) .Call(rc_numel, x)
