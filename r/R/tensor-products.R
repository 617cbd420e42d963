# torch for R's products and distances built from matmul, reshape, permute, narrow and the
# elementwise ops (so they carry gradients where those do): torch_tensordot, torch_cross,
# torch_cdist, torch_hypot, and torch_logspace from torch_linspace.

# dims of `x` (1-based, negative from the end) as positive positions, checked distinct.
product_dims <- function(dims, ndim, fn, arg) {
  out <- vapply(as.list(dims), function(d) extra_dim(d, ndim, fn, arg), integer(1))
  if (anyDuplicated(out)) value_error(fn, ": ", arg, " repeats a dim: ", deparse(dims))
  out
}

#' @export
torch_tensordot <- function(a, b, dims = 2) {
  a <- extra_tensor(a, "torch_tensordot", "a")
  b <- extra_tensor(b, "torch_tensordot", "b")
  na <- a$dim()
  nb <- b$dim()
  if (is.list(dims)) {
    if (length(dims) != 2) value_error("torch_tensordot: dims as a list must hold two vectors of dims (a's, b's)")
    da <- product_dims(dims[[1]], na, "torch_tensordot", "dims[[1]]")
    db <- product_dims(dims[[2]], nb, "torch_tensordot", "dims[[2]]")
  } else {
    k <- extra_whole(dims, "torch_tensordot", "dims")
    if (k < 0 || k > min(na, nb)) {
      value_error("torch_tensordot: dims must be between 0 and ", min(na, nb), ", got ", k)
    }
    da <- if (k > 0) seq.int(na - k + 1, na) else integer()
    db <- seq_len(k)
  }
  if (length(da) != length(db)) {
    value_error("torch_tensordot: a contracts ", length(da), " dims and b ", length(db))
  }
  sa <- a$shape
  sb <- b$shape
  if (any(sa[da] != sb[db])) {
    j <- which(sa[da] != sb[db])[1]  # (torch's words, naming the first pair that differs)
    value_error("torch_tensordot: contracted dimensions need to match, but first has size ",
                sa[da[j]], " in dim ", da[j], " and second has size ", sb[db[j]], " in dim ", db[j])
  }
  keep_a <- setdiff(seq_len(na), da)
  keep_b <- setdiff(seq_len(nb), db)
  inner <- prod(sa[da])
  left <- a$permute(c(keep_a, da))$reshape(c(prod(sa[keep_a]), inner))
  right <- b$permute(c(db, keep_b))$reshape(c(inner, prod(sb[keep_b])))
  torch_matmul(left, right)$reshape(c(sa[keep_a], sb[keep_b]))
}

#' @export
torch_cross <- function(self, other, dim = NULL) {
  self <- extra_tensor(self, "torch_cross")
  other <- extra_tensor(other, "torch_cross", "other")
  if (!identical(self$shape, other$shape)) {
    value_error("torch_cross: self and other must have one shape, got ",
                paste(self$shape, collapse = "x"), " and ", paste(other$shape, collapse = "x"))
  }
  # torch's default: the first dim of size 3.
  d <- if (is.null(dim)) match(3, self$shape) else extra_dim(dim, self$dim(), "torch_cross", "dim")
  if (is.na(d) || self$shape[d] != 3) {
    value_error("torch_cross: inputs dimension ", if (is.null(dim)) "(the first of size 3)" else dim,
                " must have length 3; self has shape ", paste(self$shape, collapse = "x"))
  }
  part <- function(t, i) t$narrow(d, i, 1)
  a <- lapply(1:3, function(i) part(self, i))
  b <- lapply(1:3, function(i) part(other, i))
  torch_cat(list(a[[2]] * b[[3]] - a[[3]] * b[[2]],
                 a[[3]] * b[[1]] - a[[1]] * b[[3]],
                 a[[1]] * b[[2]] - a[[2]] * b[[1]]), dim = d)
}

#' @export
torch_hypot <- function(self, other) {
  self <- extra_tensor(self, "torch_hypot")
  other <- extra_tensor(other, "torch_hypot", "other")
  # Scaled by the larger magnitude, so that squares of large values do not overflow.
  x <- self$abs()
  y <- other$abs()
  big <- torch_maximum(x, y)
  small <- torch_minimum(x, y)
  ratio <- torch_where(big == 0, torch_zeros_like(big), small / torch_where(big == 0, torch_ones_like(big), big))
  big * (1 + ratio * ratio)$sqrt()
}

#' @export
torch_cdist <- function(x1, x2, p = 2) {
  x1 <- extra_tensor(x1, "torch_cdist", "x1")
  x2 <- extra_tensor(x2, "torch_cdist", "x2")
  if (!is.numeric(p) || length(p) != 1 || is.na(p) || p < 0) {
    value_error("torch_cdist: p must be a non-negative number, got ", deparse(p))
  }
  if (x1$dim() < 2 || x2$dim() < 2 || tail(x1$shape, 1) != tail(x2$shape, 1)) {
    value_error("torch_cdist: x1 and x2 must be [..., P, M] and [..., R, M] with one M, got ",
                paste(x1$shape, collapse = "x"), " and ", paste(x2$shape, collapse = "x"))
  }
  diff <- (x1$unsqueeze(-2) - x2$unsqueeze(-3))$abs()  # [..., P, R, M]
  if (p == 0) return((diff != 0)$to(dtype = x1$dtype)$sum(dim = -1))
  if (is.infinite(p)) return(torch_amax(diff, dim = -1))
  if (p == 1) return(diff$sum(dim = -1))
  if (p == 2) return((diff * diff)$sum(dim = -1)$sqrt())
  diff$pow(p)$sum(dim = -1)$pow(1 / p)
}

#' @export
torch_logspace <- function(start, end, steps = 100, base = 10, dtype = NULL, layout = NULL, device = NULL,
                           requires_grad = FALSE) {
  check_layout(layout, "torch_logspace")
  if (!is.numeric(base) || length(base) != 1 || is.na(base)) {
    value_error("torch_logspace: base must be one number, got ", deparse(base))
  }
  exponents <- torch_linspace(start, end, steps, dtype = torch_float64(), device = device)
  out <- torch_full_like(exponents, base)$pow(exponents)
  out <- out$to(dtype = if (is.null(dtype)) torch_get_default_dtype() else dtype)
  if (isTRUE(requires_grad)) out$requires_grad_(TRUE)
  out
}
