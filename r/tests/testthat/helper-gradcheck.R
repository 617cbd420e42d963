# Central differences of f (an R function of a numeric vector or array, giving a number) at x:
# the reference for gradients that have no closed form in the tests.
numeric_grad <- function(f, x, h = 1e-6) {
  g <- x
  for (i in seq_along(x)) {
    up <- x
    down <- x
    up[i] <- x[i] + h
    down[i] <- x[i] - h
    g[i] <- (f(up) - f(down)) / (2 * h)
  }
  g
}
