# Python for the DLPack tests (test-dlpack.R), through reticulate, with NumPy and PyTorch as the
# references. reticulate starts one Python per R process and keeps it, so the choice is made once,
# before it starts: RETICULATE_PYTHON when set, else the first of RCUDA_PYTHON, python3 and python
# on the PATH and /usr/bin/python3 that imports numpy and torch, else the first that imports
# numpy. Tests skip, saying what is missing, when none does.

dlpack_python_state <- new.env(parent = emptyenv())

dlpack_choose_python <- function() {
  if (!is.null(dlpack_python_state$reason)) return(dlpack_python_state$reason)
  reason <- ""
  if (!requireNamespace("reticulate", quietly = TRUE)) {
    reason <- "reticulate is not installed"
  } else if (!reticulate::py_available(initialize = FALSE) &&
             !nzchar(Sys.getenv("RETICULATE_PYTHON"))) {
    candidates <- unique(c(Sys.getenv("RCUDA_PYTHON"), Sys.which(c("python3", "python")),
                           "/usr/bin/python3"))
    candidates <- candidates[nzchar(candidates) & file.exists(candidates)]
    # Probed without R's LD_LIBRARY_PATH, which can make a Python built with --enable-shared run
    # against the system's libpython (and its module paths) instead of its own.
    executable <- function(python, modules) {
      code <- sprintf("import sys, %s; print(sys.executable)", modules)
      out <- suppressWarnings(system2(python, c("-c", shQuote(code)), stdout = TRUE, stderr = FALSE,
                                      env = "LD_LIBRARY_PATH="))
      if (is.null(attr(out, "status")) && length(out) == 1) out else ""
    }
    chosen <- ""
    for (modules in c("numpy, torch", "numpy")) {
      for (python in candidates) {
        chosen <- executable(python, modules)
        if (nzchar(chosen)) break
      }
      if (nzchar(chosen)) break
    }
    if (nzchar(chosen)) reticulate::use_python(chosen, required = TRUE)
  }
  if (!nzchar(reason) && !isTRUE(tryCatch(reticulate::py_available(initialize = TRUE),
                                          error = function(e) FALSE))) {
    reason <- "reticulate found no usable Python"
  }
  dlpack_python_state$reason <- reason
  reason
}

skip_if_no_python_module <- function(module) {
  skip_if_not_installed("reticulate")
  reason <- dlpack_choose_python()
  if (nzchar(reason)) skip(reason)
  if (!reticulate::py_module_available(module)) {
    skip(paste0("the Python module ", module, " is not installed in ",
                reticulate::py_config()$python))
  }
}

skip_if_no_numpy <- function() skip_if_no_python_module("numpy")
skip_if_no_torch <- function() {
  skip_if_no_python_module("numpy")
  skip_if_no_python_module("torch")
}

np <- function() reticulate::import("numpy", convert = FALSE)
pytorch <- function() reticulate::import("torch", convert = FALSE)
# dlpack_helpers.py beside this file: item assignment, weak references, hand-made capsules.
pyhelp <- function() {
  reticulate::import_from_path("dlpack_helpers", path = test_path(), convert = FALSE)
}
# The package's own Python module (inst/python/rcuda_dlpack.py): capsule names and flags.
shim <- function() {
  reticulate::import_from_path("rcuda_dlpack", system.file("python", package = "rcuda"),
                               convert = FALSE)
}
py_r <- function(x) reticulate::py_to_r(x)
py_tuple <- function(...) reticulate::tuple(...)
# Python's collector, then R's, then Python's again (R's finalizers release Python objects).
collect_both <- function() {
  pyhelp()$collect()
  gc()
  pyhelp()$collect()
  invisible()
}

# A PyTorch tensor's values as an R vector (as float64, but for bool and complex).
torch_values <- function(t) {
  if (!reticulate::py_str(t$dtype) %in% c("torch.bool", "torch.complex64", "torch.complex128"))
    t <- t$to(pytorch()$float64)
  unlist(py_r(t$tolist()))
}

# Lifetimes of memory lent to PyTorch and taken from it, the same on every device: R's tensor
# `make()` lent to torch.from_dlpack stays readable there after R drops it and its loan ends when
# PyTorch drops it; PyTorch's tensor `make_py()` taken by from_dlpack stays alive (a weak
# reference sees it) while R holds it, with its values, and goes when R lets go.
expect_lent_to_pytorch_outlives_r <- function(make, values) {
  torch <- pytorch()
  collect_both()
  start <- rcuda:::dlpack_counts()
  x <- make()
  t <- torch$from_dlpack(as_dlpack(x))
  rm(x)
  collect_both()
  # Reuse freed memory, if the loan had not kept it.
  churn <- torch_randn(1e5, device = py_r(t$device$type))
  expect_equal(torch_values(t$cpu()), values)
  rm(t)
  collect_both()
  expect_equal(rcuda:::dlpack_counts()[["exports_deleted"]], start[["exports_deleted"]] + 1)
}

expect_taken_from_pytorch_outlives_it <- function(make_py, values) {
  h <- pyhelp()
  u <- make_py()
  ref <- h$weak(u)
  y <- from_dlpack(u)
  rm(u)
  collect_both()
  expect_true(py_r(h$alive(ref)))
  expect_equal(as.array(y), values)
  rm(y)
  collect_both()
  expect_false(py_r(h$alive(ref)))
}
