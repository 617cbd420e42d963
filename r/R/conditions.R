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
  FileError = "rcuda_file_error",
  DistError = "rcuda_dist_error"
)

# torch for R's own class for the same kind of error, which scripts written for it catch
# (tryCatch(value_error = ...), expect_error(class = "value_error")).
torch_error_classes <- c(rcuda_value_error = "value_error")

# Signals an rcuda_error of the given class; `call` is left out, as the message names the op.
# `also`: a class of torch for R's that its tests expect of this particular error (runtime_error).
rcuda_abort <- function(class, message, also = NULL) {
  torch_class <- unname(torch_error_classes[class])
  stop(structure(
    class = unique(c(class, torch_class[!is.na(torch_class)], also, "rcuda_error", "error", "condition")),
    list(message = message, call = NULL)
  ))
}

# Called from C++ (signal_error in handles.cpp) once the engine's frames are gone. The engine's
# advice names C++ spellings; R users read the R ones. Note [1-based messages] (src/rcuda_r.h):
# the glue's messages come marked and are already 1-based; the engine's are shifted.
engine_error <- function(kind, message) {
  if (startsWith(message, "\001")) {
    message <- substring(message, 2)
  } else {
    message <- torch_dim_words(one_based_message(message))
  }
  message <- gsub("NoGradGuard", "with_no_grad()", message, fixed = TRUE)
  message <- gsub(" = true\\b", " = TRUE", message)
  message <- gsub(" = false\\b", " = FALSE", message)
  class <- error_classes[kind]
  rcuda_abort(if (is.na(class)) "rcuda_error" else unname(class), message)
}

# The engine's 0-based numbers in a message, 1-based: dims ("dim 2", "start_dim 0", "dims 1 to
# 2", the upper end of "(expected -3 to 2)"), positions in a list ("tensor 1", "indices[0]") and
# element positions ("index 4 is out of range", "narrow: start 2"). Negative numbers count from
# the end in both languages and stay as they are.
one_based_patterns <- c(
  "\\b(?:dim|start_dim|end_dim) (\\d+)",
  "\\bdims (\\d+) to (\\d+)",
  "\\(expected -\\d+ to (\\d+)\\)",
  "\\btensor (\\d+)\\b(?!-)",
  "\\bindices\\[(\\d+)\\]",
  "\\bindex (\\d+) (?:is )?out of",
  "\\bnarrow: start (\\d+)",
  "\\brepeated in \\[(\\d+)(?:, (\\d+))?(?:, (\\d+))?(?:, (\\d+))?(?:, (\\d+))?(?:, (\\d+))?"
)

one_based_message <- function(message) {
  for (pattern in one_based_patterns) {
    hits <- gregexpr(pattern, message, perl = TRUE)[[1]]
    if (hits[1] == -1) next
    starts <- attr(hits, "capture.start")
    lengths <- attr(hits, "capture.length")
    # Right to left, so that earlier positions stay valid as numbers grow a digit.
    spans <- which(lengths > 0)
    for (k in rev(spans[order(starts[spans])])) {
      from <- starts[k]
      to <- from + lengths[k] - 1
      value <- as.numeric(substr(message, from, to)) + 1
      message <- paste0(substr(message, 1, from - 1), format(value, scientific = FALSE), substring(message, to + 1))
    }
  }
  message
}

# A dim out of range in torch for R's words, which scripts and torch's tests match ("sum:
# Dimension out of range (expected to be in range of [-2, 2], but got 3)"), from the engine's
# ("sum: dim 3 out of range for a tensor of 2 dims (expected -2 to 2)", already 1-based).
# Also an index past the end, as LibTorch words it ("index 5 is out of bounds for dimension 2
# with size 4"), from the engine's "... for dim 2 with size 4".
torch_dim_words <- function(message) {
  message <- sub("\\bout of bounds for dim (\\d+) with size", "out of bounds for dimension \\1 with size",
                 message, perl = TRUE)
  sub("\\bdim (-?\\d+) out of range for a tensor of \\d+ dims \\(expected (-\\d+) to (\\d+)\\)",
      "Dimension out of range (expected to be in range of [\\2, \\3], but got \\1)", message, perl = TRUE)
}

# The same words, for the R side's own dim checks (extra_dim(), size_of_shape()).
dim_out_of_range_words <- function(dim, ndim) {
  paste0("Dimension out of range (expected to be in range of [", -ndim, ", ", ndim, "], but got ", dim, ")")
}

value_error <- function(...) rcuda_abort("rcuda_value_error", paste0(...))
shape_error <- function(...) rcuda_abort("rcuda_shape_error", paste0(...))
index_error <- function(...) rcuda_abort("rcuda_index_error", paste0(...))
dtype_error <- function(...) rcuda_abort("rcuda_dtype_error", paste0(...))
device_error <- function(...) rcuda_abort("rcuda_device_error", paste0(...))

# A number argument (one finite-or-infinite, non-NA numeric value), or an error naming the
# function and the argument; `what` words the expectation ("a single number" where a message
# says so).
number_arg <- function(x, fn, arg, what = "a number") {
  if (!is.numeric(x) || length(x) != 1 || is.na(x)) {
    value_error(fn, ": ", arg, " must be ", what, ", got ", deparse(x, nlines = 1)[1])
  }
  x
}
