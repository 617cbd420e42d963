# Tensors to R values. Layout and NA rules: Note [R layout] in src/convert.cpp. Unlike torch
# for R, a CUDA tensor converts directly (the copy to the host happens inside).

#' @export
as_array <- function(x) UseMethod("as_array")

#' @export
as_array.rcuda_tensor <- function(x) .Call(rc_to_r, x)

#' @export
as.array.rcuda_tensor <- function(x, ...) .Call(rc_to_r, x)

#' @export
as.matrix.rcuda_tensor <- function(x, ...) as.matrix(.Call(rc_to_r, x))

#' @export
as.double.rcuda_tensor <- function(x, ...) as.double(.Call(rc_to_r, x))

#' @export
as.integer.rcuda_tensor <- function(x, ...) as.integer(.Call(rc_to_r, x))

#' @export
as.logical.rcuda_tensor <- function(x, ...) as.logical(.Call(rc_to_r, x))

#' @export
as.vector.rcuda_tensor <- function(x, mode = "any") as.vector(.Call(rc_to_r, x), mode)
