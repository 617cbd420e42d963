# Shape changes, views and copies. Dims are 1-based, negative from the end (torch for R).

#' @export
torch_reshape <- function(self, shape) .Call(rc_reshape, "reshape", as_tensor_arg(self), size_list(shape))

#' @export
torch_flatten <- function(self, start_dim = 1L, end_dim = -1L) .Call(rc_flatten, as_tensor_arg(self), start_dim, end_dim)

#' @export
torch_squeeze <- function(self, dim = NULL) .Call(rc_squeeze, as_tensor_arg(self), dim)

#' @export
torch_unsqueeze <- function(self, dim) .Call(rc_unsqueeze, as_tensor_arg(self), dim)

#' @export
torch_transpose <- function(self, dim0, dim1) .Call(rc_transpose, as_tensor_arg(self), dim0, dim1)

#' @export
torch_t <- function(self) .Call(rc_t, as_tensor_arg(self))

#' @export
torch_permute <- function(self, dims) permuted(as_tensor_arg(self), unlist(dims))

# A dim of 0 is refused in torch for R's words (its tests assert them); the engine checks the rest.
permuted <- function(self, dims) {
  if (is.numeric(dims) && any(dims == 0, na.rm = TRUE)) {
    index_error("permute: dims ", deparse(dims, nlines = 1)[1], " count from 1: Indexing starts at 1 but found a 0.")
  }
  .Call(rc_permute, self, dims)
}

#' @export
torch_narrow <- function(self, dim, start, length) .Call(rc_narrow, as_tensor_arg(self), dim, start, length)

#' @export
torch_clone <- function(self) keep_markers(self, .Call(rc_copy, "clone", as_tensor_arg(self)))

#' @export
torch_index_select <- function(self, dim, index) {
  if (is_torch_tensor(index)) index <- as.integer(as_array(index))
  .Call(rc_index_select, as_tensor_arg(self), dim, index)
}

# The slices of self along dim (1-based), each a view without that dim, as a list.
#' @export
torch_unbind <- function(self, dim = 1L) {
  self <- as_tensor_arg(self)
  d <- extra_dim(dim, self$ndim, "torch_unbind", "dim")
  lapply(seq_len(self$shape[d]), function(i) .Call(rc_select, self, d, i))
}

# The slice at index (1-based) along dim, without that dim: a view.
#' @export
torch_select <- function(self, dim, index) .Call(rc_select, as_tensor_arg(self), dim, index)

#' @export
torch_masked_select <- function(self, mask) .Call(rc_masked_select, as_tensor_arg(self), as_tensor_arg(mask))

# Sizes for view/reshape: a vector, or a list of numbers as torch for R takes them.
size_list <- function(size) {
  if (is.list(size) && all(vapply(size, function(s) is.numeric(s) && length(s) == 1, logical(1)))) unlist(size) else size
}

