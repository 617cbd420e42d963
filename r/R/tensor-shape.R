# torch for R's shape functions (split, move, stack, broadcast, diagonals, rotations), built from
# rcuda's views (narrow, permute, transpose, reshape, expand) and copies (cat, index_select,
# gather, flip), so they record autograd wherever those do. Dims and indices are 1-based,
# negative dims count from the end.
#
# Views: chunk, split, movedim/moveaxis, swapaxes/swapdims, atleast_*d, unflatten, meshgrid and
# broadcast_tensors return views of their input. diagonal returns a copy: without as_strided
# there is no view that steps along two dims at once.

# ---- helpers ------------------------------------------------------------------------------

# Several 1-based dims as positive positions, none repeated.
shape_dims <- function(dims, ndim, fn, arg) {
  dims <- unlist(dims)
  out <- vapply(dims, extra_dim, integer(1), ndim = ndim, fn = fn, arg = arg)
  if (anyDuplicated(out)) value_error(fn, ": ", arg, " names dim ", out[anyDuplicated(out)], " twice")
  out
}

# A non-empty list of tensors (R vectors and arrays become tensors, as torch for R converts them).
shape_tensor_list <- function(tensors, fn) {
  tensors <- as_tensor_list(tensors, fn)
  if (length(tensors) == 0) value_error(fn, ": tensors must be a non-empty list of tensors")
  tensors
}

# Refuses the first tensor in the list whose number of dims is not among `allowed`.
check_list_ndims <- function(tensors, allowed, fn, what) {
  for (i in seq_along(tensors)) {
    nd <- tensors[[i]]$ndim
    if (!nd %in% allowed) value_error(fn, ": tensors must be ", what, ", tensors[[", i, "]] is ", nd, "-d")
  }
}

shape_text <- function(x) deparse(x, nlines = 1, width.cutoff = 500L)[1]

# The pieces of dim d with the given sizes, each a narrow() view.
split_at <- function(self, d, sizes) {
  starts <- cumsum(c(1, sizes))[seq_along(sizes)]
  lapply(seq_along(sizes), function(i) self$narrow(d, starts[i], sizes[i]))
}

# The shape that all of shapes broadcast to (torch's rules: align on the right, 1 stretches).
broadcast_shape <- function(shapes, fn) {
  shapes <- lapply(shapes, function(s) {
    s <- unlist(s)
    if (length(s) && (!is.numeric(s) || anyNA(s) || any(s != trunc(s)) || any(s < 0))) {
      value_error(fn, ": a shape must be whole numbers >= 0, got ", shape_text(s))
    }
    as.integer(s)
  })
  n <- max(0L, lengths(shapes))
  out <- rep(1L, n)
  for (s in shapes) {
    s <- c(rep(1L, n - length(s)), s)
    clash <- which(s != out & s != 1L & out != 1L)
    if (length(clash)) {
      value_error(fn, ": shapes cannot be broadcast: dim ", clash[1], " (of ", n, ", aligned on the right) is ",
                  out[clash[1]], " in one and ", s[clash[1]], " in another")
    }
    out <- ifelse(out == 1L, s, out)
  }
  as.integer(out)
}

# ---- splitting ----------------------------------------------------------------------------

#' @export
torch_chunk <- function(self, chunks, dim = 1L) {
  fn <- "torch_chunk"
  self <- extra_tensor(self, fn)
  chunks <- extra_whole(chunks, fn, "chunks")
  if (chunks < 1) value_error(fn, ": chunks must be at least 1, got ", chunks)
  d <- extra_dim(dim, self$ndim, fn, "dim")
  n <- self$shape[d]
  # An empty dim still gives `chunks` (empty) pieces, as torch's chunk does.
  if (n == 0) return(split_at(self, d, rep(0, chunks)))
  torch_split(self, ceiling(n / chunks), d)
}

