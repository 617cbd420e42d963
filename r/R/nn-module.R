# nn_module(): torch for R's module classes, built on plain environments (no R6).
#
# Note [Module objects]
# ~~~~~~~~~~~~~~~~~~~~~
# nn_module(...) returns a generator; calling it builds an instance:
#  - `self`, an environment of class "nn_Module" holding the module's fields, its methods (closures
#    whose enclosing environment holds `self`, `private` and, for a class that inherits, `super`),
#    and its parameters, buffers and submodules, each under its own name, so that `self$fc1` in a
#    forward is one environment lookup. Assignment goes through `$<-.nn_Module`, which registers
#    what is assigned: a tensor from nn_parameter() or nn_buffer(), or a module. The registry
#    (`.__nn__` in self) keeps names in assignment order: parameters, state dicts and printing
#    follow it.
#  - the module object the user holds: the instance's forward closure itself, with class
#    c(<classnames>, "nn_module") and attribute "module" = self. Calling the module calls forward
#    with no dispatch in between (it runs on every training step); `$` on it reaches self.
# There is no `$` method for nn_Module, so reading a field costs R's failed search for one
# S3 method and the environment lookup: 1 to 1.5 us on the development VM, where nn_linear's
# forward (two fields and one engine call) costs 4 us more than the bare .Call. An R `$` method
# would add a closure call to every read; torch for R's R6 modules take two R methods per read.

# ---- parameters and buffers -----------------------------------------------------------------

#' @export
nn_parameter <- function(x, requires_grad = TRUE) {
  if (!is_torch_tensor(x)) value_error("nn_parameter: x must be a tensor, got ", describe(x))
  if (!.Call(rc_is_leaf, x)) x <- .Call(rc_detach, x)
  p <- .Call(rc_marked_handle, x, "nn_parameter", TRUE)
  .Call(rc_set_requires_grad, p, requires_grad)
  p
}

#' @export
is_nn_parameter <- function(x) is_torch_tensor(x) && isTRUE(attr(x, "nn_parameter"))

#' @export
nn_buffer <- function(x, persistent = TRUE) {
  if (!is_torch_tensor(x)) value_error("nn_buffer: x must be a tensor, got ", describe(x))
  .Call(rc_marked_handle, x, "nn_buffer", isTRUE(persistent))
}

#' @export
is_nn_buffer <- function(x) is_torch_tensor(x) && !is.null(attr(x, "nn_buffer"))

#' @export
is_nn_module <- function(x) inherits(x, "nn_module") && is.function(x)

describe <- function(x) {
  if (inherits(x, "nn_module_generator")) return(paste0("the module generator <", class(x)[1], ">"))
  if (is_torch_tensor(x)) return("a tensor")
  paste0("an R ", class(x)[1])
}

# ---- classes --------------------------------------------------------------------------------

#' @export
nn_module <- function(classname = NULL, inherit = NULL, ..., private = NULL, active = NULL,
                      parent_env = parent.frame()) {
  parent <- if (is.null(inherit)) nn_Module_class else class_def_of(inherit)
  members <- list(...)
  if (length(members) && (is.null(names(members)) || any(names(members) == ""))) {
    value_error("nn_module: every method or field given in ... must be named")
  }
  classes <- unique(c(classname, parent$classes))
  def <- list(classname = classname, classes = classes, parent = parent, public = members,
              private = as.list(private), active = as.list(active), parent_env = parent_env)
  make_generator(def)
}

class_def_of <- function(inherit) {
  def <- attr(inherit, "class_def")
  if (!inherits(inherit, "nn_module_generator") || is.null(def)) {
    value_error("nn_module: inherit must be a module generator such as nn_linear, got ", describe(inherit))
  }
  def
}

# The most derived definition of a public member.
find_member <- function(def, name) {
  while (!is.null(def)) {
    if (!is.null(def$public[[name]])) return(def$public[[name]])
    def <- def$parent
  }
  NULL
}

# A function with initialize's arguments. Its body hands the call's own argument expressions to
# initialize, evaluated in the caller's frame: defaults and missing() then behave in initialize
# as they would have in the call.
make_generator <- function(def) {
  generator <- function() new_module(.__rcuda_def__, as.list(sys.call())[-1L], parent.frame())
  formals(generator) <- formals(find_member(def, "initialize"))
  environment(generator) <- list2env(list(.__rcuda_def__ = def), parent = topenv())
  class(generator) <- c(def$classes, "nn_module_generator")
  attr(generator, "class_def") <- def
  generator
}

