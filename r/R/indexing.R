# `[` and `[<-` with torch for R's rules (its indexing vignette):
# - positions start at 1; a negative position counts from the end (x[-1] is the last element,
#   not "all but the first" as in base R); 0 is an error;
# - a single number selects one position and drops its dim, unless drop = FALSE;
# - `a:b` written in the index is a slice, a view of elements a to b inclusive, and `a:b:s`
#   takes every s-th of them. Negative ends count from the end, ends past the dim are clipped,
#   and a start after the end selects nothing (so 5:1 is empty: use c(5, 4, 3, 2, 1) to
#   reverse). slc(start, end, step) makes the same slice from values; `N` in an index is the
#   size of the dim it indexes (x[2:N], x[N]);
# - any other vector selects those positions in its order (a copy), a logical vector the
#   positions where it is TRUE; several vectors select on each dim independently, as base R
#   does (not numpy's pointwise pairing);
# - a missing argument keeps the whole dim, as do trailing dims left out; `..` stands for all
#   the dims no other argument indexes; NULL or `newaxis` inserts a dim of size 1;
# - a long tensor indexes like a vector (a 0-d one like a number; a k-d one puts its shape in
#   place of the dim); a bool tensor selects the elements where it is TRUE over as many dims
#   as it has, and must match their sizes;
# - an R matrix or array (two dims or more) indexes as the tensor made from it, as torch for R's
#   does: numbers as a long tensor (x[rbind(c(1, 1), c(1, 2))] has shape [2, 2, ...]), logicals
#   as a bool mask (x[as.array(x > 0)] is x[x > 0]).
# Assignment takes the same indices and writes in place; the value broadcasts to the shape the
# same index would read.

#' @export
slc <- function(start, end, step = 1) new_slice(start, end, step, "slc")

#' @export
print.rcuda_slice <- function(x, ...) {
  cat("<slice ", x$start, ":", x$end, ":", x$step, ">\n", sep = "")
  invisible(x)
}

new_slice <- function(start, end, step, caller) {
  start <- slice_part(start, "start", caller)
  end <- slice_part(end, "end", caller)
  step <- slice_part(step, "step", caller)
  if (step < 1 || step != floor(step) || is.infinite(step)) {
    index_error(caller, ": step must be a whole number of at least 1, got ", step)
  }
  structure(list(start = start, end = end, step = step), class = "rcuda_slice")
}

slice_part <- function(v, name, caller) {
  if (is_torch_tensor(v) && v$numel() == 1) v <- v$item()
  if (!is.numeric(v) || length(v) != 1 || is.na(v)) {
    index_error(caller, ": ", name, " must be a single number, got ", deparse(v)[1])
  }
  v
}

# The bounds of a slice on a dim of `size`: 0-based start and exclusive end, clipped to the
# dim, as torch for R's slc(): end -1 (or Inf) is the last element, other negative ends count
# from the end.
slice_bounds <- function(s, size) {
  start <- if (s$start > 0) s$start - 1 else s$start
  end <- if (s$end == -1 || s$end == Inf) size else if (s$end < -1) s$end + 1 else s$end
  if (start < 0) start <- start + size
  if (end < 0) end <- end + size
  start <- min(max(start, 0), size)
  c(start, min(max(end, start), size))
}

# ---- from the arguments to one entry per indexed dim ----------------------------------------

index_all <- structure(list(), class = "rcuda_index_all")
index_fill <- structure(list(), class = "rcuda_index_fill")
all_entry <- list(kind = "all")

# Note [Eagerly evaluated indices]
# Tensors carry the S4 bit (Note [Operator dispatch] in s4.R). Once a loaded package defines S4 methods for `[`
# (Matrix, diffobj, ...), R evaluates the index arguments in the caller's frame to pick a
# method, and passes the values on; `[.rcuda_tensor` takes the expressions from the call
# instead (index_exprs) and evaluates them again, with N bound to the dim's size. These
# stand-ins keep the first evaluation from failing with "object 'N' not found"; N is 1 there,
# as a large N would make 2:N a vector R may allocate in full. (An a:b:s index then also warns
# that only the first element of a:b is used.)
#' @export
N <- 1L
#' @export
newaxis <- NULL
#' @export
`..` <- index_fill

