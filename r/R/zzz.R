#' @useDynLib rcuda, .registration = TRUE
NULL

# Note [GC pressure] (src/handles.cpp): rcuda runs R's garbage collector when new tensors pass
# option rcuda.gc_live_fraction (0.1) of what the device holds, at least rcuda.gc_min_bytes
# (1 MiB; GPU memory: rcuda.gc_cuda_min_bytes, 16 MiB, up to 4 times that), up to rcuda.gc_max_live_fraction (0.1) where collections would take more than
# rcuda.gc_time_fraction (0.05) of the time, at most rcuda.gc_threshold (0.25) of a device's
# memory; and rcuda.release_unreferenced (TRUE: Note [Unreferenced tensors are released at step
# boundaries]); all are read here, when the package loads.
gc_options <- function() {
  list(threshold = as.numeric(getOption("rcuda.gc_threshold", 0.25)),
       live_fraction = as.numeric(getOption("rcuda.gc_live_fraction", 0.1)),
       max_live_fraction = as.numeric(getOption("rcuda.gc_max_live_fraction", 0.1)),
       min_bytes = as.numeric(getOption("rcuda.gc_min_bytes", 2^20)),
       time_fraction = as.numeric(getOption("rcuda.gc_time_fraction", 0.05)),
       safe_points = as.numeric(isTRUE(getOption("rcuda.gc_safe_points", TRUE))),
       cuda_min_bytes = as.numeric(getOption("rcuda.gc_cuda_min_bytes", 16 * 2^20)),
       release_unreferenced = as.numeric(isTRUE(getOption("rcuda.release_unreferenced", TRUE))))
}

.onLoad <- function(libname, pkgname) {
  .Call(rc_init, gc_options())
  # Note [Operator dispatch] in s4.R: after loadNamespace has finished with the namespace, and
  # before the user's own hooks for the event.
  set_operator_hook(pkgname, function(...) register_operators())
  register_coro_methods()  # coro::loop(for (b in dl) ...) when coro is installed (data-loader.R)
  s3_register("waldo::compare_proxy", "rcuda_tensor", compare_proxy_rcuda_tensor)  # convert.R
  s3_register("bit64::as.integer64", "rcuda_tensor", as_integer64_rcuda_tensor)  # convert-integer64.R
}

.onUnload <- function(libpath) {
  set_operator_hook("rcuda", NULL)
  unregister_operators()
  .Call(rc_unload)
  library.dynam.unload("rcuda", libpath)
}

# Replaces rcuda's own hook for the package's onLoad event (one left by an earlier load of the
# namespace included) with `hook`, or removes it; other hooks for the event stay.
set_operator_hook <- function(pkgname, hook) {
  event <- packageEvent(pkgname, "onLoad")
  others <- Filter(function(h) is.null(attr(h, "rcuda_operator_hook")), getHook(event))
  if (!is.null(hook)) others <- c(list(structure(hook, rcuda_operator_hook = TRUE)), others)
  setHook(event, NULL, "replace")
  for (h in others) setHook(event, h, "append")
}
