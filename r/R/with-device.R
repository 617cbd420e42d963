# The default device of new tensors, as torch for R's with_device() and local_device(): inside
# with_device(device = "cuda", {...}) torch_randn(2, 2), torch_tensor(1:3), torch_zeros(...) and
# the parameters of a module built there are made on the GPU. Only creation functions that are
# given no device follow it (creation_device() in creation.R); an op's result stays on the
# device of its inputs, and $to(), $cuda() and torch_tensor(<tensor>) keep their meaning. Under
# with_device(device = "meta") torch_empty/zeros/ones/full/rand/randn make meta tensors
# (meta-tensors.R), and the other creators refuse.

default_device_state <- new.env(parent = emptyenv())
default_device_state$device <- NULL  # NULL: the CPU, where the engine puts a tensor given none

# The engine's device string for a creation function's `device` argument.
creation_device <- function(device) {
  device_string(if (is.null(device)) default_device_state$device else device)
}

# Makes `device` the default and returns the previous default (NULL for the CPU).
set_default_device <- function(device, fn) {
  if (!is.null(device)) {
    if (!is_device(device) && !(is.character(device) && length(device) == 1 && !is.na(device))) {
      value_error(fn, ": device must be a torch_device() or a string such as \"cuda\", got ", describe(device))
    }
    device <- torch_device(device)
    # (kept as "meta", which device_string() refuses: only the creators of meta tensors read it)
    device <- if (device$type == "meta") "meta" else device_string(device)
  }
  previous <- default_device_state$device
  default_device_state$device <- device
  previous
}

#' Device contexts
#'
#' `local_device()` makes `device` the default device of new tensors until the calling function
#' (`.env`) returns; `with_device()` evaluates `code` with it.
#' @param device a [torch_device()] or a string such as `"cuda"` or `"cpu"`.
#' @param code the code to evaluate.
#' @param ... unused, as in torch for R (the arguments after it must be named).
#' @param .env the environment whose exit restores the previous default.
#' @export
local_device <- function(device, ..., .env = parent.frame()) {
  previous <- set_default_device(device, "local_device")
  restore <- function() default_device_state$device <- previous
  do.call(base::on.exit, list(as.call(list(restore)), add = TRUE), envir = .env)
  invisible(previous)
}

#' @rdname local_device
#' @export
with_device <- function(code, ..., device) {
  if (missing(device)) value_error("with_device: device is required (with_device(code, device = \"cuda\"))")
  previous <- set_default_device(device, "with_device")
  on.exit(default_device_state$device <- previous)
  force(code)
}