#' @export
print.nn_module_generator <- function(x, ...) {
  cat("<", class(x)[1], "> object generator\n", sep = "")
  invisible(x)
}

new_module <- function(def, args, caller) {
  self <- build_instance(def)
  do.call(self$initialize, args, envir = caller)
  attach_callable(self)
}

# The module object of Note [Module objects]: self's forward, which callers hold and call.
attach_callable <- function(self) {
  callable <- get("forward", envir = self)
  attr(callable, "class") <- c(get(".__classes__", envir = self), "nn_module")
  attr(callable, "module") <- self
  assign(".__callable__", callable, envir = self)
  callable
}

# Note [Module objects]: self with every level's methods bound, the most derived winning.
build_instance <- function(def) {
  self <- new.env(parent = emptyenv())
  assign(".__def__", def, envir = self)  # module_clone() builds a clone's methods from it
  chain <- list()
  while (!is.null(def)) {
    chain <- c(list(def), chain)
    def <- def$parent
  }
  private <- new.env(parent = emptyenv())
  state <- new.env(parent = emptyenv())
  state$parameters <- list()
  state$buffers <- list()
  state$modules <- list()
  state$non_persistent <- character()
  assign(".__nn__", state, envir = self)
  assign(".__classes__", chain[[length(chain)]]$classes, envir = self)
  assign("training", TRUE, envir = self)
  public <- list()
  hidden <- list()
  actives <- list()
  for (level in chain) {
    enclos <- new.env(parent = level$parent_env)
    enclos$self <- self
    enclos$private <- private
    if (length(public) || length(hidden)) enclos$super <- list2env(c(public, hidden), parent = emptyenv())
    bind <- function(f) {
      if (is.function(f)) environment(f) <- enclos
      f
    }
    public[names(level$public)] <- lapply(level$public, bind)
    hidden[names(level$private)] <- lapply(level$private, bind)
    actives[names(level$active)] <- lapply(level$active, bind)
  }
  for (name in names(public)) assign(name, public[[name]], envir = self)
  for (name in names(hidden)) assign(name, hidden[[name]], envir = private)
  for (name in names(actives)) makeActiveBinding(name, actives[[name]], self)
  add_collections(self)
  class(self) <- "nn_Module"
  self
}

# $parameters, $buffers, $children and $modules: read-only fields computed on access.
add_collections <- function(self) {
  # (runtime_error and "It's not possible" are torch for R's class and words for it.)
  read_only <- function(name) {
    rcuda_abort("rcuda_value_error", paste0("nn_module: $", name, " cannot be assigned. It's not possible to modify the ",
                name, " list; assign to the parameter, buffer or submodule itself"), also = "runtime_error")
  }
  makeActiveBinding("parameters", function(value) {
    if (!missing(value)) read_only("parameters")
    unique_tensors(collect_tensors(self, "parameters", ""))
  }, self)
  makeActiveBinding("buffers", function(value) {
    if (!missing(value)) read_only("buffers")
    unique_tensors(collect_tensors(self, "buffers", ""))
  }, self)
  makeActiveBinding("children", function(value) {
    if (!missing(value)) read_only("children")
    drop_null(module_registry(self)$modules)
  }, self)
  makeActiveBinding("modules", function(value) {
    if (!missing(value)) read_only("modules")
    all_modules(self)
  }, self)
}

module_registry <- function(self) .subset2(self, ".__nn__")
module_self <- function(module) attr(module, "module")
drop_null <- function(x) x[!vapply(x, is.null, logical(1))]

# ---- registration by assignment -----------------------------------------------------------

#' @export
`$<-.nn_Module` <- function(x, name, value) {
  module_set(x, name, value)
  x
}

#' @export
`[[<-.nn_Module` <- `$<-.nn_Module`

#' @export
`$<-.nn_module` <- function(x, name, value) {
  module_set(module_self(x), name, value)
  x
}

#' @export
`[[<-.nn_module` <- `$<-.nn_module`

