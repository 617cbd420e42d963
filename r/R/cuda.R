# CUDA devices and memory. These work in CPU-only builds of the engine too: the counts are 0,
# cuda_is_available() is FALSE, and the rest raise rcuda_device_error.

cuda_info <- function() .Call(rc_cuda_info)

device_index <- function(device) {
  if (is.null(device)) return(cuda_current_device())
  if (is.numeric(device)) return(as.integer(device))
  d <- torch_device(device)
  if (d$type != "cuda") device_error("expected a cuda device, got \"", device_string(d), "\"")
  if (is.null(d$index)) cuda_current_device() else d$index
}

#' @export
cuda_is_available <- function() cuda_info()$device_count > 0

#' @export
cuda_device_count <- function() cuda_info()$device_count

#' @export
cuda_current_device <- function() .Call(rc_cuda_current_device)

#' @export
cuda_synchronize <- function(device = NULL) {
  # Nothing is queued without a device; torch for R errors here, a no-op is friendlier for
  # scripts that call it unconditionally after CPU work.
  if (!cuda_is_available()) return(invisible(NULL))
  invisible(.Call(rc_cuda_synchronize, device_index(device)))
}

#' @export
cuda_get_device_capability <- function(device = cuda_current_device()) {
  p <- .Call(rc_cuda_properties, device_index(device))
  c(Major = p$major, Minor = p$minor)
}

#' @export
cuda_get_device_name <- function(device = 0) .Call(rc_cuda_properties, device_index(device))$name

#' @export
cuda_runtime_version <- function() {
  v <- cuda_info()$runtime_version
  if (v == 0) return(NA_character_)
  numeric_version(paste(v %/% 1000, (v %% 1000) %/% 10, sep = "."))
}

#' @export
cuda_memory_stats <- function(device = NULL) {
  stats <- .Call(rc_cuda_memory_stats, device_index(device))
  stats
}

#' @export
cuda_reset_peak_memory_stats <- function(device = NULL) {
  invisible(.Call(rc_cuda_reset_peak_memory_stats, device_index(device)))
}

#' @export
cuda_empty_cache <- function() {
  if (!cuda_is_available()) return(invisible(NULL))
  for (d in seq_len(cuda_device_count()) - 1L) .Call(rc_cuda_empty_cache, d)
  invisible(NULL)
}