is_call_to <- function(expr, name) is.call(expr) && identical(expr[[1]], as.name(name))

strip_parens <- function(expr) {
  while (is_call_to(expr, "(")) expr <- expr[[2]]
  expr
}

# One argument's value, evaluated in `mask` (the caller's frame plus N, newaxis and `..`);
# `a:b` and `a:b:s` at the top of the expression become slices.
eval_index <- function(expr, mask) {
  expr <- strip_parens(expr)
  if (!is_call_to(expr, ":") || length(expr) != 3) return(eval(expr, mask))
  lhs <- strip_parens(expr[[2]])
  if (is_call_to(lhs, ":") && length(lhs) == 3) {
    return(new_slice(eval(lhs[[2]], mask), eval(lhs[[3]], mask), eval(expr[[3]], mask), "index a:b:step"))
  }
  new_slice(eval(lhs, mask), eval(expr[[3]], mask), 1, "index a:b")
}

# An R matrix or array as an index tensor on x's device (whole numbers as long, logicals as
# bool); any other value as it is.
array_index <- function(value, x) {
  if (!is.null(attr(value, "class")) || length(dim(value)) < 2) return(value)  # tensors, slices first
  if (is.logical(value)) {
    if (anyNA(value)) index_error("a logical index array holds NA")
    return(torch_tensor(value, dtype = torch_bool(), device = x$device))
  }
  if (!is.numeric(value)) return(value)
  if (anyNA(value) || any(value != trunc(value))) {
    index_error("an index matrix or array must hold whole numbers (1-based positions)")
  }
  torch_tensor(value, dtype = torch_long())
}

# How many dims of x an index value consumes.
index_width <- function(value) {
  if (is.null(value) || inherits(value, "rcuda_index_fill")) return(0L)
  if (is_torch_tensor(value) && value$dtype == torch_bool()) {
    if (value$dim() == 0) index_error("a 0-d bool tensor cannot be an index; use a bool tensor with dims")
    return(value$dim())
  }
  1L
}

# The entries for the arguments of x[...]: `..` expanded, N bound, each value checked against
# the dims it indexes. Arguments that use N are evaluated once their dim is known.
index_entries <- function(x, args, env) {
  shape <- .Call(rc_shape, x)
  mask <- new.env(parent = env)
  assign("newaxis", NULL, envir = mask)
  assign("..", index_fill, envir = mask)
  n <- length(args)
  values <- vector("list", n)
  widths <- integer(n)
  uses_n <- logical(n)
  fill_at <- 0L
  for (i in seq_len(n)) {
    # (An empty argument is R's missing-argument symbol, which cannot be bound to a variable.)
    if (identical(args[[i]], quote(expr = ))) {
      values[[i]] <- index_all
    } else if (any(all.names(args[[i]]) == "N")) {
      uses_n[i] <- TRUE
    } else {
      values[i] <- list(array_index(eval_index(args[[i]], mask), x))
    }
    if (inherits(values[[i]], "rcuda_index_fill")) {
      if (fill_at > 0) index_error("only one `..` is allowed in an index")
      fill_at <- i
    }
    widths[i] <- if (uses_n[i]) 1L else index_width(values[[i]])
  }
  if (sum(widths) > length(shape)) {
    index_error("too many indices (", sum(widths), ") for a ", length(shape), "-d tensor")
  }
  entries <- vector("list", n)
  dim <- 1L
  for (i in seq_len(n)) {
    if (i == fill_at) {
      fill <- length(shape) - sum(widths)
      entries[[i]] <- rep(list(all_entry), fill)
      dim <- dim + fill
      next
    }
    if (uses_n[i]) {
      assign("N", shape[dim], envir = mask)
      values[i] <- list(array_index(eval_index(args[[i]], mask), x))
      if (index_width(values[[i]]) != 1) index_error("an index that uses N must index one dim (dim ", dim, ")")
    }
    dims <- dim + seq_len(widths[i]) - 1L
    entries[[i]] <- list(index_entry(values[[i]], shape[dims], dim))
    dim <- dim + widths[i]
  }
  unlist(entries, recursive = FALSE)
}