module_set <- function(self, name, value) {
  name <- as.character(name)
  state <- module_registry(self)
  if (is_nn_parameter(value)) return(register(self, state, "parameters", name, value))
  if (is_nn_buffer(value)) {
    if (!attr(value, "nn_buffer")) state$non_persistent <- union(state$non_persistent, name)
    return(register(self, state, "buffers", name, value))
  }
  if (is_nn_module(value)) return(register(self, state, "modules", name, value))
  if (inherits(value, "nn_module_generator")) {
    value_error("nn_module: self$", name, " <- ", class(value)[1], ": that is a module generator; ",
                "call it to make a module, as in ", class(value)[1], "(...)")
  }
  if (name %in% names(state$parameters)) {
    if (!is.null(value)) {
      value_error("nn_module: cannot assign ", describe(value), " to parameter '", name,
                  "' (an nn_parameter() or NULL is expected; to change its values in place, use ",
                  "with_no_grad(self$", name, "$copy_(value)))")
    }
    state$parameters[name] <- list(NULL)
  } else if (name %in% names(state$modules)) {
    if (!is.null(value)) {
      value_error("nn_module: cannot assign ", describe(value), " to submodule '", name,
                  "' (an nn_module or NULL is expected)")
    }
    state$modules[name] <- list(NULL)
  } else if (name %in% names(state$buffers)) {
    if (!is.null(value) && !is_torch_tensor(value)) {
      value_error("nn_module: cannot assign ", describe(value), " to buffer '", name,
                  "' (a tensor or NULL is expected)")
    }
    state$buffers[name] <- list(value)
  } else if (identical(name, "training") && !(is.logical(value) && length(value) == 1 && !is.na(value))) {
    value_error("nn_module: training must be TRUE or FALSE, got ", deparse(value)[1])
  }
  assign(name, value, envir = self)
  invisible(self)
}

# Takes `name` out of every registry of a module object and out of its fields, as PyTorch's
# `del module._parameters[name]` (register_parameter(name, NULL) keeps the name, holding NULL):
# a value assigned under that name afterwards is a plain field.
unregister <- function(module, name) {
  self <- module_self(module)
  state <- module_registry(self)
  for (kind in c("parameters", "buffers", "modules")) state[[kind]][[name]] <- NULL
  state$non_persistent <- setdiff(state$non_persistent, name)
  if (exists(name, envir = self, inherits = FALSE)) rm(list = name, envir = self)
  invisible(module)
}

# Puts value under `name` in one registry (taking it out of the others) and in self.
register <- function(self, state, kind, name, value) {
  for (other in setdiff(c("parameters", "buffers", "modules"), kind)) {
    if (name %in% names(state[[other]])) state[[other]][[name]] <- NULL
  }
  if (kind != "buffers") state$non_persistent <- setdiff(state$non_persistent, name)
  state[[kind]][name] <- list(value)
  assign(name, value, envir = self)
  invisible(self)
}

# ---- walking the module tree ----------------------------------------------------------------

# The named tensors of one registry ("parameters" or "buffers") of self and its submodules, own
# first, names prefixed with the path ("fc1.weight"), as PyTorch's named_parameters().
collect_tensors <- function(self, kind, prefix, recursive = TRUE, persistent_only = FALSE) {
  state <- module_registry(self)
  own <- drop_null(state[[kind]])
  if (persistent_only) own <- own[!names(own) %in% state$non_persistent]
  if (length(own)) names(own) <- paste0(prefix, names(own))
  if (!recursive) return(own)
  children <- drop_null(state$modules)
  for (name in names(children)) {
    own <- c(own, collect_tensors(module_self(children[[name]]), kind, paste0(prefix, name, "."),
                                  TRUE, persistent_only))
  }
  own
}

# A tensor shared by two modules (tied weights) counts once, under its first name.
unique_tensors <- function(tensors) {
  if (length(tensors) < 2) return(tensors)
  tensors[!duplicated(.Call(rc_tensor_ids, tensors))]
}

all_modules <- function(self) {
  found <- list(.subset2(self, ".__callable__"))
  walk <- function(s) {
    for (child in drop_null(module_registry(s)$modules)) {
      child_self <- module_self(child)
      if (any(vapply(found, function(m) identical(module_self(m), child_self), logical(1)))) next
      found[[length(found) + 1]] <<- child
      walk(child_self)
    }
  }
  walk(self)
  found
}

parameter_count <- function(self) {
  params <- collect_tensors(self, "parameters", "")
  sum(vapply(unique_tensors(params), function(p) prod(as.numeric(p$shape)), numeric(1)))
}
