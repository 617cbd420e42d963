# torch for R's functions that move elements without computing new ones, built from
# index_select, narrow, cat, reshape and expand (so they carry gradients wherever those do):
# flip, roll, tril, triu, diag, repeat_interleave, tile and $repeat(). Dims are 1-based,
# negative from the end.

# ---- shapes -------------------------------------------------------------------------------

# Each dim's elements in reverse order.
#' @export
torch_flip <- function(self, dims) {
  self <- extra_tensor(self, "torch_flip")
  if (missing(dims) || length(dims) == 0) value_error("torch_flip: dims must name at least one dim")
  dims <- vapply(unlist(dims), extra_dim, integer(1), ndim = self$ndim, fn = "torch_flip")
  if (anyDuplicated(dims)) value_error("torch_flip: dims ", dims[anyDuplicated(dims)], " appears more than once")
  out <- self
  for (d in dims) {
    n <- as.integer(self$shape[d])
    out <- if (n > 1) torch_index_select(out, d, rev(seq_len(n))) else out$clone()
  }
  out
}

# Elements shifted along dims, wrapping around; with dims NULL, over the flattened tensor.
#' @export
torch_roll <- function(self, shifts, dims = NULL) {
  self <- extra_tensor(self, "torch_roll")
  shifts <- unlist(shifts)
  if (!is.numeric(shifts) || length(shifts) == 0 || anyNA(shifts) || any(shifts != trunc(shifts))) {
    value_error("torch_roll: shifts must be whole numbers, got ", deparse(shifts, nlines = 1)[1])
  }
  dims <- unlist(dims)
  if (length(dims) == 0) {
    if (length(shifts) != 1) value_error("torch_roll: without dims, shifts must be one number, got ", length(shifts))
    return(torch_roll(self$flatten(), shifts, 1L)$reshape(as.integer(self$shape)))
  }
  if (length(shifts) != length(dims)) {
    value_error("torch_roll: shifts and dims must have the same length, got ", length(shifts), " and ", length(dims))
  }
  dims <- vapply(dims, extra_dim, integer(1), ndim = self$ndim, fn = "torch_roll")
  out <- self
  for (i in seq_along(dims)) {
    d <- dims[i]
    n <- as.integer(self$shape[d])
    s <- if (n > 0) as.integer(shifts[i] %% n) else 0L
    out <- if (s == 0) out$clone() else torch_cat(list(torch_narrow(out, d, n - s + 1L, s), torch_narrow(out, d, 1L, n - s)), d)
  }
  out
}

# Where column - row is within diagonal of the main diagonal, over the last two dims.
triangle <- function(self, diagonal, lower, fn) {
  self <- extra_tensor(self, fn)
  diagonal <- extra_whole(diagonal, fn, "diagonal")
  if (self$ndim < 2) shape_error(fn, ": self must have at least 2 dims, got ", self$ndim)
  shape <- as.integer(self$shape)
  rows <- shape[length(shape) - 1]
  cols <- shape[length(shape)]
  row <- torch_arange(0L, rows - 1L, device = self$device)$unsqueeze(2)
  col <- torch_arange(0L, cols - 1L, device = self$device)$unsqueeze(1)
  keep <- if (lower) (col - row) <= diagonal else (col - row) >= diagonal
  torch_where(keep, self, torch_zeros_like(self))
}

#' @export
torch_tril <- function(self, diagonal = 0L) triangle(self, diagonal, TRUE, "torch_tril")

#' @export
torch_triu <- function(self, diagonal = 0L) triangle(self, diagonal, FALSE, "torch_triu")