#' @export
torch_split <- function(self, split_size, dim = 1L) {
  fn <- "torch_split"
  self <- extra_tensor(self, fn)
  d <- extra_dim(dim, self$ndim, fn, "dim")
  sizes <- unlist(split_size)
  if (!is.numeric(sizes) || !length(sizes) || anyNA(sizes) || any(sizes != trunc(sizes)) || any(sizes < 0)) {
    value_error(fn, ": split_size must be a whole number >= 0 or a vector of them, got ", shape_text(split_size))
  }
  n <- self$shape[d]
  if (length(sizes) > 1) {
    if (sum(sizes) != n) {
      value_error(fn, ": split_size ", shape_text(sizes), " adds up to ", sum(sizes), ", but dim ", d, " has size ", n)
    }
    return(split_at(self, d, sizes))
  }
  if (n == 0) return(list(self$narrow(d, 1, 0)))
  if (sizes == 0) value_error(fn, ": split_size 0 can only split an empty dim; dim ", d, " has size ", n)
  pieces <- ceiling(n / sizes)
  split_at(self, d, c(rep(sizes, pieces - 1), n - sizes * (pieces - 1)))
}

# ---- moving and swapping dims (views) ------------------------------------------------------

move_dims <- function(self, source, destination, fn) {
  self <- extra_tensor(self, fn)
  n <- self$ndim
  from <- shape_dims(source, n, fn, "source")
  to <- shape_dims(destination, n, fn, "destination")
  if (length(from) != length(to)) {
    value_error(fn, ": source and destination must have as many dims, got ", length(from), " and ", length(to))
  }
  if (length(from) == 0) return(self)
  # The dims not moved keep their order in the places left free.
  order <- integer(n)
  order[to] <- from
  order[-to] <- setdiff(seq_len(n), from)
  self$permute(order)
}

#' @export
torch_movedim <- function(self, source, destination) move_dims(self, source, destination, "torch_movedim")

# moveaxis and swapaxes are aliases of movedim and swapdims, 1-based like them. (torch for R 0.17
# hands their arguments to libtorch unshifted, so there they are 0-based: its code generator
# shifts only arguments named dim*, which we take for an accident, not an API.)
#' @export
torch_moveaxis <- function(self, source, destination) move_dims(self, source, destination, "torch_moveaxis")

swap_dims <- function(self, dim0, dim1, fn, args) {
  self <- extra_tensor(self, fn)
  a <- extra_dim(dim0, self$ndim, fn, args[1])
  b <- extra_dim(dim1, self$ndim, fn, args[2])
  self$transpose(a, b)
}

#' @export
torch_swapaxes <- function(self, axis0, axis1) swap_dims(self, axis0, axis1, "torch_swapaxes", c("axis0", "axis1"))

#' @export
torch_swapdims <- function(self, dim0, dim1) swap_dims(self, dim0, dim1, "torch_swapdims", c("dim0", "dim1"))

# ---- at least k dims, and stacking ---------------------------------------------------------

# self with at least k dims (a view): numpy's rules, where a vector becomes a row (k = 2) or
# a [1, n, 1] block (k = 3). A list gives a list.
at_least <- function(self, k, fn) {
  if (is.list(self) && !is_torch_tensor(self)) return(lapply(as_tensor_list(self, fn), at_least, k = k, fn = fn))
  self <- extra_tensor(self, fn)
  shape <- self$shape
  if (length(shape) >= k) return(self)
  shape <- switch(k,
    1L,
    c(rep(1L, 2 - length(shape)), shape),
    switch(length(shape) + 1, c(1L, 1L, 1L), c(1L, shape, 1L), c(shape, 1L))
  )
  self$reshape(shape)
}

#' @export
torch_atleast_1d <- function(self) at_least(self, 1, "torch_atleast_1d")

#' @export
torch_atleast_2d <- function(self) at_least(self, 2, "torch_atleast_2d")

#' @export
torch_atleast_3d <- function(self) at_least(self, 3, "torch_atleast_3d")

