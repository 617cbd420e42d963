# torch_index(), torch_index_put() and torch_index_put_(): PyTorch's advanced indexing with a
# list of index tensors, as torch for R's (1-based). Unlike `[` (one index per dim, combined as
# an outer product), the index tensors broadcast together: torch_index(x, list(i, j)) is the
# tensor of x[i[k], j[k]] over the broadcast shape of i and j, followed by x's remaining dims.
#
# Each is composed from engine ops over a view of x whose leading dims (those indexed) are
# flattened into one: the index tensors become one vector of rows of that view (row-major, as
# the reshape lays them out), read with index_select, written with `[<-`'s index_put or, to
# accumulate, with index_add. Gradients flow through those ops.

# The rows of x's leading dims that `indices` picks: list(rows = 1-based rows of the flattened
# leading dims, shape = the broadcast shape of the indices, lead = the product of the leading
# dims, rest = x's dims after them).
index_list_rows <- function(x, indices, fn) {
  if (is_torch_tensor(indices)) indices <- list(indices)
  if (!is.list(indices) || !length(indices)) {
    value_error(fn, ": indices must be a non-empty list of index tensors (one per leading dim), got ",
                if (is.list(indices)) "an empty list" else class(indices)[1])
  }
  shape <- x$shape
  columns <- list()  # one integer tensor per indexed dim
  for (k in seq_along(indices)) {
    index <- indices[[k]]
    where <- paste0("indices[[", k, "]]")
    if (is.null(index)) {
      value_error(fn, ": ", where, " is NULL; skipping a dim is not supported (use x[, i] for that)")
    }
    if (!is_torch_tensor(index)) {
      if (!(is.numeric(index) || is.logical(index)) || anyNA(index) || (is.numeric(index) && any(index != trunc(index)))) {
        value_error(fn, ": ", where, " must be a tensor of whole numbers or a bool mask, got ", describe_value(index))
      }
      index <- torch_tensor(if (is.numeric(index)) as.integer(index) else index)
    }
    dtype <- index$dtype$name
    first <- length(columns) + 1  # the dim of x this entry starts at
    if (dtype == "bool") {
      # A mask covers as many dims as it has; it picks its TRUE positions, in row-major order.
      span <- first - 1 + seq_len(index$ndim)
      if (max(span, 0) > length(shape) || !identical(as.numeric(index$shape), as.numeric(shape[span]))) {
        shape_error(fn, ": the mask ", where, " of shape [", paste(index$shape, collapse = ", "), "] does not match ",
                    "x's dims ", first, " to ", first + index$ndim - 1, " (x's shape [", paste(shape, collapse = ", "), "])")
      }
      hits <- torch_nonzero(index$to(device = "cpu"))
      for (j in seq_len(index$ndim)) columns[[length(columns) + 1]] <- hits[, j]
      next
    }
    if (!dtype %in% c("int64", "int32", "int16", "int8", "uint8")) {
      dtype_error(fn, ": ", where, " must be an integer or bool tensor, got ", dtype)
    }
    if (first > length(shape)) {
      index_error(fn, ": too many indices (", length(indices), ") for a tensor of ", length(shape), " dims")
    }
    columns[[first]] <- index$to(dtype = "int64", device = "cpu")
  }
  if (length(columns) > length(shape)) {
    index_error(fn, ": the indices cover ", length(columns), " dims, but x has ", length(shape))
  }
  broadcast_shape(lapply(columns, function(t) t$shape), fn)  # the index tensors' shapes, checked naming fn
  columns <- torch_broadcast_tensors(columns)
  lead_dims <- shape[seq_along(columns)]
  strides <- rev(cumprod(c(1, rev(lead_dims)[-length(lead_dims)])))
  rows <- 0
  for (d in seq_along(columns)) {
    at <- as.numeric(as_array(columns[[d]]$flatten()))
    bad <- at == 0 | at > lead_dims[d] | at < -lead_dims[d]
    if (any(bad)) {
      value <- at[bad][1]
      if (value == 0) index_error(fn, ": indices for dim ", d, " count from 1: Indexing starts at 1 but found a 0.")
      index_error(fn, ": index ", value, " is out of bounds for dimension ", d, " with size ", lead_dims[d])
    }
    at <- ifelse(at < 0, at + lead_dims[d], at - 1)
    rows <- rows + at * strides[d]
  }
  list(rows = rows + 1, shape = columns[[1]]$shape, lead = prod(lead_dims),
       rest = shape[-seq_along(columns)])
}