# One entry: all | newaxis | select (one position) | slice (0-based start, exclusive end) |
# positions (1-based, with the index tensor's shape when it has one) | mask (over its dims).
index_entry <- function(value, size, dim) {
  if (inherits(value, "rcuda_index_all")) return(all_entry)
  if (is.null(value)) return(list(kind = "newaxis"))
  if (inherits(value, "rcuda_slice")) {
    b <- slice_bounds(value, size)
    return(list(kind = "slice", start = b[1], end = b[2], step = value$step))
  }
  if (is_torch_tensor(value)) return(tensor_entry(value, size, dim))
  if (is.logical(value) && is.null(attr(value, "class"))) {
    if (anyNA(value)) index_error("logical index for dim ", dim, " holds NA")
    if (length(value) != size) {
      index_error("logical index of length ", length(value), " for dim ", dim, " of size ", size)
    }
    return(list(kind = "positions", at = which(value)))
  }
  if (!is.numeric(value) || !is.null(attr(value, "class"))) {
    index_error("unsupported index for dim ", dim, ": ", class(value)[1],
                " (use numbers, logicals, a:b, slc(), NULL, `..` or a long or bool tensor)")
  }
  at <- normalize_positions(value, size, dim)
  if (length(value) == 1) list(kind = "select", at = at) else list(kind = "positions", at = at)
}

tensor_entry <- function(value, size, dim) {
  if (value$dtype == torch_bool()) {
    if (!identical(as.integer(value$shape), as.integer(size))) {
      index_error("bool index of shape [", paste(value$shape, collapse = ", "), "] does not match dims ",
                  dim, " to ", dim + length(size) - 1, " of shape [", paste(size, collapse = ", "), "]")
    }
    return(list(kind = "mask", mask = value, ndim = length(size), tensor = TRUE))
  }
  if (value$dtype != torch_long()) {
    index_error("index tensors must be long (int64) or bool, got ", dtype_name(value$dtype), " for dim ", dim)
  }
  at <- normalize_positions(as.numeric(as_array(value$flatten())), size, dim)
  if (value$dim() == 0) return(list(kind = "select", at = at, tensor = TRUE))
  list(kind = "positions", at = at, shape = value$shape, tensor = TRUE)
}

# Positions as 1-based positives, checked against the dim's size.
normalize_positions <- function(i, size, dim) {
  if (anyNA(i)) index_error("indices must be numbers without NA (dim ", dim, ")")
  if (any(i == 0)) index_error("Indexing starts at 1 but found a 0 (dim ", dim, ")")
  at <- i
  at[i < 0] <- size + i[i < 0] + 1
  bad <- at < 1 | at > size
  # (torch's words, "out of bounds", which scripts and torch for R's tests match)
  if (any(bad)) index_error("index ", i[bad][1], " is out of bounds for dimension ", dim, " with size ", size)
  at
}

# ---- reading ------------------------------------------------------------------------------

apply_entries <- function(x, entries, drop) {
  d <- 1L  # position of the current dim in the result
  for (e in entries) {
    if (e$kind == "select" && drop) {
      x <- .Call(rc_select, x, d, e$at)
      next
    }
    x <- switch(e$kind,
      all = x,
      newaxis = .Call(rc_unsqueeze, x, d),
      select = .Call(rc_slice, x, d, e$at, e$at, 1),
      slice = .Call(rc_slice, x, d, e$start + 1, e$end, e$step),
      positions = select_positions(x, d, e),
      mask = select_mask(x, d, e)
    )
    d <- d + if (e$kind == "positions" && length(e$shape) > 1) length(e$shape) else 1L
  }
  x
}

# A k-d long tensor index puts its shape in place of the dim.
select_positions <- function(x, d, e) {
  out <- .Call(rc_index_select, x, d, e$at)
  if (length(e$shape) <= 1) return(out)
  shape <- .Call(rc_shape, out)
  .Call(rc_reshape, "reshape", out, c(shape[seq_len(d - 1)], e$shape, shape[-seq_len(d)]))
}

# The mask's dims become one dim of the selected elements (row-major order).
select_mask <- function(x, d, e) {
  if (d == 1 && e$ndim == length(.Call(rc_shape, x))) return(.Call(rc_masked_select, x, e$mask))
  if (e$ndim > 1) x <- .Call(rc_flatten, x, d, d + e$ndim - 1)
  at <- as.numeric(as_array(.Call(rc_nonzero, e$mask$flatten(), FALSE)))
  .Call(rc_index_select, x, d, at)
}