#' @export
torch_hstack <- function(tensors) {
  tensors <- at_least(shape_tensor_list(tensors, "torch_hstack"), 1, "torch_hstack")
  # Vectors join end to end; anything larger joins along its columns.
  torch_cat(tensors, dim = if (tensors[[1]]$ndim == 1) 1L else 2L)
}

# Each tensor with at least k dims, joined along dim.
stack_at_least <- function(tensors, k, dim, fn) torch_cat(at_least(shape_tensor_list(tensors, fn), k, fn), dim = dim)

#' @export
torch_vstack <- function(tensors) stack_at_least(tensors, 2, 1L, "torch_vstack")

#' @export
torch_dstack <- function(tensors) stack_at_least(tensors, 3, 3L, "torch_dstack")

#' @export
torch_column_stack <- function(tensors) {
  tensors <- shape_tensor_list(tensors, "torch_column_stack")
  # Scalars and vectors become columns; matrices and up join as they are.
  tensors <- lapply(tensors, function(t) if (t$ndim <= 1) t$reshape(c(-1, 1)) else t)
  torch_cat(tensors, dim = 2L)
}

# ---- grids and broadcasting ----------------------------------------------------------------

#' @export
torch_meshgrid <- function(tensors, indexing) {
  fn <- "torch_meshgrid"
  tensors <- shape_tensor_list(tensors, fn)
  # torch's default (with a warning there) is "ij".
  if (missing(indexing)) indexing <- "ij"
  if (!is.character(indexing) || length(indexing) != 1 || !indexing %in% c("ij", "xy")) {
    value_error(fn, ": indexing must be \"ij\" or \"xy\", got ", shape_text(indexing))
  }
  check_list_ndims(tensors, 0:1, fn, "0-d or 1-d")
  # "xy" is "ij" with the first two inputs swapped, and the first two outputs swapped back.
  order <- seq_along(tensors)
  if (indexing == "xy" && length(order) >= 2) order[1:2] <- 2:1
  tensors <- tensors[order]
  sizes <- vapply(tensors, function(t) as.integer(t$numel()), integer(1))
  grids <- lapply(seq_along(tensors), function(i) {
    shape <- rep(1L, length(sizes))
    shape[i] <- sizes[i]
    tensors[[i]]$reshape(shape)$expand(sizes)
  })
  grids[order]
}

#' @export
torch_broadcast_shapes <- function(...) broadcast_shape(list(...), "torch_broadcast_shapes")

#' @export
torch_broadcast_tensors <- function(tensors) {
  tensors <- shape_tensor_list(tensors, "torch_broadcast_tensors")
  shape <- broadcast_shape(lapply(tensors, function(t) t$shape), "torch_broadcast_tensors")
  lapply(tensors, function(t) t$expand(shape))
}

#' @export
torch_cartesian_prod <- function(tensors) {
  fn <- "torch_cartesian_prod"
  tensors <- shape_tensor_list(tensors, fn)
  check_list_ndims(tensors, 1, fn, "1-d")
  if (length(tensors) == 1) return(tensors[[1]])
  grids <- torch_meshgrid(tensors, indexing = "ij")
  torch_stack(lapply(grids, function(g) g$reshape(-1)), dim = 2L)
}

# ---- flattening and unflattening -----------------------------------------------------------

#' @export
torch_ravel <- function(self) extra_tensor(self, "torch_ravel")$reshape(-1)

#' @export
torch_unflatten <- function(self, dim, sizes, names) {
  fn <- "torch_unflatten"
  self <- extra_tensor(self, fn)
  if (is.character(dim) || !missing(names)) value_error(fn, ": named dims are not supported; give dim as a number")
  d <- extra_dim(dim, self$ndim, fn, "dim")
  sizes <- unlist(sizes)
  if (!is.numeric(sizes) || !length(sizes) || anyNA(sizes) || any(sizes != trunc(sizes)) || any(sizes < -1) ||
      sum(sizes == -1) > 1) {
    value_error(fn, ": sizes must be whole numbers >= 0 with at most one -1, got ", shape_text(sizes))
  }
  shape <- self$shape
  n <- shape[d]
  known <- prod(sizes[sizes != -1])
  if (any(sizes == -1) && known > 0) sizes[sizes == -1] <- n / known
  if (prod(sizes) != n || any(sizes != trunc(sizes))) {
    value_error(fn, ": sizes ", shape_text(sizes), " do not multiply to the size of dim ", d, " (", n, ")")
  }
  # Splitting one dim is always a view, whatever its stride.
  self$reshape(c(shape[seq_len(d - 1)], sizes, shape[-seq_len(d)]))
}

