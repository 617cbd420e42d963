# The optimizer base: torch for R's Optimizer, over one rcuda::optim optimizer per R object.
#
# Note [Param groups in R and in the engine]
# An optimizer keeps its parameter groups twice: as the R list users read and write
# (`opt$param_groups[[1]]$lr <- 0.01`, what schedulers do) and as the engine's groups, whose
# options a step reads. `param_groups` is an active binding: every assignment to it, however
# deep (R's replacement functions assign the whole list back), runs its setter, which checks
# the new options and pushes them to the engine at once (src/optim.cpp, Note [Options pushed
# from R]). So the two never differ, and `$step()` is a single call into the engine's step with
# nothing to compare or convert. Parameters themselves cannot be changed through the list.

#' @export
optim_required <- function() structure(list(), class = "optim_required")

is_optim_required <- function(x) inherits(x, "optim_required")

#' @export
is_optimizer <- function(x) inherits(x, "torch_optimizer")

# Not cloneable (nor are its subclasses): a clone would share the engine's optimizer behind a
# second, diverging param_groups list. Save and load a state_dict() instead.
#
# R6 reserves the name `clone` for cloneable classes, so `opt$clone()` would fail with R's
# "attempt to apply non-function"; each optimizer gets a `clone` that says why instead (in
# torch's words for its ignite optimizers, "OptimizerIgnite cannot be deep cloned").
refuse_clone <- function(self, who) {
  ignite <- startsWith(who, "optim_ignite_")
  self$clone <- function(deep = FALSE) {
    value_error(who, ": ", if (ignite) "OptimizerIgnite" else "an optimizer", " cannot be ",
                if (isTRUE(deep)) "deep ", "cloned (its state would be shared); make a new one and ",
                "load_state_dict() the first's state_dict()")
  }
}

Optimizer <- R6::R6Class(
  "torch_optimizer",
  lock_objects = FALSE,
  cloneable = FALSE,
  public = list(
    defaults = NULL,
    initialize = function(params, defaults) {
      self$defaults <- defaults
      groups <- param_groups_from(params, private$who)
      groups <- lapply(seq_along(groups), function(i) private$complete(groups[[i]], i))
      # (`engine`: the engine's optimizer when the R name differs, as optim_ignite_adam's)
      engine <- if (is.null(private$engine)) private$who else private$engine
      private$ptr <- .Call(rc_optim_new, engine, lapply(groups, `[[`, "params"), groups)
      private$groups <- groups
      refuse_clone(self, private$who)
    },
    # Runs the closure (which computes the loss and its gradients), then one engine step of
    # every group; returns the closure's loss.
    step = function(closure = NULL) {
      loss <- if (!is.null(closure)) closure()
      .Call(rc_optim_step, private$ptr)
      if (is.null(closure)) invisible(NULL) else loss
    },
    zero_grad = function(set_to_none = FALSE) {
      .Call(rc_optim_zero_grad, private$ptr, isTRUE(set_to_none))
      invisible(self)
    },
    add_param_group = function(param_group) {
      if (!is.list(param_group) || is.null(names(param_group)) || is.null(param_group$params)) {
        value_error(private$who, "$add_param_group: param_group must be a named list with an ",
                    "element `params` (a tensor or a list of tensors)")
      }
      if (is_torch_tensor(param_group$params)) param_group$params <- list(param_group$params)
      private$add_group(private$complete(param_group, length(private$groups) + 1L))
      invisible(self)
    },
    # torch for R's layout: param_groups with `params` as 1-based parameter numbers (counting
    # through the groups in order), and state named by those numbers. The state's tensors are
    # the optimizer's own, as torch's: clone them to keep a snapshot while stepping on.
    state_dict = function() {
      list(param_groups = private$numbered_groups(), state = .Call(rc_optim_state, private$ptr))
    },
    # Copies the state's tensors to each parameter's device and dtype; the groups' options
    # become the dict's. Nothing changes when the dict does not fit this optimizer.
    load_state_dict = function(state_dict) {
      who <- paste0(private$who, "$load_state_dict")
      groups <- private$groups_from_state_dict(state_dict, who)
      .Call(rc_optim_load_state, private$ptr, lapply(state_dict$param_groups, `[[`, "params"),
            groups, state_dict$state)
      private$groups <- groups
      invisible(self)
    },
    print = function(...) {
      n <- vapply(private$groups, function(g) length(g$params), integer(1))
      cat("<", private$who, "> ", sum(n), " parameter", if (sum(n) != 1) "s", " in ",
          length(n), " param group", if (length(n) != 1) "s", "\n", sep = "")
      invisible(self)
    }
  ),
  active = list(
    # Note [Param groups in R and in the engine].
    param_groups = function(value) {
      if (missing(value)) return(private$groups)
      if (!is.list(value) || length(value) != length(private$groups)) {
        value_error(private$who, ": param_groups must be a list of ", length(private$groups),
                    " groups; use add_param_group() to add one")
      }
      for (i in seq_along(value)) private$check_group(value[[i]], i)
      private$set_groups(value)
    }
  ),
  private = list(
    ptr = NULL,
    groups = NULL,
    who = "optimizer",
    engine = NULL,
    check_group = function(group, index) NULL,
    # The groups as a state dict has them: parameters as numbers 1, 2, ... across the groups.
    numbered_groups = function() {
      groups <- private$groups
      first <- 0L
      for (i in seq_along(groups)) {
        n <- length(groups[[i]]$params)
        groups[[i]]$params <- first + seq_len(n)
        first <- first + n
      }
      groups
    },
    # A new checked group, given to the engine's optimizer first.
    add_group = function(group) {
      .Call(rc_optim_add_group, private$ptr, group$params, group)
      private$groups[[length(private$groups) + 1L]] <- group
    },
    # Checked groups become the optimizer's: the engine's first (Note [Param groups in R and in
    # the engine]).
    set_groups = function(groups) {
      .Call(rc_optim_set_groups, private$ptr, lapply(groups, `[[`, "params"), groups)
      private$groups <- groups
    },
    # A state dict's groups as this optimizer's: its own parameters with the dict's options,
    # completed and checked; an error naming `who` when the dict does not fit.
    groups_from_state_dict = function(state_dict, who) {
      if (!is.list(state_dict) || !all(c("param_groups", "state") %in% names(state_dict))) {
        value_error(who, ": state_dict must be a list with elements 'param_groups' and 'state'")
      }
      saved <- state_dict$param_groups
      if (length(saved) != length(private$groups)) {
        value_error(who, ": the state dict has ", length(saved), " param groups, the optimizer ",
                    length(private$groups))
      }
      lapply(seq_along(saved), function(i) {
        group <- saved[[i]]
        mine <- private$groups[[i]]$params
        if (length(group$params) != length(mine)) {
          value_error(who, ": param group ", i, " of the state dict has ", length(group$params),
                      " parameters, the optimizer's ", length(mine))
        }
        group$params <- mine
        private$complete(group, i)
      })
    },
    # A group's missing options from the defaults (after the group's own), then checked.
    complete = function(group, index) {
      for (name in names(self$defaults)) {
        if (!is.null(group[[name]])) next
        if (is_optim_required(self$defaults[[name]])) {
          value_error(private$who, ": param group ", index, " has no ", name,
                      ", and the optimizer has no default for it; give ", name, " = ...")
        }
        group[[name]] <- self$defaults[[name]]
      }
      private$check_group(group, index)
      group
    }
  )
)

