#' @useDynLib rcuda, .registration = TRUE
NULL

# Note [GC pressure] (src/handles.cpp): option rcuda.gc_threshold is the fraction of a
# device's memory that new tensors may take before rcuda runs R's garbage collector; it is
# read here, when the package loads.
.onLoad <- function(libname, pkgname) {
  fraction <- getOption("rcuda.gc_threshold", 0.25)
  .Call(rc_init, as.numeric(fraction), getRversion() < "4.3.0")
  register_matrix_product()
}

.onUnload <- function(libpath) {
  .Call(rc_unload)
  library.dynam.unload("rcuda", libpath)
}

# %*% for rcuda_tensor: matrixOps on R >= 4.3, an S4 method for the old class on R 4.2.
register_matrix_product <- function() {
  ns <- topenv()
  if (getRversion() >= "4.3.0") {
    registerS3method("matrixOps", "rcuda_tensor", matrixOps.rcuda_tensor, envir = ns)
  } else {
    # The S4 bit that makes R 4.2 dispatch %*% also makes autoprint call show().
    methods::setOldClass("rcuda_tensor", where = ns)
    methods::setMethod("show", "rcuda_tensor", function(object) print.rcuda_tensor(object), where = ns)
    methods::setMethod("%*%", methods::signature("rcuda_tensor", "ANY"), matrix_product, where = ns)
    methods::setMethod("%*%", methods::signature("ANY", "rcuda_tensor"), matrix_product, where = ns)
    methods::setMethod("%*%", methods::signature("rcuda_tensor", "rcuda_tensor"), matrix_product, where = ns)
  }
}
