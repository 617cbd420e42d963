# as_dlpack() and from_dlpack(): tensors shared with Python without a copy, through DLPack and
# reticulate (docs/dlpack.md). The C half is ../src/dlpack.cpp and the engine's rcuda/io/dlpack.h,
# the Python half ../inst/python/rcuda_dlpack.py. reticulate is only suggested: rcuda loads and
# works without Python, and these two functions say what is missing.
#
# Note [One import per capsule]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# from_dlpack() reads the capsule's pointer, lets the engine check and take the managed tensor,
# and only then renames the capsule "used_dltensor[_versioned]", as the DLPack specification asks
# of consumers. When the engine refuses the tensor (a dtype rcuda lacks, read-only memory) the
# capsule keeps its name, so its destructor still calls the producer's deleter when Python frees
# it; once renamed, the deleter is the tensor's to call (when R frees its last view).

dlpack_state <- new.env(parent = emptyenv())

# The Python module, imported on first use; `op` names the caller in the errors.
dlpack_python <- function(op) {
  module <- dlpack_state$module
  if (!is.null(module)) return(module)
  if (!requireNamespace("reticulate", quietly = TRUE)) {
    value_error(op, ": sharing tensors with Python needs the reticulate package, which is not ",
                "installed; install.packages(\"reticulate\")")
  }
  reason <- NULL
  available <- tryCatch(reticulate::py_available(initialize = TRUE), error = function(e) {
    reason <<- conditionMessage(e)
    FALSE
  })
  if (!isTRUE(available)) {
    value_error(op, ": reticulate found no usable Python",
                if (!is.null(reason)) paste0(" (", reason, ")"),
                "; install Python 3, or name one with RETICULATE_PYTHON or ",
                "reticulate::use_python()")
  }
  path <- system.file("python", package = "rcuda")
  module <- reticulate::import_from_path("rcuda_dlpack", path = path, convert = FALSE)
  module$init(as.list(.Call(rc_dlpack_entry_points)))
  dlpack_state$module <- module
  module
}

py_value <- function(x) reticulate::py_to_r(x)

#' @export
as_dlpack <- function(x) {
  if (!is_torch_tensor(x)) {
    value_error("as_dlpack: x must be a tensor, got ", describe(x))
  }
  py <- dlpack_python("as_dlpack")
  source <- .Call(rc_dlpack_source, x)  # R's handle, kept by `source` until Python has its own
  py$RcudaTensor(source$address, source$device_type, source$device_id, source$description)
}

#' @export
from_dlpack <- function(obj, copy = FALSE) {
  if (!is.logical(copy) || length(copy) != 1 || is.na(copy)) {
    value_error("from_dlpack: copy must be TRUE or FALSE, got ", deparse(copy, nlines = 1)[1])
  }
  if (!inherits(obj, "python.builtin.object")) {
    value_error("from_dlpack: obj must be a Python object with __dlpack__ and __dlpack_device__ ",
                "(a NumPy array, a PyTorch tensor, ...) or a DLPack capsule, got ", describe(obj),
                if (is.atomic(obj)) paste0("; reticulate converts Python arrays to R ones unless ",
                                           "the module is imported with convert = FALSE"))
  }
  py <- dlpack_python("from_dlpack")
  if (py_value(py$is_capsule(obj))) {
    capsule <- obj
  } else if (py_value(py$has_dlpack(obj))) {
    device <- as.integer(unlist(py_value(py$dlpack_device(obj))))
    stream <- .Call(rc_dlpack_consumer_stream, device[1], device[2])
    capsule <- tryCatch(py$request_capsule(obj, stream), error = function(e) {
      value_error("from_dlpack: obj's __dlpack__() failed: ", conditionMessage(e))
    })
  } else {
    value_error("from_dlpack: obj (", py_value(py$describe(obj)), ") has no __dlpack__ and ",
                "__dlpack_device__ methods and is not a DLPack capsule")
  }
  state <- py_value(py$capsule_state(capsule))
  if (identical(state[[1]], "used")) {
    value_error("from_dlpack: the DLPack capsule was already consumed (a capsule is imported ",
                "once); ask its producer for a new one (obj.__dlpack__())")
  }
  if (identical(state[[1]], "other")) {
    value_error("from_dlpack: obj is a capsule but not a DLPack one (named \"",
                py_value(py$capsule_name(capsule)), "\")")
  }
  versioned <- identical(state[[1]], "dltensor_versioned")
  tensor <- .Call(rc_from_dlpack, state[[2]], versioned, copy)
  py$mark_consumed(capsule, versioned)  # Note [One import per capsule]
  tensor
}

# Managed tensors lent and taken so far, and their deleters called (tests of the lifetimes).
dlpack_counts <- function() .Call(rc_dlpack_counts)