# ---- diagonals -----------------------------------------------------------------------------

# The offset-th diagonal of the planes (dim1, dim2), as a new last dim. A copy: the two dims are
# moved last and merged, and index_select picks the diagonal's positions in the merged dim.
take_diagonal <- function(self, offset, dim1, dim2, fn) {
  offset <- extra_whole(offset, fn, "offset")
  d1 <- extra_dim(dim1, self$ndim, fn, "dim1")
  d2 <- extra_dim(dim2, self$ndim, fn, "dim2")
  if (d1 == d2) value_error(fn, ": dim1 and dim2 must be different dims, both are ", d1)
  shape <- self$shape
  rows <- shape[d1]
  cols <- shape[d2]
  # Element k of the diagonal is at row k - min(offset, 0) and column k + max(offset, 0).
  k <- seq_len(max(0, min(rows + min(offset, 0), cols - max(offset, 0))))
  flat <- (k - min(offset, 0) - 1) * cols + k + max(offset, 0)
  rest <- seq_along(shape)[-c(d1, d2)]
  merged <- self$permute(c(rest, d1, d2))$reshape(c(shape[rest], rows * cols))
  merged$index_select(length(rest) + 1, flat)
}

# rcuda has no named dims: outdim, which names the new dim, is refused.
no_outdim <- function(fn) value_error(fn, ": outdim (a named dim) is not supported; rcuda has no named tensors")

#' @export
torch_diagonal <- function(self, outdim, dim1 = 1L, dim2 = 2L, offset = 0L) {
  if (!missing(outdim)) no_outdim("torch_diagonal")
  take_diagonal(extra_tensor(self, "torch_diagonal"), offset, dim1, dim2, "torch_diagonal")
}

#' @export
torch_trace <- function(self) {
  self <- extra_tensor(self, "torch_trace")
  if (self$ndim != 2) value_error("torch_trace: self must be a matrix (2-d), got a ", self$ndim, "-d tensor")
  take_diagonal(self, 0L, 1L, 2L, "torch_trace")$sum()
}

#' @export
torch_diag_embed <- function(self, offset = 0L, dim1 = -2L, dim2 = -1L) {
  fn <- "torch_diag_embed"
  self <- extra_tensor(self, fn)
  if (self$ndim < 1) value_error(fn, ": self must have at least 1 dim, got a 0-d tensor")
  offset <- extra_whole(offset, fn, "offset")
  out_ndim <- self$ndim + 1
  d1 <- extra_dim(dim1, out_ndim, fn, "dim1")
  d2 <- extra_dim(dim2, out_ndim, fn, "dim2")
  if (d1 == d2) value_error(fn, ": dim1 and dim2 must be different dims, both are ", d1)
  shape <- self$shape
  batch <- shape[-self$ndim]
  n <- shape[self$ndim]
  m <- n + abs(offset)
  # Each position of the m x m plane (row-major) picks element k of self's last dim when it is on
  # the diagonal, else an appended zero: exact for Inf and NaN, where a product with a 0/1 matrix
  # would give NaN, and index_select carries the gradient.
  k <- seq_len(n)
  pick <- rep(n + 1, m * m)
  pick[(k - min(offset, 0) - 1) * m + k + max(offset, 0)] <- k
  zero <- torch_zeros(c(batch, 1L), dtype = self$dtype, device = self$device)
  planes <- torch_cat(list(self, zero), dim = -1L)$index_select(self$ndim, pick)$reshape(c(batch, m, m))
  move_dims(planes, c(out_ndim - 1, out_ndim), c(d1, d2), fn)
}