m <- tensor_methods
m$view <- function(self, size) .Call(rc_reshape, "view", self, size_list(size))
m$reshape <- torch_reshape
m$flatten <- torch_flatten
m$squeeze <- torch_squeeze
m$unsqueeze <- torch_unsqueeze
m$transpose <- torch_transpose
m$t <- torch_t
m$permute <- function(self, ...) permuted(self, unlist(list(...)))
m$narrow <- torch_narrow
# torch for R's expand(size, implicit = FALSE); sizes may also come one per argument
# (x$expand(2, 3)). A logical after the sizes is implicit, never a size.
m$expand <- function(self, ..., implicit = FALSE) {
  sizes <- list(...)
  last <- sizes[[length(sizes)]]
  if (length(sizes) > 1 && is.logical(last) && length(last) == 1) {
    implicit <- last
    sizes <- sizes[-length(sizes)]
  }
  if (!is.logical(implicit) || length(implicit) != 1 || is.na(implicit)) {
    value_error("expand: implicit must be TRUE or FALSE, got ", deparse(implicit, nlines = 1)[1])
  }
  size <- unlist(sizes, use.names = FALSE)
  if (!is.numeric(size) || anyNA(size) || any(size != trunc(size)) || any(size < -1)) {
    value_error("expand: size must be whole numbers (-1 keeps a dim), got ", deparse(size, nlines = 1)[1])
  }
  .Call(rc_expand, self, size)
}
m$contiguous <- function(self, memory_format = torch_contiguous_format()) {
  kind <- if (memory_format_name(memory_format, "contiguous") == "channels_last") "channels_last" else "contiguous"
  .Call(rc_copy, kind, self)
}
m$clone <- torch_clone
m$is_contiguous <- function(self, memory_format = torch_contiguous_format()) {
  .Call(rc_is_contiguous, self, memory_format_name(memory_format, "is_contiguous") == "channels_last")
}
m$index_select <- torch_index_select
m$unbind <- function(self, dim = 1L) torch_unbind(self, dim)
m$select <- function(self, dim, index) .Call(rc_select, self, dim, index)
m$masked_select <- torch_masked_select
m$masked_fill <- function(self, mask, value) .Call(rc_masked_fill, self, mask, value)
m$copy_ <- function(self, src) invisible(.Call(rc_assign, self, src))
m$fill_ <- function(self, value) invisible(.Call(rc_assign, self, value))
m$size <- function(self, dim = NULL) size_of_shape(.Call(rc_shape, self), dim)

# $size(dim) of a shape, for every kind of tensor (dense, sparse, meta): the whole shape, or one
# 1-based dim (negative from the end), with a dim out of range in torch for R's words.
size_of_shape <- function(shape, dim = NULL) {
  if (is.null(dim)) return(shape)
  if (dim == 0) index_error("size: dims start at 1, got 0")
  if (abs(dim) > length(shape)) {
    if (!length(shape)) index_error("size: the tensor has no dims, got dim ", dim)
    index_error("size: ", dim_out_of_range_words(dim, length(shape)))
  }
  if (dim > 0) shape[dim] else rev(shape)[-dim]
}
m$dim <- function(self) length(.Call(rc_shape, self))
m$numel <- function(self) .Call(rc_numel, self)
m$element_size <- function(self) {
  c(float32 = 4L, float64 = 8L, float16 = 2L, bfloat16 = 2L, int64 = 8L, int32 = 4L, int16 = 2L,
    int8 = 1L, uint8 = 1L, bool = 1L, float8_e4m3fn = 1L, float8_e5m2 = 1L, complex64 = 8L,
    complex128 = 16L)[[.Call(rc_meta, self)[[2]]]]
}
m$item <- function(self) .Call(rc_item, self)

