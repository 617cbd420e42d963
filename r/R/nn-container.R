# Containers of modules: nn_sequential(), nn_module_list(), nn_module_dict(). Children are named
# "0", "1", ... (0-based, as PyTorch's, so that state dict keys such as "0.weight" match), unless
# given names.

# (torch for R's words, "but got object of type", which its tests match)
check_module_arg <- function(fn, what, value) {
  if (inherits(value, "nn_module_generator")) {
    value_error(fn, ": ", what, " is the module generator ", class(value)[1], ", which must be ",
                "initialized: call it (", class(value)[1], "(...)) to make the module")
  }
  if (!is_nn_module(value)) {
    value_error(fn, ": ", what, " must be an nn_module, but got object of type ", class(value)[1])
  }
}

#' @export
nn_sequential <- nn_module(
  "nn_sequential",
  initialize = function(...) {
    modules <- list(...)
    labels <- names(modules)
    for (i in seq_along(modules)) {
      check_module_arg("nn_sequential", paste0("argument ", i), modules[[i]])
      name <- if (is.null(labels) || labels[i] == "") as.character(i - 1) else labels[i]
      self$add_module(name, modules[[i]])
    }
  },
  forward = function(input) {
    for (module in .subset2(self, ".__nn__")$modules) {
      if (!is.null(module)) input <- module(input)
    }
    input
  }
)

#' @export
nn_module_list <- nn_module(
  "nn_module_list",
  initialize = function(modules = list()) {
    for (module in modules) self$append(module)
  },
  append = function(module) {
    check_module_arg("nn_module_list$append", "module", module)
    self$add_module(length(module_registry(self)$modules), module)
    invisible(module_object(self))
  },
  extend = function(modules) {
    for (module in modules) self$append(module)
    invisible(module_object(self))
  },
  insert = function(index, module) {
    check_module_arg("nn_module_list$insert", "module", module)
    state <- module_registry(self)
    modules <- append(unname(state$modules), list(module), after = index - 1)
    rm(list = names(state$modules), envir = self)
    state$modules <- list()
    for (m in modules) self$append(m)
    invisible(module_object(self))
  },
  forward = function(...) value_error("nn_module_list has no forward(); call its modules")
)

#' @export
nn_module_dict <- nn_module(
  "nn_module_dict",
  initialize = function(dict) {
    if (length(dict) && (is.null(names(dict)) || any(names(dict) == ""))) {
      value_error("nn_module_dict: every element of dict must be named")
    }
    for (name in names(dict)) {
      check_module_arg("nn_module_dict", paste0("dict$", name), dict[[name]])
      self$add_module(name, dict[[name]])
    }
  },
  forward = function(...) value_error("nn_module_dict has no forward(); call its modules")
)

container_length <- function(x, ...) length(module_registry(attr(x, "module"))$modules)

#' @export
length.nn_sequential <- container_length

#' @export
length.nn_module_list <- container_length

#' @export
length.nn_module_dict <- container_length

#' @export
as.list.nn_module_list <- function(x, ...) unname(module_registry(attr(x, "module"))$modules)

#' @export
names.nn_module_dict <- function(x) names(module_registry(attr(x, "module"))$modules)

#' @export
`[.nn_sequential` <- function(x, i) {
  do.call(nn_sequential, unname(module_registry(attr(x, "module"))$modules[i]))
}

# torch for R's nn_prune_head(): the network without its last head_size children, as an
# nn_sequential of the remaining ones (the same module objects, not copies), in order and under
# their names. A network of another class runs its children in that order too, which is what
# its forward() did only when it chained them so (as torch for R assumes).
#' @export
nn_prune_head <- function(x, head_size = 1L) {
  fn <- "nn_prune_head"
  if (!is_nn_module(x)) value_error(fn, ": x must be an nn_module, got ", describe(x))
  if (!is.numeric(head_size) || length(head_size) != 1 || is.na(head_size) || head_size < 0 ||
      head_size != trunc(head_size)) {
    value_error(fn, ": head_size must be a whole number >= 0, got ", deparse(head_size, nlines = 1)[1])
  }
  children <- x$children
  if (head_size > length(children)) {
    value_error(fn, ": the network has ", length(children), " children, fewer than head_size = ", head_size)
  }
  kept <- children[seq_len(length(children) - head_size)]
  if (inherits(x, "nn_sequential")) names(kept) <- NULL  # renumbered "0", "1", ..., as torch for R
  do.call(nn_sequential, kept)
}