# ---- products and rotations ----------------------------------------------------------------

#' @export
torch_kron <- function(self, other) {
  self <- extra_tensor(self, "torch_kron")
  other <- extra_tensor(other, "torch_kron", "other")
  n <- max(self$ndim, other$ndim)
  if (n == 0) return(self * other)
  a <- c(rep(1L, n - self$ndim), self$shape)
  b <- c(rep(1L, n - other$ndim), other$shape)
  # self as [a1, 1, a2, 1, ...] times other as [1, b1, 1, b2, ...]: merging each (ai, bi) pair
  # puts self[i] * other[j] at (i - 1) * bi + j.
  left <- self$reshape(as.vector(rbind(a, 1L)))
  right <- other$reshape(as.vector(rbind(1L, b)))
  (left * right)$reshape(a * b)
}

#' @export
torch_rot90 <- function(self, k = 1L, dims = c(0, 1)) {
  fn <- "torch_rot90"
  self <- extra_tensor(self, fn)
  # torch for R's default c(0, 1) is PyTorch's 0-based [0, 1]: the first two dims.
  if (missing(dims)) dims <- c(1L, 2L)
  if (length(unlist(dims)) != 2) value_error(fn, ": dims must name 2 dims, got ", shape_text(dims))
  if (self$ndim < 2) value_error(fn, ": self must have at least 2 dims, got a ", self$ndim, "-d tensor")
  d <- shape_dims(dims, self$ndim, fn, "dims")
  k <- extra_whole(k, fn, "k") %% 4
  switch(k + 1,
    self$clone(),
    self$flip(d[2])$transpose(d[1], d[2]),
    self$flip(d),
    self$flip(d[1])$transpose(d[1], d[2])
  )
}

#' @export
torch_fliplr <- function(self) {
  self <- extra_tensor(self, "torch_fliplr")
  if (self$ndim < 2) value_error("torch_fliplr: self must have at least 2 dims, got a ", self$ndim, "-d tensor")
  self$flip(2)
}

#' @export
torch_flipud <- function(self) {
  self <- extra_tensor(self, "torch_flipud")
  if (self$ndim < 1) value_error("torch_flipud: self must have at least 1 dim, got a 0-d tensor")
  self$flip(1)
}

#' @export
torch_block_diag <- function(tensors) {
  fn <- "torch_block_diag"
  tensors <- as_tensor_list(tensors, fn)
  if (length(tensors) == 0) return(torch_empty(1, 0))  # torch's answer for no blocks
  check_list_ndims(tensors, 0:2, fn, "0-, 1- or 2-d")
  blocks <- at_least(tensors, 2, fn)
  cols <- vapply(blocks, function(b) as.integer(b$shape[2]), integer(1))
  before <- cumsum(c(0L, cols))[seq_along(cols)]
  # Each block is padded with zeros of its own dtype, so that the final cat promotes across the
  # blocks' dtypes only.
  rows <- lapply(seq_along(blocks), function(i) {
    b <- blocks[[i]]
    pad <- function(width) torch_zeros(c(b$shape[1], width), dtype = b$dtype, device = b$device)
    torch_cat(list(pad(before[i]), b, pad(sum(cols) - before[i] - cols[i])), dim = 2L)
  })
  torch_cat(rows, dim = 1L)
}

# ---- gathering -----------------------------------------------------------------------------

triangle_indices <- function(row, col, offset, dtype, device, layout, lower, fn) {
  row <- extra_whole(row, fn, "row")
  col <- extra_whole(col, fn, "col")
  offset <- extra_whole(offset, fn, "offset")
  if (row < 0 || col < 0) value_error(fn, ": row and col must be >= 0, got ", row, " and ", col)
  check_layout(layout, fn)
  r <- rep(seq_len(row), each = col)
  c <- rep(seq_len(col), times = row)
  keep <- if (lower) c - r <= offset else c - r >= offset
  torch_tensor(rbind(r[keep], c[keep]), dtype = if (is.null(dtype)) torch_long() else dtype, device = device)
}

