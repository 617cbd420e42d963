# Printing as torch for R: "torch_tensor", the values (formatted in print.cpp as libtorch
# does), then a footer such as [ CUDAFloatType{3,3} ]. `n` limits the lines of values.

#' @export
print.rcuda_tensor <- function(x, n = 30, ...) {
  cat(format(x, n = n, ...), sep = "\n")
  invisible(x)
}

#' @export
format.rcuda_tensor <- function(x, n = 30, ...) {
  parts <- .Call(rc_format, x)
  lines <- if (nzchar(parts[1])) strsplit(parts[1], "\n", fixed = TRUE)[[1]] else character()
  if (n >= 0 && length(lines) > n) {
    lines <- c(lines[seq_len(n)], "... [the output was truncated (use n=-1 to disable)]")
  }
  c("torch_tensor", lines, parts[2])
}

#' @export
str.rcuda_tensor <- function(object, ...) {
  shape <- .Call(rc_shape, object)
  cat(as.character(object$dtype), " [", paste0("1:", shape, collapse = ", "), "]\n", sep = "")
  invisible()
}
