#' @useDynLib rcuda, .registration = TRUE
NULL

# Note [GC pressure] (src/handles.cpp): option rcuda.gc_threshold is the fraction of a
# device's memory that new tensors may take before rcuda runs R's garbage collector; it is
# read here, when the package loads.
.onLoad <- function(libname, pkgname) {
  fraction <- getOption("rcuda.gc_threshold", 0.25)
  .Call(rc_init, as.numeric(fraction))
  # %*% (linalg.R): the matrixOps group generic exists from R 4.3; R 4.2 gets the exported %*%.
  if (getRversion() >= "4.3.0")
    registerS3method("matrixOps", "rcuda_tensor", matrixOps.rcuda_tensor, envir = topenv())
}

.onUnload <- function(libpath) {
  .Call(rc_unload)
  library.dynam.unload("rcuda", libpath)
}