# A vector becomes a square matrix with it on the diagonal-th diagonal; a matrix gives its
# diagonal-th diagonal as a vector (diagonal > 0 above the main one, < 0 below).
#' @export
torch_diag <- function(self, diagonal = 0L) {
  self <- extra_tensor(self, "torch_diag")
  k <- extra_whole(diagonal, "torch_diag", "diagonal")
  shape <- as.integer(self$shape)
  if (length(shape) == 1) {
    n <- shape
    m <- n + abs(k)
    padded <- if (k == 0) self else torch_cat(list(self, torch_zeros(abs(k), dtype = self$dtype, device = self$device)), 1L)
    # Row i holds v[i] at column i + k (k >= 0); column j holds v[j] at row j - k (k < 0).
    values <- if (k >= 0) padded$unsqueeze(2)$expand(c(m, m)) else padded$unsqueeze(1)$expand(c(m, m))
    idx <- torch_arange(0L, m - 1L, device = self$device)
    on_diagonal <- (idx$unsqueeze(1) - idx$unsqueeze(2)) == k
    return(torch_where(on_diagonal, values, torch_zeros_like(values)))
  }
  if (length(shape) != 2) shape_error("torch_diag: self must be 1-d or 2-d, got ", length(shape), "-d")
  rows <- shape[1]
  cols <- shape[2]
  first_row <- max(0L, -k)
  len <- max(0L, min(rows - first_row, cols - (first_row + k)))
  i <- first_row + seq_len(len) - 1L
  flat <- self$reshape(-1L)
  if (len == 0) return(torch_narrow(flat, 1L, 1L, 0L))
  torch_index_select(flat, 1L, i * cols + i + k + 1L)
}

# Each element (or each slice along dim) repeated repeats times, in place; repeats may also give
# one count per slice. With dim NULL, over the flattened tensor.
#' @export
torch_repeat_interleave <- function(self, repeats, dim = NULL, output_size = NULL) {
  self <- extra_tensor(self, "torch_repeat_interleave")
  if (is_torch_tensor(repeats)) repeats <- as.integer(as_array(repeats))
  if (!is.numeric(repeats) || length(repeats) == 0 || anyNA(repeats) || any(repeats != trunc(repeats)) || any(repeats < 0)) {
    value_error("torch_repeat_interleave: repeats must be non-negative whole numbers, got ", deparse(repeats, nlines = 1)[1])
  }
  if (is.null(dim)) {
    self <- self$flatten()
    dim <- 1L
  }
  dim <- extra_dim(dim, self$ndim, "torch_repeat_interleave", "dim")
  n <- as.integer(self$shape[dim])
  if (length(repeats) != 1 && length(repeats) != n) {
    shape_error("torch_repeat_interleave: repeats must be one number or one per slice (", n, "), got ", length(repeats))
  }
  index <- rep(seq_len(n), times = if (length(repeats) == 1) rep(repeats, n) else repeats)
  if (!is.null(output_size) && output_size != length(index)) {
    value_error("torch_repeat_interleave: output_size is ", output_size, " but the repeats give ", length(index))
  }
  if (length(index) == 0) return(torch_narrow(self, dim, 1L, 0L))
  torch_index_select(self, dim, index)
}

# The tensor tiled sizes[i] times along each dim (leading sizes add new dims), torch's repeat.
tensor_repeat <- function(self, ..., fn = "repeat") {
  sizes <- unlist(list(...), use.names = FALSE)
  if (!is.numeric(sizes) || anyNA(sizes) || any(sizes != trunc(sizes)) || any(sizes < 0)) {
    value_error(fn, ": sizes must be non-negative whole numbers, got ", deparse(sizes, nlines = 1)[1])
  }
  shape <- as.integer(self$shape)
  if (length(sizes) < length(shape)) {
    value_error(fn, ": sizes must have at least one entry per dim (", length(shape), "), got ", length(sizes))
  }
  sizes <- as.integer(sizes)
  shape <- c(rep(1L, length(sizes) - length(shape)), shape)
  # [s1, s2, ...] viewed as [1, s1, 1, s2, ...], expanded to [r1, s1, r2, s2, ...], then merged.
  spread <- as.integer(rbind(1L, shape))
  expanded <- as.integer(rbind(sizes, shape))
  self$reshape(spread)$expand(expanded)$reshape(sizes * shape)
}

#' @export
torch_tile <- function(self, dims) {
  self <- extra_tensor(self, "torch_tile")
  dims <- unlist(dims)
  if (length(dims) < self$ndim) dims <- c(rep(1L, self$ndim - length(dims)), dims)
  tensor_repeat(self, dims, fn = "torch_tile")
}

# ---- methods ------------------------------------------------------------------------------

m <- tensor_methods
for (name in c("flip", "roll", "tril", "triu", "diag", "repeat_interleave", "tile")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name)
m[["repeat"]] <- tensor_repeat
rm(m)