#' @export
torch_tril_indices <- function(row, col, offset = 0, dtype = NULL, device = NULL, layout = NULL) {
  triangle_indices(row, col, offset, dtype, device, layout, TRUE, "torch_tril_indices")
}

#' @export
torch_triu_indices <- function(row, col, offset = 0, dtype = NULL, device = NULL, layout = NULL) {
  triangle_indices(row, col, offset, dtype, device, layout, FALSE, "torch_triu_indices")
}

#' @export
torch_take_along_dim <- function(self, indices, dim = NULL) {
  fn <- "torch_take_along_dim"
  self <- extra_tensor(self, fn)
  indices <- extra_tensor(indices, fn, "indices")
  if (!indices$dtype$name %in% c("int64", "int32", "int16", "int8", "uint8")) {
    value_error(fn, ": indices must be an integer tensor, got ", indices$dtype$name)
  }
  indices <- indices$long()
  if (is.null(dim)) return(torch_gather(self$reshape(-1), 1L, indices$reshape(-1)))
  if (self$ndim != indices$ndim) {
    value_error(fn, ": self and indices must have as many dims, got ", self$ndim, " and ", indices$ndim)
  }
  d <- extra_dim(dim, self$ndim, fn, "dim")
  # Both broadcast against each other in every dim but d, where each keeps its own size.
  s <- self$shape
  i <- indices$shape
  s_at <- s
  s_at[d] <- i[d]
  i_at <- i
  i_at[d] <- s[d]
  torch_gather(self$expand(broadcast_shape(list(i_at, s), fn)), d, indices$expand(broadcast_shape(list(s_at, i), fn)))
}

# ---- tensor methods ------------------------------------------------------------------------

m <- tensor_methods
m$chunk <- function(self, chunks, dim = 1L) torch_chunk(self, chunks, dim)
m$split <- function(self, split_size, dim = 1L) torch_split(self, split_size, dim)
m$movedim <- function(self, source, destination) torch_movedim(self, source, destination)
m$moveaxis <- function(self, source, destination) torch_moveaxis(self, source, destination)
m$swapaxes <- function(self, axis0, axis1) torch_swapaxes(self, axis0, axis1)
m$swapdims <- function(self, dim0, dim1) torch_swapdims(self, dim0, dim1)
m$diagonal <- function(self, outdim, dim1 = 1L, dim2 = 2L, offset = 0L) {
  if (!missing(outdim)) no_outdim("diagonal")
  take_diagonal(self, offset, dim1, dim2, "diagonal")
}
m$trace <- function(self) torch_trace(self)
m$ravel <- function(self) torch_ravel(self)
m$unflatten <- function(self, dim, sizes, names) {
  if (!missing(names)) value_error("unflatten: named dims are not supported; give dim as a number")
  torch_unflatten(self, dim, sizes)
}
m$diag_embed <- function(self, offset = 0L, dim1 = -2L, dim2 = -1L) torch_diag_embed(self, offset, dim1, dim2)
m$kron <- function(self, other) torch_kron(self, other)
m$rot90 <- function(self, k = 1L, dims = c(0, 1)) {
  if (missing(dims)) torch_rot90(self, k) else torch_rot90(self, k, dims)
}
m$fliplr <- function(self) torch_fliplr(self)
m$flipud <- function(self) torch_flipud(self)
m$take_along_dim <- function(self, indices, dim = NULL) torch_take_along_dim(self, indices, dim)
m$narrow_copy <- function(self, dim, start, length) {
  # narrow counts start from 1; torch for R refuses 0 here with this message.
  if (is.numeric(start) && length(start) == 1 && !is.na(start) && start == 0) {
    value_error("narrow_copy: start indexing starts at 1, got 0")
  }
  self$narrow(dim, start, length)$clone()
}
rm(m)