# The index expressions of a `[` or `[<-` call. substitute() gives them, unless R has already
# evaluated them (Note [Eagerly evaluated indices]), when it gives their values; the call
# itself still holds the expressions then. (With dots passed on, x[...], the call holds `...`
# and substitute() is right.)
index_exprs <- function(dots, call) {
  if (length(dots) == 1 && identical(dots[[1]], quote(expr = ))) return(list())  # x[]: all of x
  from_call <- as.list(call)[-(1:2)]
  if (!is.null(names(from_call))) from_call <- from_call[!names(from_call) %in% c("drop", "value")]
  if (length(from_call) != length(dots)) return(dots)
  for (i in seq_along(from_call)) if (identical(from_call[[i]], quote(...))) return(dots)
  from_call
}

#' @export
`[.rcuda_tensor` <- function(x, ..., drop = TRUE) {
  args <- index_exprs(as.list(substitute(list(...)))[-1], sys.call())
  if (length(args) == 0) return(x)
  scalars <- read_scalars(x, args, parent.frame(), drop)
  if (!is.null(scalars)) return(scalars)
  apply_entries(x, index_entries(x, args, parent.frame()), drop)
}

# x[2, 3], x[i, ], x[-1], x[2:50, ], x[i:j]: every argument empty, a whole number written out
# or held in a variable, or a:b of such numbers. These reads, common in R loops, skip the
# general machinery above (about 80 us a call); NULL sends anything else to the general path.
# Without `..` or new axes argument k indexes dim k, so positions are checked as there.
# A whole number written out or held in a variable (not N, `..` or newaxis); NULL otherwise.
simple_number <- function(e, env) {
  if (is.symbol(e)) {
    name <- as.character(e)
    if (name == "N" || name == ".." || name == "newaxis") return(NULL)
    e <- get0(name, envir = env)
  }
  if (!is.numeric(e) || is.object(e) || length(e) != 1L || is.na(e) || e != trunc(e)) return(NULL)
  e
}

read_scalars <- function(x, args, env, drop) {
  shape <- .Call(rc_shape, x)
  if (length(args) > length(shape)) return(NULL)
  kind <- character(length(args))  # "all", "select" or "slice"
  from <- to <- numeric(length(args))
  for (k in seq_along(args)) {
    if (identical(args[[k]], quote(expr = ))) {
      kind[k] <- "all"
      next
    }
    e <- args[[k]]
    if (is.call(e) && identical(e[[1]], as.name(":")) && length(e) == 3) {
      a <- simple_number(e[[2]], env)
      b <- simple_number(e[[3]], env)
      if (is.null(a) || is.null(b)) return(NULL)
      bounds <- slice_bounds(list(start = a, end = b), shape[[k]])
      kind[k] <- "slice"
      from[k] <- bounds[1] + 1
      to[k] <- bounds[2]
      next
    }
    e <- simple_number(e, env)
    if (is.null(e)) return(NULL)
    kind[k] <- "select"
    from[k] <- normalize_positions(e, shape[[k]], k)  # the general path's checks and errors
  }
  d <- 1L  # the dim of the result the next argument indexes
  for (k in seq_along(args)) {
    if (kind[k] == "select" && drop) {
      x <- .Call(rc_select, x, d, from[k])
      next
    }
    if (kind[k] == "select") x <- .Call(rc_slice, x, d, from[k], from[k], 1)
    if (kind[k] == "slice") x <- .Call(rc_slice, x, d, from[k], to[k], 1)
    d <- d + 1L
  }
  x
}

# ---- assignment ---------------------------------------------------------------------------

