# Printing as torch for R: "torch_tensor", the values (formatted in print.cpp as libtorch
# does), then a footer such as [ CUDAFloatType{3,3} ] (and the autograd state, if any). `n` limits the lines of values.

#' @export
print.rcuda_tensor <- function(x, n = 30, ...) {
  cat(format(x, n = n, ...), sep = "\n")
  invisible(x)
}

#' @export
format.rcuda_tensor <- function(x, n = 30, ...) {
  if (.Call(rc_is_undefined, x)) return("[ Tensor (undefined) ]")
  parts <- .Call(rc_format, x)
  lines <- if (nzchar(parts[1])) strsplit(parts[1], "\n", fixed = TRUE)[[1]] else character()
  # Complex values as R prints complex numbers (torch for R prints none of them).
  if (is_complex_dtype(dtype_of(x)) && x$numel() > 0) lines <- utils::capture.output(print(as_array(x)))
  if (n >= 0 && length(lines) > n) {
    lines <- c(lines[seq_len(n)], "... [the output was truncated (use n=-1 to disable)]")
  }
  c("torch_tensor", lines, paste0(parts[2], autograd_footer(x)))
}

# As torch for R's footer: "[ requires_grad = TRUE ]" on a leaf, "[ grad_fn = <MulBackward> ]"
# on a tensor an op recorded.
autograd_footer <- function(x) {
  if (!.Call(rc_requires_grad, x)) return("")
  node <- .Call(rc_grad_fn, x)
  if (is.null(node)) "[ requires_grad = TRUE ]" else paste0("[ grad_fn = <", .Call(rc_grad_fn_name, node), "> ]")
}

#' @export
str.rcuda_tensor <- function(object, ...) {
  if (.Call(rc_is_undefined, object)) {
    cat("[ Tensor (undefined) ]\n")
    return(invisible())
  }
  shape <- .Call(rc_shape, object)
  cat(as.character(object$dtype), " [", paste0("1:", shape, collapse = ", "), "]\n", sep = "")
  invisible()
}
