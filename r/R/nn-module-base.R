# The methods every nn_module has (torch for R's nn_Module), the S3 methods of module objects and
# printing. Note [Module objects] in nn-module.R says how instances are built.

nn_Module_class <- list(
  classname = NULL, classes = character(), parent = NULL, private = list(), active = list(),
  parent_env = environment(),
  public = list(
    initialize = function() {},
    forward = function(...) {
      value_error("nn_module: forward() is not implemented for <", module_class(self), ">")
    },
    add_module = function(name, module) self$register_module(name, module),
    register_module = function(name, module) {
      if (!is_nn_module(module)) {
        value_error("register_module: module '", name, "' must be an nn_module, got ", describe(module))
      }
      register(self, module_registry(self), "modules", as.character(name), module)
    },
    register_parameter = function(name, param) {
      if (!is.null(param) && !is_torch_tensor(param)) {
        value_error("register_parameter: '", name, "' must be a tensor or NULL, got ", describe(param))
      }
      if (!is.null(param)) param <- .Call(rc_marked_handle, param, "nn_parameter", TRUE)
      register(self, module_registry(self), "parameters", as.character(name), param)
    },
    register_buffer = function(name, tensor, persistent = TRUE) {
      if (!is.null(tensor) && !is_torch_tensor(tensor)) {
        value_error("register_buffer: '", name, "' must be a tensor or NULL, got ", describe(tensor))
      }
      name <- as.character(name)
      state <- module_registry(self)
      register(self, state, "buffers", name, tensor)
      state$non_persistent <- if (isTRUE(persistent)) setdiff(state$non_persistent, name) else union(state$non_persistent, name)
      invisible(self)
    },
    train = function(mode = TRUE) {
      if (!is.logical(mode) || length(mode) != 1 || is.na(mode)) {
        value_error("train: mode must be TRUE or FALSE, got ", deparse(mode)[1])
      }
      assign("training", mode, envir = self)
      for (child in drop_null(module_registry(self)$modules)) child$train(mode)
      invisible(module_object(self))
    },
    eval = function() self$train(FALSE),
    # memory_format (torch's module.to(memory_format =)): 4-D parameters and buffers are laid
    # out in it (channels-last conv weights); others keep theirs.
    to = function(dtype = NULL, device = NULL, ..., memory_format = NULL) {
      if (!is.null(dtype) && !is_dtype(dtype) && !is_dtype_string(dtype)) {  # model$to("cuda")
        device <- dtype
        dtype <- NULL
      }
      if (!is.null(dtype) && !is_floating_dtype(dtype_name(dtype))) {
        dtype_error("nn_module$to: dtype must be floating (integer buffers keep theirs), got ", as.character(dtype))
      }
      format <- if (!is.null(memory_format)) memory_format_name(memory_format, "nn_module$to")
      tensors <- c(collect_tensors(self, "parameters", ""), collect_tensors(self, "buffers", ""))
      .Call(rc_module_to, unname(unique_tensors(tensors)), dtype_name(dtype), device_string(device),
            format)
      invisible(module_object(self))
    },
    cuda = function(device = NULL) self$to(device = if (is.null(device)) "cuda" else device),
    cpu = function() self$to(device = "cpu"),
    zero_grad = function(set_to_none = FALSE) {
      .Call(rc_zero_grad, unname(self$parameters), set_to_none)
      invisible(module_object(self))
    },
    named_parameters = function(recursive = TRUE, prefix = "") {
      unique_tensors(collect_tensors(self, "parameters", prefix, recursive))
    },
    named_buffers = function(recursive = TRUE, prefix = "") {
      unique_tensors(collect_tensors(self, "buffers", prefix, recursive))
    },
    named_children = function() self$children,
    state_dict = function(prefix = "", keepvars = FALSE) {
      out <- state_entries(self, prefix)
      # Detached, with each tensor's requires_grad kept, as torch for R's state_dict() (PyTorch's
      # clears it): the values are out of the graph either way.
      if (!keepvars) {
        out <- lapply(out, function(t) {
          d <- .Call(rc_detach, t)
          if (.Call(rc_requires_grad, t)) .Call(rc_set_requires_grad, d, TRUE)
          d
        })
      }
      out
    },
    load_state_dict = function(state_dict, strict = TRUE, ...) {
      load_state(self, state_dict, strict)
      invisible(module_object(self))
    },
    apply = function(fn) {
      for (child in drop_null(module_registry(self)$modules)) child$apply(fn)
      fn(module_object(self))
      invisible(module_object(self))
    },
    print = function(...) print_module(self),
    clone = function(deep = FALSE) module_clone(self, deep)  # Note [Cloning modules]
  )
)

module_object <- function(self) get0(".__callable__", envir = self, inherits = FALSE)
module_class <- function(self) c(get0(".__classes__", envir = self, inherits = FALSE), "nn_module")[1]

# ---- state dicts ------------------------------------------------------------------------------

# Own parameters, own persistent buffers, then each submodule's, as PyTorch's state_dict().
state_entries <- function(self, prefix) {
  state <- module_registry(self)
  buffers <- state$buffers[!names(state$buffers) %in% state$non_persistent]
  own <- c(drop_null(state$parameters), drop_null(buffers))
  if (length(own)) names(own) <- paste0(prefix, names(own))
  children <- drop_null(state$modules)
  for (name in names(children)) {
    own <- c(own, state_entries(module_self(children[[name]]), paste0(prefix, name, ".")))
  }
  own
}