# torch for R's to(dtype, device, other, non_blocking, copy, memory_format). A device may
# also come first (x$to("cuda"), x$to(torch_device("cpu"))); any other string is a dtype
# (x$to(dtype = "double"), x$to("long")), as torch for R reads it, never a device. Device
# "meta" gives a meta tensor of self's shape (Note [Meta tensors] in meta-tensors.R).
device_spec <- function(s) grepl("^(cpu|cpu:0|cuda|cuda:[0-9]+|meta)$", s)
m$to <- function(self, dtype = NULL, device = NULL, other = NULL, non_blocking = FALSE, copy = FALSE,
                 memory_format = NULL) {
  if (!is.null(other)) {
    if (!is.null(dtype) || !is.null(device)) value_error("to: give other, or dtype and device, not both")
    if (!is_torch_tensor(other)) value_error("to: other must be a tensor, got ", class(other)[1])
    dtype <- other$dtype
    device <- other$device
  }
  if (!is.null(dtype) && !is_dtype(dtype)) {
    if (is_device(dtype) || (is.character(dtype) && length(dtype) == 1 && device_spec(dtype))) {
      if (!is.null(device)) value_error("to: two devices given (", device_string(dtype), " and ", device_string(device), ")")
      device <- dtype
      dtype <- NULL
    } else if (!is.character(dtype)) {
      dtype_error("to: dtype must be a torch dtype such as torch_double(), got ", deparse(dtype, nlines = 1)[1])
    }
  }
  if (!is.null(device) && meta_requested(device)) {  # meta-tensors.R
    probe <- .Call(rc_to, torch_empty(0, dtype = dtype_of(self), device = "cpu"), dtype_name(dtype), NULL)
    return(new_meta_tensor(self$shape, dtype_of(probe), self$requires_grad))
  }
  out <- .Call(rc_to, self, dtype_name(dtype), device_string(device))
  if (!is.null(memory_format) && !identical(memory_format$name, "preserve")) {
    out <- out$contiguous(memory_format = memory_format)
  }
  # to() returns the tensor itself when nothing changes; copy = TRUE asks for new memory.
  if (isTRUE(copy) && identical(.Call(rc_meta, out)[2:3], .Call(rc_meta, self)[2:3])) out <- .Call(rc_copy, "clone", out)
  out
}
m$cuda <- function(self, device = NULL, ...) {
  device <- if (is.null(device)) "cuda" else device_string(device)
  if (!startsWith(device, "cuda")) value_error("cuda(): you must pass a cuda device, got \"", device, "\"")
  .Call(rc_to, self, NULL, device)
}
m$cpu <- function(self, ...) .Call(rc_to, self, NULL, "cpu")
# A conversion method ($float(), $bool(), ...) with torch's memory_format argument: the
# preserving default keeps the layout (a channels-last tensor stays channels-last); the
# contiguous or channels-last format asks for that layout.
dtype_conversion <- function(dtype) {
  function(self, memory_format = NULL) {
    out <- .Call(rc_to, self, dtype, NULL)
    if (is.null(memory_format) || (inherits(memory_format, "rcuda_memory_format") && memory_format$name == "preserve")) {
      return(out)
    }
    out$contiguous(memory_format = memory_format)
  }
}

m$float <- dtype_conversion("float32")
m$double <- dtype_conversion("float64")
m$long <- dtype_conversion("int64")
m$int <- dtype_conversion("int32")
m$short <- dtype_conversion("int16")
m$char <- dtype_conversion("int8")  # torch's name for int8
m$bool <- dtype_conversion("bool")
rm(m)

# Memory formats, as torch for R's: a 4-D tensor's elements in NCHW order (contiguous) or NHWC
# (channels-last: the shape stays [N, C, H, W], only the strides change), which cuDNN runs
# faster in float16 and bfloat16. Layers keep their input's format.
new_memory_format <- function(name) {
  structure(list(name = name), class = c("rcuda_memory_format", "torch_memory_format"))
}

#' @export
torch_contiguous_format <- function() new_memory_format("contiguous")
#' @export
torch_channels_last_format <- function() new_memory_format("channels_last")
#' @export
torch_preserve_format <- function() new_memory_format("preserve")

#' @export
print.rcuda_memory_format <- function(x, ...) {
  cat("torch_", x$name, "_format\n", sep = "")
  invisible(x)
}

# Two memory formats are equal when they name the same order; a memory format beside anything
# else is an error, as for dtypes (`==.rcuda_dtype`), not FALSE.
#' @export
`==.rcuda_memory_format` <- function(e1, e2) {
  is_format <- function(x) inherits(x, "rcuda_memory_format")
  if (!is_format(e1) || !is_format(e2)) {
    value_error("==: one of the objects is not a memory format (",
                class(if (is_format(e1)) e2 else e1)[1], "); comparison is not possible")
  }
  identical(.subset2(e1, "name"), .subset2(e2, "name"))
}

#' @export
`!=.rcuda_memory_format` <- function(e1, e2) !(e1 == e2)

memory_format_name <- function(format, fn) {
  if (!inherits(format, "rcuda_memory_format") || identical(format$name, "preserve")) {
    value_error(fn, ": memory_format must be torch_contiguous_format() or ",
                "torch_channels_last_format(), got ", describe(format))
  }
  format$name
}
