# Tensors with strides the caller gives, in elements as torch for R's: torch_empty_strided() (a
# new storage just large enough, Note [Strided extent] in ../src/strided.cpp) and
# torch_as_strided() (a view of input's storage, refused where autograd would record it).

# size and stride of fn as whole numbers of equal length, each at least 0.
strided_args <- function(size, stride, fn) {
  size <- size_value(size, fn)
  stride <- size_value(stride, fn, "stride")
  if (length(stride) != length(size)) {
    value_error(fn, ": stride must have one entry per dim of size (", length(size), "), got ",
                length(stride), " (", deparse(stride, nlines = 1)[1], ")")
  }
  for (arg in c("size", "stride")) {
    v <- if (arg == "size") size else stride
    if (any(v < 0)) value_error(fn, ": ", arg, " must be at least 0 in every dim, got ", deparse(v, nlines = 1)[1])
  }
  list(size = as.numeric(size), stride = as.numeric(stride))
}

#' @export
torch_empty_strided <- function(size, stride, dtype = NULL, layout = NULL, device = NULL,
                                requires_grad = FALSE, pin_memory = FALSE) {
  fn <- "torch_empty_strided"
  check_layout(layout, fn)
  a <- strided_args(size, stride, fn)
  out <- .Call(rc_empty_strided, a$size, a$stride, dtype_name(dtype), creation_device(device))
  with_requires_grad(out, requires_grad)
}

# storage_offset counts storage elements from the storage's start, as torch's; NULL keeps
# input's own.
#' @export
torch_as_strided <- function(self, size, stride, storage_offset = NULL) {
  fn <- "torch_as_strided"
  self <- extra_tensor(self, fn)
  a <- strided_args(size, stride, fn)
  if (is.null(storage_offset)) storage_offset <- self$storage_offset()
  if (!is.numeric(storage_offset) || length(storage_offset) != 1 || is.na(storage_offset) ||
      storage_offset < 0 || storage_offset != trunc(storage_offset)) {
    value_error(fn, ": storage_offset must be NULL or a whole number of at least 0, got ",
                deparse(storage_offset, nlines = 1)[1])
  }
  .Call(rc_as_strided, self, a$size, a$stride, as.numeric(storage_offset))
}

tensor_methods$as_strided <- function(self, size, stride, storage_offset = NULL) {
  torch_as_strided(self, size, stride, storage_offset)
}
