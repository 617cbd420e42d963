# torch for R's trapezoidal rule (torch_trapezoid, torch_cumulative_trapezoid) from narrow,
# diff and the reductions, so that it records autograd and runs on any device. Dims are 1-based,
# negative from the end.

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
