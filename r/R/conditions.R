# Engine errors as R conditions. Each C++ exception type has its own class, so callers can
# tryCatch(rcuda_shape_error = ...) without parsing messages; all inherit rcuda_error.

error_classes <- c(
  ShapeError = "rcuda_shape_error",
  DTypeError = "rcuda_dtype_error",
  IndexError = "rcuda_index_error",
  ValueError = "rcuda_value_error",
  DeviceError = "rcuda_device_error",
  OutOfMemoryError = "rcuda_oom_error",
  CudaError = "rcuda_cuda_error",
  FileError = "rcuda_file_error"
)

# Signals an rcuda_error of the given class; `call` is left out, as the message names the op.
rcuda_abort <- function(class, message) {
  stop(structure(
    class = unique(c(class, "rcuda_error", "error", "condition")),
    list(message = message, call = NULL)
  ))
}

# Called from C++ (signal_error in handles.cpp) once the engine's frames are gone. The engine's
# advice names C++ spellings; R users read the R ones.
engine_error <- function(kind, message) {
  message <- gsub("NoGradGuard", "with_no_grad()", message, fixed = TRUE)
  message <- gsub(" = true\\b", " = TRUE", message)
  message <- gsub(" = false\\b", " = FALSE", message)
  class <- error_classes[kind]
  rcuda_abort(if (is.na(class)) "rcuda_error" else unname(class), message)
}

value_error <- function(...) rcuda_abort("rcuda_value_error", paste0(...))
shape_error <- function(...) rcuda_abort("rcuda_shape_error", paste0(...))
index_error <- function(...) rcuda_abort("rcuda_index_error", paste0(...))
dtype_error <- function(...) rcuda_abort("rcuda_dtype_error", paste0(...))
device_error <- function(...) rcuda_abort("rcuda_device_error", paste0(...))
