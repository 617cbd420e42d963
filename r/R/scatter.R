# gather, scatter, scatter_add and index_add as torch for R's: `dim` and the values of the int64
# `index` tensor count from 1 (r/src/scatter.cpp). Each records for autograd as the engine's op
# does; the in-place methods write as Note [In-place methods as copies] says.

#' @export
torch_gather <- function(self, dim, index, sparse_grad = FALSE) {
  if (!isFALSE(sparse_grad)) value_error("torch_gather: sparse_grad = TRUE is not supported (rcuda has no sparse tensors)")
  scatter_call("gather", as_tensor_arg(self), dim, index, NULL, 1)
}

#' @export
torch_scatter <- function(self, dim, index, src, value, reduce = NULL) {
  check_no_reduce("torch_scatter", reduce)
  scatter_call("scatter", as_tensor_arg(self), dim, index, scatter_source("torch_scatter", src, value), 1)
}

#' @export
torch_scatter_add <- function(self, dim, index, src) {
  scatter_call("scatter_add", as_tensor_arg(self), dim, index, as_tensor_arg(src), 1)
}

#' @export
torch_index_add <- function(self, dim, index, source, alpha = 1L) {
  scatter_call("index_add", as_tensor_arg(self), dim, index, as_tensor_arg(source), alpha)
}

# rc_scatter, with the engine's out-of-range messages in the user's terms: the engine sees the
# index minus 1, so its "index -1 is out of bounds" is the user's 0.
scatter_call <- function(op, self, dim, index, src, alpha) {
  tryCatch(.Call(rc_scatter, op, self, dim, index, src, alpha), rcuda_index_error = function(e) {
    message <- conditionMessage(e)
    found <- regmatches(message, regexec("index (-[0-9]+) is out of bounds", message))[[1]]
    if (length(found)) {
      message <- sub(found[1], paste0("index ", as.numeric(found[2]) + 1, " is out of bounds"),
                     message, fixed = TRUE)
    }
    rcuda_abort(class(e)[1], paste0(message, " (index values count from 1)"))
  })
}

# One row of num_classes per element, with a 1 at its 1-based class (num_classes = -1: the
# largest class given), int64, as torch for R's.
#' @export
nnf_one_hot <- function(tensor, num_classes = -1) {
  if (!is.numeric(num_classes) || length(num_classes) != 1 || is.na(num_classes) ||
        num_classes != trunc(num_classes) || (num_classes < 1 && num_classes != -1)) {
    value_error("nnf_one_hot: num_classes must be a whole number >= 1, or -1, got ", deparse(num_classes)[1])
  }
  # The engine sees the classes minus 1: the values in its messages are the user's minus 1.
  tryCatch(.Call(rc_one_hot, tensor, num_classes), rcuda_error = function(e) {
    message <- conditionMessage(e)
    if (!startsWith(message, "one_hot:")) stop(e)
    for (pattern in c("got (-?[0-9]+)$", "class value (-?[0-9]+) ")) {
      found <- regmatches(message, regexec(pattern, message))[[1]]
      if (length(found)) {
        message <- sub(found[1], sub(found[2], as.numeric(found[2]) + 1, found[1], fixed = TRUE),
                       message, fixed = TRUE)
      }
    }
    message <- sub("must be non-negative", "must be at least 1", message, fixed = TRUE)
    rcuda_abort(class(e)[1], paste0("nnf_", message, " (classes count from 1)"))
  })
}

#' @export
torch_masked_fill <- function(self, mask, value) .Call(rc_masked_fill, as_tensor_arg(self), mask, value)

# scatter's src: a tensor, or a number given as src or value (exactly one of them).
scatter_source <- function(fn, src, value) {
  if (missing(src) == missing(value)) value_error(fn, ": give src (a tensor or a number) or value, not both or neither")
  if (missing(src)) return(value)
  if ((is.numeric(src) || is.logical(src)) && length(src) == 1 && !is.object(src)) return(src)
  as_tensor_arg(src)
}

check_no_reduce <- function(fn, reduce) {
  if (!is.null(reduce)) value_error(fn, ": reduce = \"", reduce, "\" is not supported; use torch_scatter_add() to sum")
}

m <- tensor_methods
m$gather <- function(self, dim, index, sparse_grad = FALSE) torch_gather(self, dim, index, sparse_grad)
m$scatter <- function(self, dim, index, src, value, reduce = NULL) {
  check_no_reduce("scatter", reduce)
  scatter_call("scatter", self, dim, index, scatter_source("scatter", src, value), 1)
}
m$scatter_ <- function(self, dim, index, src, value, reduce = NULL) {
  check_no_reduce("scatter_", reduce)
  source <- scatter_source("scatter_", src, value)
  inplace("scatter_", self, function(x, index, source) scatter_call("scatter", x, dim, index, source, 1),
          index, source)
}
m$scatter_add <- function(self, dim, index, src) torch_scatter_add(self, dim, index, src)
m$scatter_add_ <- function(self, dim, index, src) {
  inplace("scatter_add_", self, function(x, index, src) scatter_call("scatter_add", x, dim, index, src, 1),
          index, as_tensor_arg(src))
}
m$index_add <- function(self, dim, index, source, alpha = 1L) torch_index_add(self, dim, index, source, alpha)
m$index_add_ <- function(self, dim, index, source, alpha = 1L) {
  inplace("index_add_", self, function(x, index, source) scatter_call("index_add", x, dim, index, source, alpha),
          index, as_tensor_arg(source))
}
rm(m)