# torch for R's forms of `params`: a tensor, a list of tensors (one group), or a list of
# groups, each a named list with `params` and its own options.
param_groups_from <- function(params, who) {
  if (is_torch_tensor(params)) return(list(list(params = list(params))))
  if (!is.list(params) || length(params) == 0) {
    value_error(who, ": params must be a tensor, a non-empty list of tensors, or a list of ",
                "param groups (named lists with an element `params`)")
  }
  if (!all(vapply(params, function(p) is.list(p) && !is.null(p$params), logical(1)))) {
    return(list(list(params = params)))
  }
  lapply(params, function(group) {
    if (is_torch_tensor(group$params)) group$params <- list(group$params)
    group
  })
}

# ---- option checks, in torch's words, shared by the optimizers' check_group ---------------

# Signals "<who>: invalid <what>: <name> = <value> in param group <index> (expected ...)".
invalid_option <- function(who, index, what, name, value, expected) {
  value_error(who, ": invalid ", what, ": ", name, " = ", format(value), " in param group ",
              index, " (expected ", expected, ")")
}

option_number <- function(group, name, who, index) {
  v <- group[[name]]
  if (!is.numeric(v) || length(v) != 1 || is.na(v)) {
    value_error(who, ": param group ", index, ": ", name, " must be a single number, got ",
                if (is.null(v)) "nothing" else paste(format(v), collapse = " "))
  }
  v
}

option_nonnegative <- function(group, name, what, who, index) {
  v <- option_number(group, name, who, index)
  if (v < 0) invalid_option(who, index, what, name, v, paste(name, ">= 0"))
  v
}

option_flag <- function(group, name, who, index) {
  v <- group[[name]]
  if (!is.logical(v) || length(v) != 1 || is.na(v)) {
    value_error(who, ": param group ", index, ": ", name, " must be TRUE or FALSE")
  }
  v
}
