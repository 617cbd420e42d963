#' @useDynLib rcuda, .registration = TRUE
NULL

# Note [GC pressure] (src/handles.cpp): option rcuda.gc_threshold is the fraction of a
# device's memory that new tensors may take before rcuda runs R's garbage collector; it is
# read here, when the package loads.
.onLoad <- function(libname, pkgname) {
  fraction <- getOption("rcuda.gc_threshold", 0.25)
  .Call(rc_init, as.numeric(fraction))
  # Note [Operator dispatch] in s4.R: after loadNamespace has finished with the namespace.
  setHook(packageEvent(pkgname, "onLoad"), function(...) register_operators(), action = "replace")
}

.onUnload <- function(libpath) {
  unregister_operators()
  .Call(rc_unload)
  library.dynam.unload("rcuda", libpath)
}
