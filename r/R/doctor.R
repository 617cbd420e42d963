# The environment diagnosis of `rcuda doctor` from R, and cuDNN's presence and version.

#' Check the machine and rcuda's build
#'
#' Runs the checks of `rcuda doctor` (driver, runtime, devices, cuBLAS, cuDNN, a kernel, copies,
#' the memory pool) and returns one row per check.
#' @param gpu_checks Launch work on each GPU (a context, a kernel, a GEMM, a convolution).
#' @return A data frame with columns id, title, status ("PASS", "WARN", "FAIL", "SKIP"),
#'   detail, fix and device (NA when not device-specific); attributes `system` (a list),
#'   `libraries` and `devices` (data frames) describe the machine.
#' @export
cuda_doctor <- function(gpu_checks = TRUE) {
  if (!is.logical(gpu_checks) || length(gpu_checks) != 1 || is.na(gpu_checks))
    value_error("cuda_doctor: gpu_checks must be TRUE or FALSE, got ", deparse(gpu_checks))
  r <- .Call(rc_cuda_doctor, gpu_checks)
  checks <- as.data.frame(r$checks, stringsAsFactors = FALSE)
  attr(checks, "system") <- r$system
  attr(checks, "libraries") <- as.data.frame(r$libraries, stringsAsFactors = FALSE)
  attr(checks, "devices") <- as.data.frame(r$devices, stringsAsFactors = FALSE)
  class(checks) <- c("rcuda_doctor", "data.frame")
  checks
}

#' @export
print.rcuda_doctor <- function(x, ...) {
  s <- attr(x, "system")
  cat("rcuda ", s$rcuda_version, " on ", s$os, "; CUDA ",
      if (isTRUE(s$cuda_available)) "available" else paste0("not available (", s$cuda_unavailable_reason, ")"),
      "\n", sep = "")
  for (i in seq_len(nrow(x))) {
    where <- if (is.na(x$device[i])) "" else paste0(" [cuda:", x$device[i], "]")
    cat(sprintf("  %-4s %s%s\n", x$status[i], x$title[i], where))
    if (nzchar(x$detail[i])) cat("       ", x$detail[i], "\n", sep = "")
    if (nzchar(x$fix[i])) cat("       fix: ", x$fix[i], "\n", sep = "")
  }
  counts <- table(factor(x$status, c("PASS", "WARN", "FAIL", "SKIP")))
  cat(sprintf("%d passed, %d warnings, %d failed, %d skipped\n",
              counts[["PASS"]], counts[["WARN"]], counts[["FAIL"]], counts[["SKIP"]]))
  invisible(x)
}

#' Whether cuDNN can be used
#'
#' TRUE when a GPU is available and the cuDNN library loads (the major version rcuda was
#' built with is looked for first).
#' @export
backends_cudnn_is_available <- function() cuda_is_available() && .Call(rc_cudnn)$found

#' Whether Apple's Metal (MPS) backend can be used
#'
#' Always FALSE: rcuda's backends are the CPU and CUDA. Scripts written for torch for R ask it
#' before choosing a device.
#' @export
backends_mps_is_available <- function() FALSE

#' The version of cuDNN found at run time
#'
#' As torch for R: a `numeric_version` such as 9.14.0, and an error when cuDNN is not available.
#' @export
backends_cudnn_version <- function() {
  if (!cuda_is_available()) {
    device_error("backends_cudnn_version: CuDNN is not available (no CUDA device is available)")
  }
  cudnn <- .Call(rc_cudnn)  # one search of the loader: found, version, path or why not
  if (!cudnn$found) device_error("backends_cudnn_version: CuDNN is not available (", cudnn$path, ")")
  numeric_version(cudnn$version)
}
