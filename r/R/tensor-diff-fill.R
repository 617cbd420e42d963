# torch for R's diff, vander, index_fill, masked_scatter and renorm, composed from rcuda's own
# ops (narrow, cat, where, cumsum, norm), so that they record for autograd and run on the CPU
# and CUDA alike. Dims and indices count from 1, as in torch for R.

# ---- diff, vander, index_fill, masked_scatter, renorm -------------------------------------

# n-th forward difference along dim after joining prepend and append there; bool tensors differ
# by xor, as in torch.
#' @export
torch_diff <- function(self, n = 1L, dim = -1L, prepend = list(), append = list()) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_diff", "self")
  convenience_number(n, "torch_diff", "n", function(v) v >= 0 && v == trunc(v), "a whole number >= 0")
  if (self$dim() == 0) value_error("torch_diff: self must have at least one dim, got a 0-d tensor")
  dim <- extra_dim(dim, self$dim(), "torch_diff", "dim")
  given <- function(x) !is.null(x) && !(is.list(x) && length(x) == 0)
  parts <- list(if (given(prepend)) as_tensor_arg(prepend), self, if (given(append)) as_tensor_arg(append))
  x <- if (length(Filter(Negate(is.null), parts)) > 1) torch_cat(Filter(Negate(is.null), parts), dim) else self
  for (i in seq_len(n)) {
    len <- x$size(dim)
    if (len == 0) break
    later <- x$narrow(dim, 2, len - 1)
    earlier <- x$narrow(dim, 1, len - 1)
    x <- if (dtype_of(x) == "bool") torch_logical_xor(later, earlier) else later - earlier
  }
  x
}

# Columns x^(N-1) ... x^0 (increasing: x^0 ... x^(N-1)), as a cumulative product of x so that
# gradients at x = 0 are the polynomial's (pow would give 0 * x^-1 there).
#' @export
torch_vander <- function(x, N = NULL, increasing = FALSE) {
  x <- convenience_tensor(as_tensor_arg(x), "torch_vander", "x")
  if (x$dim() != 1) value_error("torch_vander: x must be a 1-d tensor, got ", x$dim(), " dims")
  N <- N %||% x$size(1)
  convenience_number(N, "torch_vander", "N", function(v) v >= 0 && v == trunc(v), "a whole number >= 0")
  extra_flag(increasing, "torch_vander", "increasing")
  # Integer x gives int64 powers, as in torch.
  if (!is_floating_dtype(dtype_of(x))) x <- x$to(dtype = "int64")
  if (N == 0) return(x$new_zeros(c(x$size(1), 0)))
  column <- x$unsqueeze(2)
  powers <- torch_cat(list(torch_ones_like(column), column$expand(c(x$size(1), N - 1))), 2)$cumprod(2)
  if (increasing) powers else powers$flip(2)
}

# The 1-based positions of index along a dim of length `size`, as a bool mask shaped to
# broadcast against an ndim-d tensor.
dim_mask <- function(index, size, dim, ndim, device, fn) {
  if (is.numeric(index) && !is.object(index)) index <- torch_tensor(index, dtype = "int64", device = device)
  if (!is_torch_tensor(index) || !dtype_of(index) %in% c("int64", "int32", "int16", "int8", "uint8") || index$dim() > 1) {
    value_error(fn, ": index must be a 1-d integer tensor of 1-based positions, got ",
                if (is_torch_tensor(index)) paste0(index$dim(), "-d ", dtype_of(index)) else describe(index))
  }
  index <- index$to(dtype = "int64")$flatten()
  if (index$numel() > 0) {
    bad <- index$masked_select((index < 1) | (index > size))
    if (bad$numel() > 0) {
      index_error(fn, ": index ", bad[1]$item(), " is out of range for a dim of size ", size, " (index values count from 1)")
    }
  }
  hits <- torch_zeros(size, dtype = "int64", device = device)$index_add(1, index, torch_ones_like(index))
  shape <- rep(1, ndim)
  shape[dim] <- size
  (hits > 0)$reshape(shape)
}