load_state <- function(self, state_dict, strict) {
  if (!is.list(state_dict) || (length(state_dict) && is.null(names(state_dict)))) {
    value_error("load_state_dict: state_dict must be a named list of tensors, got ", describe(state_dict))
  }
  targets <- state_entries(self, "")
  missing_keys <- setdiff(names(targets), names(state_dict))
  # State dicts from before batch norms counted their batches have no num_batches_tracked:
  # torch (R and Python) loads them with the count at 0.
  untracked <- missing_keys[grepl("(^|\\.)num_batches_tracked$", missing_keys)]
  if (length(untracked)) {
    state_dict[untracked] <- lapply(untracked, function(key) torch_zeros_like(targets[[key]]))
    missing_keys <- setdiff(missing_keys, untracked)
  }
  unexpected <- setdiff(names(state_dict), names(targets))
  if (isTRUE(strict) && (length(missing_keys) || length(unexpected))) {
    value_error("load_state_dict: the state_dict does not match the module (strict = TRUE)",
                if (length(missing_keys)) paste0("; missing keys: ", paste(missing_keys, collapse = ", ")),
                if (length(unexpected)) paste0("; unexpected keys: ", paste(unexpected, collapse = ", ")))
  }
  keys <- intersect(names(targets), names(state_dict))
  # A module restored by readRDS() holds handles whose tensors are gone: those entries take new
  # tensors with the loaded values instead of a copy into them, as torch for R does.
  freed <- keys[vapply(targets[keys], function(t) .Call(rc_is_freed, t), logical(1))]
  problems <- character()
  for (key in keys) {
    value <- state_dict[[key]]
    if (!is_torch_tensor(value)) {
      problems <- c(problems, paste0(key, " is ", describe(value), ", not a tensor"))
    } else if (key %in% freed) {
      next
    } else if (!identical(as.integer(value$shape), as.integer(targets[[key]]$shape))) {
      problems <- c(problems, paste0(key, ": the state_dict has shape [", paste(value$shape, collapse = ", "),
                                     "], the module [", paste(targets[[key]]$shape, collapse = ", "), "]"))
    }
  }
  if (length(problems)) shape_error("load_state_dict: ", paste(problems, collapse = "; "))
  for (key in freed) replace_state_entry(self, key, state_dict[[key]])
  keys <- setdiff(keys, freed)
  .Call(rc_copy_all, unname(targets[keys]), unname(state_dict[keys]))
}

# Puts a copy of value under a state dict key ("fc.weight"): a parameter (requiring grad) or a
# buffer, as the entry it replaces was.
replace_state_entry <- function(self, key, value) {
  path <- strsplit(key, ".", fixed = TRUE)[[1]]
  owner <- self
  for (child in head(path, -1)) owner <- module_self(module_registry(owner)$modules[[child]])
  name <- tail(path, 1)
  copy <- with_no_grad(value$detach()$clone())
  if (name %in% names(module_registry(owner)$parameters)) {
    owner$register_parameter(name, copy$requires_grad_(TRUE))
  } else {
    owner$register_buffer(name, copy, persistent = TRUE)
  }
}

# ---- module objects -------------------------------------------------------------------------

#' @export
`$.nn_module` <- function(x, name) get0(name, envir = attr(x, "module"), inherits = FALSE)

#' @export
`[[.nn_module` <- function(x, i) {
  if (is.numeric(i)) {
    children <- module_registry(attr(x, "module"))$modules
    if (length(i) != 1 || i < 1 || i > length(children)) {
      index_error("nn_module: [[", i, "]] is out of bounds for a module with ", length(children), " submodules")
    }
    return(children[[i]])
  }
  get0(i, envir = attr(x, "module"), inherits = FALSE)
}

#' @export
.DollarNames.nn_module <- function(x, pattern = "") {
  grep(pattern, ls(attr(x, "module")), value = TRUE)
}

#' @export
print.nn_module <- function(x, ...) {
  module_self(x)$print(...)
  invisible(x)
}

format_count <- function(n) format(n, big.mark = ",", scientific = FALSE, trim = TRUE)

tensor_summary <- function(t) {
  paste0(as.character(t$dtype), " [", paste0("1:", t$shape, collapse = ", "), "]")
}

print_module <- function(self) {
  cat("An `nn_module` containing ", format_count(parameter_count(self)), " parameters.\n", sep = "")
  rule <- function(title) {
    cat("\n-- ", title, " ", strrep("-", max(3, getOption("width", 80) - nchar(title) - 4)), "\n", sep = "")
  }
  state <- module_registry(self)
  children <- drop_null(state$modules)
  if (length(children)) {
    rule("Modules")
    for (name in names(children)) {
      cat("* ", name, ": <", class(children[[name]])[1], "> #",
          format_count(parameter_count(module_self(children[[name]]))), " parameters\n", sep = "")
    }
  }
  for (kind in c("parameters", "buffers")) {
    tensors <- drop_null(state[[kind]])
    if (!length(tensors)) next
    rule(if (kind == "parameters") "Parameters" else "Buffers")
    for (name in names(tensors)) cat("* ", name, ": ", tensor_summary(tensors[[name]]), "\n", sep = "")
  }
  invisible(self)
}