#' @export
`[<-.rcuda_tensor` <- function(x, ..., value) {
  args <- index_exprs(as.list(substitute(list(...)))[-1], sys.call())
  # x[i, j] <- v: the view read_scalars() gives, written in place.
  target <- if (length(args) == 0) NULL else read_scalars(x, args, parent.frame(), TRUE)
  if (!is.null(target)) {
    .Call(rc_assign, target, fit_value(assign_value(value, x), .Call(rc_shape, target)))
    return(x)
  }
  entries <- if (length(args) == 0) list() else index_entries(x, args, parent.frame())
  # torch for R refuses two index tensors in an assignment (PyTorch would pair them pointwise,
  # base R would take a block: the two disagree, so neither is guessed).
  if (sum(vapply(entries, function(e) isTRUE(e$tensor), logical(1))) > 1) {
    index_error("`[<-`: Only one tensor is allowed in the index (give the others as R vectors, ",
                "which select on each dim independently)")
  }
  value <- assign_value(value, x)
  views_only <- TRUE
  for (k in seq_along(entries)) {
    entries[[k]] <- as_slice_if_even(entries[[k]])
    views_only <- views_only && !(entries[[k]]$kind %in% c("positions", "mask"))
  }
  if (views_only) {
    target <- apply_entries(x, entries, TRUE)
    .Call(rc_assign, target, fit_value(value, .Call(rc_shape, target)))
  } else {
    put_indices(x, entries, value)
  }
  x
}

# Numbers stay numbers (a fill); vectors become tensors of x's dtype, so a float64 tensor takes
# R's doubles without a trip through float32.
assign_value <- function(value, x) {
  if (is_torch_tensor(value)) return(value)
  if (!(is.numeric(value) || is.logical(value)) || !is.null(attr(value, "class"))) {
    value_error("`[<-`: value must be a tensor, a number or a numeric or logical vector, got ", class(value)[1])
  }
  if (length(value) == 1) return(value)
  torch_tensor(value, dtype = x$dtype, device = x$device)
}

# A tensor value must broadcast to the selection's shape. As torch, leading size-1 dims that
# the selection lacks are dropped first: x[1, 1] <- torch_tensor(0) writes into a 0-d selection.
fit_value <- function(value, shape) {
  if (!is_torch_tensor(value)) return(value)
  v <- value$shape
  k <- 0L
  while (length(v) - k > length(shape) && v[k + 1] == 1) k <- k + 1L
  v <- v[seq_along(v) > k]
  if (length(v) > length(shape) || !all(v == 1 | v == shape[length(shape) - length(v) + seq_along(v)])) {
    shape_error("`[<-`: a value of shape [", paste(value$shape, collapse = ", "),
                "] cannot be assigned to a selection of shape [", paste(shape, collapse = ", "), "]")
  }
  if (k == 0) value else .Call(rc_reshape, "reshape", value, v)
}

# Evenly spaced increasing positions address the same elements as a slice, which is a view and
# so is written in place without a copy.
as_slice_if_even <- function(e) {
  if (e$kind != "positions" || length(e$shape) > 1 || length(e$at) == 0) return(e)
  at <- e$at
  step <- if (length(at) > 1) at[2] - at[1] else 1
  if (step < 1 || any(diff(at) != step)) return(e)
  list(kind = "slice", start = at[1] - 1, end = at[length(at)], step = step)
}

# Vectors and masks: the engine's index_put_ writes value into x through one index per dim
# (rc_index_put, Note [R indices as an index list] in src/index_put.cpp): NULL for a whole dim,
# 1-based positions with the shape they take in the selection (none for a number, whose dim is
# dropped), or a bool tensor for a mask. New axes only add size-1 dims to the selection, so they
# are taken as a view of x first.
put_indices <- function(x, entries, value) {
  target <- x
  if (any(vapply(entries, function(e) e$kind == "newaxis", logical(1)))) {
    target <- apply_entries(x, lapply(entries, function(e) if (e$kind == "newaxis") e else all_entry), TRUE)
    entries <- lapply(entries, function(e) if (e$kind == "newaxis") all_entry else e)
  }
  indices <- vector("list", length(entries))  # NULL: the whole dim
  for (k in seq_along(entries)) {
    e <- entries[[k]]
    indices[k] <- list(switch(e$kind,
      all = NULL,
      select = structure(e$at, shape = integer(0)),
      slice = slice_positions(e),
      positions = structure(e$at, shape = if (is.null(e$shape)) length(e$at) else e$shape),
      mask = e$mask
    ))
  }
  .Call(rc_index_put, target, indices, value)
  invisible(x)
}

# The 1-based positions a slice (0-based start, exclusive end) covers.
slice_positions <- function(e) {
  if (e$end <= e$start) return(structure(numeric(0), shape = 0L))
  at <- seq(e$start + 1, e$end, by = e$step)
  structure(at, shape = length(at))
}