# self with the slices at 1-based `index` along dim set to value (a number or a 0-d tensor).
#' @export
torch_index_fill <- function(self, dim, index, value) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_index_fill", "self")
  if (self$dim() == 0) value_error("torch_index_fill: self must have at least one dim, got a 0-d tensor")
  dim <- extra_dim(dim, self$dim(), "torch_index_fill", "dim")
  if (is_torch_tensor(value)) {
    if (value$dim() != 0) value_error("torch_index_fill: a tensor value must be 0-d, got ", value$dim(), " dims")
    # A 0-d value on another device is a number, as torch's index_fill takes it (a CPU
    # scalar for a CUDA tensor).
    value <- value$to(device = self$device, dtype = self$dtype)
  } else {
    if (!(is.numeric(value) || is.logical(value)) || length(value) != 1 || is.na(value)) {
      value_error("torch_index_fill: value must be a number or a 0-d tensor, got ", deparse(value, nlines = 1)[1])
    }
    value <- torch_scalar_tensor(value, dtype = self$dtype, device = self$device)
  }
  mask <- dim_mask(index, self$size(dim), dim, self$dim(), self$device, "torch_index_fill")
  torch_where(mask, value, self)
}

# self with source's leading elements written, in row-major order, where mask is TRUE.
#' @export
torch_masked_scatter <- function(self, mask, source) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_masked_scatter", "self")
  mask <- convenience_tensor(mask, "torch_masked_scatter", "mask")
  source <- convenience_tensor(source, "torch_masked_scatter", "source")
  if (dtype_of(mask) != "bool") value_error("torch_masked_scatter: mask must be a bool tensor, got ", dtype_of(mask))
  if (dtype_of(source) != dtype_of(self)) {
    value_error("torch_masked_scatter: source must have self's dtype ", dtype_of(self), ", got ", dtype_of(source))
  }
  both <- torch_broadcast_tensors(list(self, mask))
  flat_mask <- both[[2]]$flatten()
  wanted <- flat_mask$sum()$item()
  if (wanted > source$numel()) {
    value_error("torch_masked_scatter: mask selects ", wanted, " elements but source has only ", source$numel())
  }
  if (wanted == 0) return(both[[1]]$clone())
  # The k-th TRUE takes source's k-th element; positions under FALSE take any valid index.
  take <- flat_mask$to(dtype = "int64")$cumsum(1)$clamp(min = 1)$to(dtype = "int64")
  values <- source$flatten()$gather(1, take)
  torch_where(flat_mask, values, both[[1]]$flatten())$reshape(both[[1]]$shape)
}

# Each slice along dim whose p-norm exceeds maxnorm, scaled to norm maxnorm (torch's factor
# maxnorm / (norm + 1e-7)).
#' @export
torch_renorm <- function(self, p, dim, maxnorm) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_renorm", "self")
  if (!is_floating_dtype(dtype_of(self))) value_error("torch_renorm: self must be a floating tensor, got ", dtype_of(self))
  convenience_number(p, "torch_renorm", "p", function(v) v > 0, "a number > 0")
  convenience_number(maxnorm, "torch_renorm", "maxnorm", function(v) v >= 0, "a number >= 0")
  if (self$dim() == 0) value_error("torch_renorm: self must have at least one dim, got a 0-d tensor")
  dim <- extra_dim(dim, self$dim(), "torch_renorm", "dim")
  others <- setdiff(seq_len(self$dim()), dim)
  norm <- if (length(others)) torch_norm(self, p, dim = others, keepdim = TRUE) else self$abs()
  factor <- torch_where(norm > maxnorm, maxnorm / (norm + 1e-7), torch_ones_like(norm))
  self * factor
}

m <- tensor_methods
m$diff <- function(self, n = 1L, dim = -1L, prepend = list(), append = list()) torch_diff(self, n, dim, prepend, append)
m$index_fill <- function(self, dim, index, value) torch_index_fill(self, dim, index, value)
m$index_fill_ <- function(self, dim, index, value) inplace("index_fill_", self, torch_index_fill, dim, index, value)
m$masked_scatter <- function(self, mask, source) torch_masked_scatter(self, mask, source)
m$masked_scatter_ <- function(self, mask, source) inplace("masked_scatter_", self, torch_masked_scatter, mask, source)
m$renorm <- function(self, p, dim, maxnorm) torch_renorm(self, p, dim, maxnorm)
rm(m)
