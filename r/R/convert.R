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

# Comparing tensors in tests. all.equal() (testthat's edition 2 expect_equal) compares the
# values as R arrays with all.equal's tolerance; an R value may stand on either side.
#' @export
all.equal.rcuda_tensor <- function(target, current, ...) {
  if (is_torch_tensor(current)) current <- as_array(current)
  all.equal(as_array(target), current, ...)
}

# waldo::compare() (testthat's edition 3) compares what this proxy returns, as torch for R's
# method does: the values, the device, requires_grad and grad_fn (here its name, where torch
# compares the node itself). Registered when waldo is loaded (.onLoad, s3_register), so waldo
# stays optional.
compare_proxy_rcuda_tensor <- function(x, path) {
  object <- list(x = as_array(x), device = as.character(x$device), requires_grad = x$requires_grad)
  object$grad_fn <- if (!is.null(x$grad_fn)) x$grad_fn$name()  # (no element for a leaf)
  list(
    object = object,
    path = path
  )
}
