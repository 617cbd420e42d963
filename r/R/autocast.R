# Automatic mixed precision with torch for R's functions. set_autocast() opens an autocast
# region in the engine (an rcuda::AutocastGuard: include/rcuda/autograd/autocast.h says which
# ops run in which dtype) and unset_autocast() ends it; with_autocast() and local_autocast() pair
# the two through on.exit. Regions of one device type end in the reverse order they began (Note
# [Autocast guards on a stack] in src/autocast.cpp); on.exit keeps that order.

autocast_dtype_names <- c("float16", "bfloat16")

# How a value reads in a message: strings quoted, dtypes as torch prints them.
autocast_describe <- function(x) {
  if (is_dtype(x)) return(paste0("torch_", as.character(x)))
  if (is.character(x) && length(x) == 1 && !is.na(x)) return(paste0("\"", x, "\""))
  if (is.atomic(x) && length(x) == 1) return(format(x))
  paste0("an object of class ", class(x)[1], if (is.atomic(x)) paste0(" and length ", length(x)))
}

# Checks the arguments of an autocast function, naming `caller` in the messages, and opens the
# region: a context for unset_autocast().
autocast_open <- function(caller, device_type, dtype, enabled, cache_enabled) {
  if (!is.character(device_type) || length(device_type) != 1 || is.na(device_type) ||
      !device_type %in% c("cuda", "cpu")) {
    value_error(caller, ": device_type must be \"cuda\" or \"cpu\", got ",
                autocast_describe(device_type))
  }
  if (!is.null(dtype) && !(is_dtype(dtype) && .subset2(dtype, "name") %in% autocast_dtype_names)) {
    dtype_error(caller, ": dtype must be torch_float16() or torch_bfloat16() (or NULL for ",
                "the device type's autocast dtype), got ", autocast_describe(dtype))
  }
  if (!is.logical(enabled) || length(enabled) != 1 || is.na(enabled)) {
    value_error(caller, ": enabled must be TRUE or FALSE, got ", autocast_describe(enabled))
  }
  # The engine always caches the casts of parameters within the outermost region; without the
  # cache every use would cast again, to the same values. FALSE is accepted, and changes nothing.
  if (!is.null(cache_enabled) &&
      (!is.logical(cache_enabled) || length(cache_enabled) != 1 || is.na(cache_enabled))) {
    value_error(caller, ": cache_enabled must be NULL, TRUE or FALSE, got ",
                autocast_describe(cache_enabled))
  }
  token <- .Call(rc_autocast_push, device_type, dtype_name(dtype), enabled)
  structure(list(device = device_type, token = token), class = "rcuda_autocast_context")
}

# `...` is unused, as in torch for R; a value there is most often device_type given by a name
# that does not match it (with_autocast(code, device = "cuda")).
autocast_check_dots <- function(caller, ...) {
  if (...length() == 0) return(invisible())
  dots <- names(list(...))
  named <- if (is.null(dots)) character() else dots[nzchar(dots)]
  value_error(caller, ": unused argument", if (...length() > 1) "s", " in ...",
              if (length(named)) paste0(" (", paste(named, collapse = ", "), ")"),
              "; give device_type, dtype, enabled and cache_enabled by their full names")
}

#' @export
local_autocast <- function(device_type, dtype = NULL, enabled = TRUE, cache_enabled = NULL, ...,
                           .env = parent.frame()) {
  autocast_check_dots("local_autocast", ...)
  if (missing(device_type)) value_error("local_autocast: device_type is missing; give \"cuda\" or \"cpu\"")
  context <- autocast_open("local_autocast", device_type, dtype, enabled, cache_enabled)
  # Ends the region when .env's frame exits; after = FALSE, so that it ends before anything
  # deferred earlier in that frame (an outer local_autocast() among them).
  restore <- as.call(list(unset_autocast, context))
  do.call(base::on.exit, list(restore, add = TRUE, after = FALSE), envir = .env)
  invisible(context)
}

#' @export
with_autocast <- function(code, ..., device_type, dtype = NULL, enabled = TRUE,
                          cache_enabled = NULL) {
  autocast_check_dots("with_autocast", ...)
  if (missing(device_type)) {
    value_error("with_autocast: device_type is missing; give device_type = \"cuda\" or ",
                "\"cpu\" (by name: it comes after ...)")
  }
  context <- autocast_open("with_autocast", device_type, dtype, enabled, cache_enabled)
  on.exit(unset_autocast(context))
  force(code)
}

#' @export
set_autocast <- function(device_type, dtype = NULL, enabled = TRUE, cache_enabled = NULL) {
  if (missing(device_type)) value_error("set_autocast: device_type is missing; give \"cuda\" or \"cpu\"")
  autocast_open("set_autocast", device_type, dtype, enabled, cache_enabled)
}

#' @export
unset_autocast <- function(context) {
  if (!inherits(context, "rcuda_autocast_context")) {
    value_error("unset_autocast: context must be what set_autocast() returned, got ",
                autocast_describe(context))
  }
  invisible(.Call(rc_autocast_pop, context$token))
}

#' @export
print.rcuda_autocast_context <- function(x, ...) {
  cat("<autocast context: device_type \"", x$device, "\">\n", sep = "")
  invisible(x)
}

# Whether autocast is on for device_type ("cuda" or "cpu"), and its dtype there (what ops of
# the low-precision list run in). Not exported: torch for R has no R function for them.
is_autocast_enabled <- function(device_type) .Call(rc_autocast_state, device_type)$enabled
autocast_dtype <- function(device_type) new_dtype(.Call(rc_autocast_state, device_type)$dtype)