#' Advanced indexing with a list of index tensors
#'
#' `torch_index(self, indices)` gathers `self[i1[k], i2[k], ...]` for every position `k` of
#' the index tensors, which broadcast together, followed by `self`'s remaining dims (PyTorch's
#' `x[i1, i2]`). `torch_index_put()` returns a copy of `self` with `values` (broadcast to that
#' shape) written there, or added there with `accumulate = TRUE` (repeated positions add up);
#' `torch_index_put_()` writes into `self`. Indices count from 1, negative from the end; a bool
#' mask picks its TRUE positions over as many dims as it has.
#'
#' @param self A tensor.
#' @param indices A list of integer (or bool mask) tensors, one per leading dim of `self`.
#' @param values A tensor (or number) broadcast to the shape the indices select.
#' @param accumulate `TRUE` to add `values` to the selected elements instead of writing them.
#' @export
torch_index <- function(self, indices) {
  self <- as_tensor_arg(self)
  picked <- index_list_rows(self, indices, "torch_index")
  flat <- self$reshape(c(picked$lead, picked$rest))
  flat$index_select(1, torch_tensor(picked$rows, dtype = "int64"))$reshape(c(picked$shape, picked$rest))
}

#' @rdname torch_index
#' @export
torch_index_put <- function(self, indices, values, accumulate = FALSE) {
  fn <- "torch_index_put"
  self <- as_tensor_arg(self)
  if (!is.logical(accumulate) || length(accumulate) != 1 || is.na(accumulate)) {
    value_error(fn, ": accumulate must be TRUE or FALSE, got ", describe_value(accumulate))
  }
  picked <- index_list_rows(self, indices, fn)
  if (!is_torch_tensor(values)) values <- torch_tensor(values, device = self$device)
  selection <- c(picked$shape, picked$rest)
  values <- values$to(dtype = self$dtype)
  fits <- tryCatch(identical(as.numeric(broadcast_shape(list(values$shape, selection), fn)), as.numeric(selection)),
                   rcuda_value_error = function(e) FALSE)
  if (!fits) {
    shape_error(fn, ": values of shape [", paste(values$shape, collapse = ", "), "] cannot be broadcast to the ",
                "selection's shape [", paste(selection, collapse = ", "), "]")
  }
  n <- length(picked$rows)
  values <- values$expand(selection)$reshape(c(n, picked$rest))
  flat <- self$reshape(c(picked$lead, picked$rest))
  rows <- torch_tensor(picked$rows, dtype = "int64", device = self$device)
  out <- if (accumulate) {
    flat$index_add(1, rows, values)
  } else {
    copy <- flat$clone()
    if (n) .Call(rc_index_put, copy, c(list(structure(picked$rows, shape = n)), rep(list(NULL), length(picked$rest))), values)
    copy
  }
  out$reshape(self$shape)
}

#' @rdname torch_index
#' @export
torch_index_put_ <- function(self, indices, values, accumulate = FALSE) {
  self <- as_tensor_arg(self)
  invisible(self$copy_(torch_index_put(self, indices, values, accumulate)))
}

tensor_methods$index <- function(self, indices) torch_index(self, indices)
tensor_methods$index_put <- function(self, indices, values, accumulate = FALSE) {
  torch_index_put(self, indices, values, accumulate)
}
tensor_methods$index_put_ <- function(self, indices, values, accumulate = FALSE) {
  torch_index_put_(self, indices, values, accumulate)
}
