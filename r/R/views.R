# Shape changes, views and copies. Dims are 1-based, negative from the end (torch for R).

#' @export
torch_reshape <- function(self, shape) .Call(rc_reshape, "reshape", self, shape)

#' @export
torch_flatten <- function(self, start_dim = 1L, end_dim = -1L) .Call(rc_flatten, self, start_dim, end_dim)

#' @export
torch_squeeze <- function(self, dim = NULL) .Call(rc_squeeze, self, dim)

#' @export
torch_unsqueeze <- function(self, dim) .Call(rc_unsqueeze, self, dim)

#' @export
torch_transpose <- function(self, dim0, dim1) .Call(rc_transpose, self, dim0, dim1)

#' @export
torch_t <- function(self) .Call(rc_t, self)

#' @export
torch_permute <- function(self, dims) .Call(rc_permute, self, dims)

#' @export
torch_narrow <- function(self, dim, start, length) .Call(rc_narrow, self, dim, start, length)

#' @export
torch_clone <- function(self) .Call(rc_copy, "clone", self)

#' @export
torch_index_select <- function(self, dim, index) {
  if (is_torch_tensor(index)) index <- as.integer(as_array(index))
  .Call(rc_index_select, self, dim, index)
}

#' @export
torch_masked_select <- function(self, mask) .Call(rc_masked_select, self, mask)

m <- tensor_methods
m$view <- function(self, size) .Call(rc_reshape, "view", self, size)
m$reshape <- torch_reshape
m$flatten <- torch_flatten
m$squeeze <- torch_squeeze
m$unsqueeze <- torch_unsqueeze
m$transpose <- torch_transpose
m$t <- torch_t
m$permute <- function(self, ...) .Call(rc_permute, self, unlist(list(...)))
m$narrow <- torch_narrow
m$expand <- function(self, ..., implicit = FALSE) .Call(rc_expand, self, resolve_size(...))
m$contiguous <- function(self) .Call(rc_copy, "contiguous", self)
m$clone <- torch_clone
m$is_contiguous <- function(self) .Call(rc_is_contiguous, self)
m$index_select <- torch_index_select
m$masked_select <- torch_masked_select
m$masked_fill <- function(self, mask, value) .Call(rc_masked_fill, self, mask, value)
m$copy_ <- function(self, src) invisible(.Call(rc_assign, self, src))
m$fill_ <- function(self, value) invisible(.Call(rc_assign, self, value))
m$size <- function(self, dim) {
  shape <- .Call(rc_shape, self)
  if (missing(dim)) return(shape)
  if (dim == 0) index_error("size: dims start at 1, got 0")
  if (abs(dim) > length(shape)) index_error("size: dim ", dim, " is out of range for a ", length(shape), "-d tensor")
  if (dim > 0) shape[dim] else rev(shape)[-dim]
}
m$dim <- function(self) length(.Call(rc_shape, self))
m$numel <- function(self) .Call(rc_numel, self)
m$element_size <- function(self) {
  c(float32 = 4L, float64 = 8L, float16 = 2L, bfloat16 = 2L, int32 = 4L, int64 = 8L, uint8 = 1L,
    bool = 1L)[[.Call(rc_meta, self)[[2]]]]
}
m$item <- function(self) .Call(rc_item, self)

# to(dtype =, device =): either may be given, by name or position (a dtype or a device).
m$to <- function(self, dtype = NULL, device = NULL, ...) {
  if (!is.null(dtype) && !is_dtype(dtype)) {  # x$to("cuda") / x$to(torch_device("cuda"))
    device <- dtype
    dtype <- NULL
  }
  .Call(rc_to, self, dtype_name(dtype), device_string(device))
}
m$cuda <- function(self, device = NULL, ...) {
  device <- if (is.null(device)) "cuda" else device_string(device)
  if (!startsWith(device, "cuda")) value_error("cuda(): you must pass a cuda device, got \"", device, "\"")
  .Call(rc_to, self, NULL, device)
}
m$cpu <- function(self, ...) .Call(rc_to, self, NULL, "cpu")
m$float <- function(self) .Call(rc_to, self, "float32", NULL)
m$double <- function(self) .Call(rc_to, self, "float64", NULL)
m$long <- function(self) .Call(rc_to, self, "int64", NULL)
m$int <- function(self) .Call(rc_to, self, "int32", NULL)
m$bool <- function(self) .Call(rc_to, self, "bool", NULL)
rm(m)
