# module$clone(deep = FALSE): a copy of a module, as torch for R's (R6's clone()).
#
# Note [Cloning modules]
# ~~~~~~~~~~~~~~~~~~~~~~
# The clone is built from the module's class as new_module() builds one (Note [Module objects]),
# so that its methods see the clone as self, and then takes every other field of the original:
# training, the registry of parameters, buffers and submodules, the private fields, plain values.
# A shallow clone shares the original's tensors and submodules. A deep one copies each tensor
# (detached: a leaf with the original's requires_grad, and its parameter or buffer marker) and
# clones each submodule, each once: a tensor or submodule the original reaches twice (tied
# weights, `self$y <- self$x`) is one copy that the clone reaches twice. Fields that are lists
# are copied element by element; environments and functions other than methods stay shared,
# as R6 does. Last, a deep clone calls its private finalize_deep_clone() method where the class
# has one, as torch for R's, to mend what a copy cannot (a cache keyed by the old tensors, say).

module_clone <- function(self, deep, memo = clone_memo()) {
  if (!is.logical(deep) || length(deep) != 1 || is.na(deep)) {
    value_error("nn_module$clone: deep must be TRUE or FALSE, got ", deparse(deep)[1])
  }
  for (pair in memo$modules) if (identical(pair$from, self)) return(pair$to)
  copy <- build_instance(get(".__def__", envir = self))
  callable <- attach_callable(copy)
  built <- setdiff(ls(copy, all.names = TRUE), "training")  # methods and hidden fields
  if (deep) memo$modules[[length(memo$modules) + 1L]] <- list(from = self, to = callable)
  value <- function(x) clone_value(x, deep, memo)

  state <- module_registry(self)
  new_state <- module_registry(copy)
  for (kind in c("parameters", "buffers", "modules")) new_state[[kind]] <- lapply(state[[kind]], value)
  new_state$non_persistent <- state$non_persistent
  for (name in setdiff(ls(self, all.names = TRUE), built)) {
    assign(name, value(get(name, envir = self)), envir = copy)
  }
  private <- module_private(self)
  new_private <- module_private(copy)
  for (name in setdiff(ls(private, all.names = TRUE), ls(new_private, all.names = TRUE))) {
    assign(name, value(get(name, envir = private)), envir = new_private)
  }
  finalize <- get0("finalize_deep_clone", envir = new_private, inherits = FALSE)
  if (deep && is.function(finalize)) finalize()
  callable
}

# The private environment of Note [Module objects], which every method's enclosure holds.
module_private <- function(self) environment(get("initialize", envir = self))$private

clone_memo <- function() {
  memo <- new.env(parent = emptyenv())
  memo$tensors <- list()  # the copies, named by the engine object's address (rc_tensor_ids)
  memo$modules <- list()  # list(from = an original's self, to = its clone)
  memo
}

clone_value <- function(x, deep, memo) {
  if (!deep) return(x)
  if (is_torch_tensor(x)) return(clone_tensor(x, memo))
  if (is_nn_module(x)) return(module_clone(module_self(x), TRUE, memo))
  if (is.list(x) && !is.object(x)) {
    out <- lapply(x, clone_value, deep = TRUE, memo = memo)
    attributes(out) <- attributes(x)
    return(out)
  }
  x
}

clone_tensor <- function(x, memo) {
  id <- .Call(rc_tensor_ids, list(x))
  done <- memo$tensors[[id]]
  if (!is.null(done)) return(done)
  copy <- .Call(rc_copy, "clone", .Call(rc_detach, x))
  for (marker in c("nn_parameter", "nn_buffer")) {
    if (!is.null(attr(x, marker))) copy <- .Call(rc_marked_handle, copy, marker, attr(x, marker))
  }
  .Call(rc_set_requires_grad, copy, .Call(rc_requires_grad, x))
  memo$tensors[[id]] <- copy
  copy
}
