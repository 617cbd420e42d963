# `[` and `[<-` with torch for R's rules: positions start at 1; negative positions count from
# the end (x[-1] is the last element, not "all but the first" as in base R); a single number
# drops its dim unless drop = FALSE; an evenly spaced increasing vector (1:3, seq(1, 9, by = 2))
# is a view (a slice); any other vector selects those positions (a copy); a missing argument
# keeps the dim; `..` stands for all remaining dims; a bool tensor as the only index selects
# the elements where it is TRUE. Several vectors select on each dim independently, as base R
# does (not numpy's pointwise pairing).

index_args <- function(x, args, env) {
  n <- length(.Call(rc_shape, x))
  is_empty <- vapply(args, function(a) identical(a, quote(expr = )), logical(1))
  is_dots <- vapply(args, function(a) identical(a, as.name("..")), logical(1))
  if (sum(is_dots) > 1) index_error("only one `..` is allowed in an index")
  values <- vector("list", length(args))
  for (i in seq_along(args)) {
    if (!is_empty[i] && !is_dots[i]) values[i] <- list(eval(args[[i]], env))
  }
  if (any(is_dots)) {
    at <- which(is_dots)
    fill <- n - (length(args) - 1)
    values <- c(values[seq_len(at - 1)], rep(list(NULL), max(fill, 0)), values[-seq_len(at)])
  }
  if (length(values) > n) index_error("too many indices (", length(values), ") for a ", n, "-d tensor")
  values
}

# Positions as 1-based positives, checked against the dim's size.
normalize_positions <- function(i, size, dim) {
  if (is.logical(i)) {
    if (length(i) != size) index_error("logical index of length ", length(i), " for dim ", dim, " of size ", size)
    return(which(i))
  }
  if (is_torch_tensor(i)) i <- as_array(i)
  if (!is.numeric(i) || anyNA(i)) index_error("indices must be numbers without NA")
  if (any(i == 0)) index_error("indices start at 1; got 0 for dim ", dim)
  i <- ifelse(i < 0, size + i + 1, i)
  if (any(i < 1 | i > size)) {
    index_error("index ", i[i < 1 | i > size][1], " is out of range for dim ", dim, " of size ", size)
  }
  i
}

apply_index <- function(x, values, drop, views_only = FALSE) {
  if (length(values) == 1 && is_torch_tensor(values[[1]]) && values[[1]]$dtype == torch_bool()) {
    if (views_only) return(list(mask = values[[1]]))
    return(.Call(rc_masked_select, x, values[[1]]))
  }
  shape <- .Call(rc_shape, x)
  d <- 1L  # position of the current dim in the result
  for (k in seq_along(values)) {
    i <- values[[k]]
    if (is.null(i)) {
      d <- d + 1L
      next
    }
    if (is_torch_tensor(i) && i$numel() == 1 && i$dtype != torch_bool()) i <- i$item()
    size <- shape[k]
    p <- normalize_positions(i, size, k)
    if (length(p) == 1 && !is.logical(i) && drop) {
      x <- .Call(rc_select, x, d, p)
      next
    }
    step <- if (length(p) > 1) p[2] - p[1] else 1
    if (length(p) >= 1 && step > 0 && all(diff(p) == step)) {
      x <- .Call(rc_slice, x, d, p[1], p[length(p)], step)
    } else if (views_only) {
      index_error("assignment supports positions, ranges and masks; this index is not evenly spaced")
    } else {
      x <- .Call(rc_index_select, x, d, p)
    }
    d <- d + 1L
  }
  x
}

#' @export
`[.rcuda_tensor` <- function(x, ..., drop = TRUE) {
  args <- as.list(substitute(list(...)))[-1]
  if (length(args) == 0) return(x)
  apply_index(x, index_args(x, args, parent.frame()), drop)
}

#' @export
`[<-.rcuda_tensor` <- function(x, ..., value) {
  args <- as.list(substitute(list(...)))[-1]
  target <- if (length(args) == 0) x else apply_index(x, index_args(x, args, parent.frame()), TRUE, TRUE)
  if (!is_torch_tensor(value) && length(value) > 1) value <- torch_tensor(value, device = x$device)
  if (is.list(target)) {
    # A mask: write value where it is TRUE, then copy the result back into x's storage.
    if (is_torch_tensor(value)) value <- value$item()
    .Call(rc_assign, x, .Call(rc_masked_fill, x, target$mask, value))
  } else {
    .Call(rc_assign, target, value)
  }
  x
}
