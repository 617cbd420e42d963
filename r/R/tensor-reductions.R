# torch for R's reductions composed from the engine's max, min, sum, mean, var and std: amax,
# amin, count_nonzero, nansum, nanmean, var_mean, std_mean; and bincount, a scatter-add of ones
# (or weights). They carry gradients wherever those ops do. Dims are 1-based, negative from the
# end.

# ---- reductions ---------------------------------------------------------------------------

# Positions of dim (NULL or empty: all dims), largest first, for reducing one at a time.
extra_dims <- function(dim, ndim, fn) {
  if (is.list(dim)) dim <- unlist(dim)
  if (is.null(dim) || length(dim) == 0) return(rev(seq_len(ndim)))
  dims <- vapply(dim, extra_dim, integer(1), ndim = ndim, fn = fn, arg = "dim")
  if (anyDuplicated(dims)) value_error(fn, ": dim ", dims[anyDuplicated(dims)], " appears more than once")
  sort(dims, decreasing = TRUE)
}

amax_amin <- function(kind, self, dim, keepdim) {
  fn <- paste0("torch_a", kind)
  self <- extra_tensor(self, fn)
  extra_flag(keepdim, fn, "keepdim")
  if (self$ndim == 0) return(self$clone())
  out <- self
  for (d in extra_dims(dim, self$ndim, fn)) out <- extreme(kind, out, d, NULL, TRUE)[[1]]
  if (keepdim) return(out)
  dims <- extra_dims(dim, self$ndim, fn)
  out$reshape(as.integer(self$shape)[-dims])
}

#' @export
torch_amax <- function(self, dim = list(), keepdim = FALSE) amax_amin("max", self, dim, keepdim)

#' @export
torch_amin <- function(self, dim = list(), keepdim = FALSE) amax_amin("min", self, dim, keepdim)

#' @export
torch_count_nonzero <- function(self, dim = NULL) {
  self <- extra_tensor(self, "torch_count_nonzero")
  torch_sum(self != 0, dim = dims_value(dim, "torch_count_nonzero"), dtype = torch_long())
}

#' @export
torch_nansum <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  self <- extra_tensor(self, "torch_nansum")
  if (is_float_tensor(self)) self <- torch_where(self != self, torch_zeros_like(self), self)
  torch_sum(self, dim = dims_value(dim, "torch_nansum"), keepdim = keepdim, dtype = dtype)
}

#' @export
torch_nanmean <- function(self, dim = NULL, keepdim = FALSE, dtype = NULL) {
  self <- extra_tensor(self, "torch_nanmean")
  if (!is_float_tensor(self)) dtype_error("torch_nanmean: self must have a floating dtype, got ", self$dtype$name)
  if (!is.null(dtype)) self <- self$to(dtype = dtype)
  dim <- dims_value(dim, "torch_nanmean")
  kept <- self == self
  torch_nansum(self, dim, keepdim) / torch_sum(kept, dim = dim, keepdim = keepdim)$to(dtype = self$dtype)
}

#' @export
torch_var_mean <- function(self, dim = NULL, unbiased = TRUE, keepdim = FALSE, correction = NULL) {
  self <- extra_tensor(self, "torch_var_mean")
  list(torch_var(self, dim, unbiased, keepdim, correction),
       if (is.null(dim)) torch_mean(self) else torch_mean(self, dim, keepdim))
}

#' @export
torch_std_mean <- function(self, dim = NULL, unbiased = TRUE, keepdim = FALSE, correction = NULL) {
  self <- extra_tensor(self, "torch_std_mean")
  list(torch_std(self, dim, unbiased, keepdim, correction),
       if (is.null(dim)) torch_mean(self) else torch_mean(self, dim, keepdim))
}

# ---- counting ------------------------------------------------------------------------------

# Counts of each value 1..max(self) (torch for R's indices are 1-based), or sums of weights.
#' @export
torch_bincount <- function(self, weights = list(), minlength = 0L) {
  fn <- "torch_bincount"
  self <- math_ndim(extra_tensor(self, fn), 1, fn, "self")
  minlength <- extra_whole(minlength, fn, "minlength")
  if (minlength < 0) value_error(fn, ": minlength must be non-negative, got ", minlength)
  if (is_float_tensor(self) || self$dtype == torch_bool()) {
    dtype_error(fn, ": self must hold integers, got ", self$dtype$name)
  }
  n <- as.integer(self$shape)
  if (n > 0) {
    lowest <- as.numeric(as_array(torch_min(self)))
    if (lowest < 1) value_error(fn, ": Indexing starts at 1 but found a ", lowest, " in self.")
  }
  size <- max(minlength, if (n > 0) as.numeric(as_array(torch_max(self))) else 0)
  if (length(weights) == 0) {
    src <- torch_ones(n, dtype = torch_long(), device = self$device)
  } else {
    src <- math_ndim(extra_tensor(weights, fn, "weights"), 1, fn, "weights")
    if (!identical(as.integer(src$shape), n)) {
      shape_error(fn, ": weights must have one element per element of self (", n, "), got ", src$shape)
    }
    # torch sums float32 weights in float32 and every other dtype in float64.
    if (src$dtype != torch_float32()) src <- src$to(dtype = torch_float64())
  }
  out <- torch_zeros(size, dtype = src$dtype, device = self$device)
  if (n == 0) return(out)
  torch_scatter_add(out, 1L, self$to(dtype = torch_long()), src)
}

# ---- methods ------------------------------------------------------------------------------

m <- tensor_methods
for (name in c("amax", "amin", "count_nonzero", "nansum", "nanmean", "bincount")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name)
rm(m)
