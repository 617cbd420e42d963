# A tensor's memory: $data_ptr(), $storage() (the memory views share, as torch for R's storage
# object), and tensors over R vectors' memory and back (torch_tensor_from_buffer(),
# buffer_from_torch_tensor(); Note [Buffers keep their R vector] in ../src/buffer.cpp).

buffer_types <- c("raw", "logical", "integer", "double", "complex")

#' @export
torch_tensor_from_buffer <- function(buffer, shape, dtype = "float") {
  fn <- "torch_tensor_from_buffer"
  if (is.object(buffer) || !typeof(buffer) %in% buffer_types) {
    value_error(fn, ": buffer must be a raw, logical, integer, double or complex vector, got ",
                if (is_torch_tensor(buffer)) "a tensor" else paste("an R", class(buffer)[1]))
  }
  if (!is.numeric(shape) || anyNA(shape) || any(shape < 0) || any(shape != trunc(shape))) {
    value_error(fn, ": shape must be a vector of non-negative whole numbers, got ",
                deparse(shape, nlines = 1)[1])
  }
  name <- if (is_dtype(dtype)) dtype$name else dtype_string_name(dtype)
  if (is.na(name)) {
    dtype_error(fn, ": dtype must be a torch dtype or a name such as \"float\" or \"float64\", got ",
                deparse(dtype, nlines = 1)[1])
  }
  .Call(rc_tensor_from_buffer, buffer, as.numeric(shape), name)
}

#' @export
buffer_from_torch_tensor <- function(tensor) {
  if (is_sparse_tensor(tensor)) {
    value_error("buffer_from_torch_tensor: tensor is sparse; call $to_dense() first")
  }
  if (!is_torch_tensor(tensor)) {
    value_error("buffer_from_torch_tensor: tensor must be a tensor, got ", describe(tensor))
  }
  .Call(rc_buffer_from_tensor, tensor)
}

tensor_methods$data_ptr <- function(self) .Call(rc_data_ptr, self, FALSE)

# The storage keeps its tensor, so that the address it reports stays the memory's.
tensor_methods$storage <- function(self) {
  structure(list(data_ptr = function() .Call(rc_data_ptr, self, TRUE)), class = "torch_storage")
}

#' @export
print.torch_storage <- function(x, ...) {
  cat("torch_storage at ", x$data_ptr(), "\n", sep = "")
  invisible(x)
}
