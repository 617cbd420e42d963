# The base of the optimizers that step in R (optim-adadelta.R, optim-asgd.R, optim-rprop.R,
# optim-lbfgs.R): OptimizerR and the checks and state copies they share.
#
# Note [Optimizers stepped in R]
# rcuda's own optimizers (optim.R) run one fused engine call per step. These four are used too
# seldom to earn engine code: each steps in R, parameter by parameter, with in-place tensor ops
# under no-grad mode, as torch for R does. They share the engine optimizers' R face (the
# torch_optimizer class, param_groups with its checks, state_dict()'s layout), so schedulers,
# zero_grad() and load_state_dict() work the same on both; only their state lives in R.
# cuda_amp_grad_scaler() steps engine optimizers only.

OptimizerR <- R6::R6Class(
  NULL,
  inherit = Optimizer,
  lock_objects = FALSE,
  cloneable = FALSE,
  public = list(
    initialize = function(params, defaults) {
      self$defaults <- defaults
      groups <- param_groups_from(params, private$who)
      groups <- lapply(seq_along(groups), function(i) private$complete(groups[[i]], i))
      check_r_params(groups, private$who)
      private$groups <- groups
      private$state <- list()
      refuse_clone(self, private$who)
    },
    # Runs the closure with grad mode on, then updates every parameter that has a gradient.
    step = function(closure = NULL) {
      local_no_grad()
      loss <- if (!is.null(closure)) with_enable_grad(closure())
      k <- 0L
      for (group in private$groups) {
        for (param in group$params) {
          k <- k + 1L
          grad <- param$grad
          if (is_undefined_tensor(grad)) next
          private$state[[k]] <- private$update(group, param, grad, private$state_of(k))
        }
      }
      if (is.null(closure)) invisible(NULL) else loss
    },
    zero_grad = function(set_to_none = FALSE) {
      for (p in all_params(private$groups)) {
        if (is_undefined_tensor(p$grad)) next
        if (isTRUE(set_to_none)) p$grad <- NULL else p$grad$zero_()
      }
      invisible(self)
    },
    # As the engine optimizers' (optim.R): params as 1-based numbers, state named by them.
    state_dict = function() {
      groups <- private$numbered_groups()
      has <- which(!vapply(private$state, is.null, logical(1)))
      state <- private$state[has]
      names(state) <- as.character(has)
      list(param_groups = groups, state = state)
    },
    # Copies the state's tensors to each parameter's device and dtype; nothing changes when
    # the dict does not fit.
    load_state_dict = function(state_dict) {
      who <- paste0(private$who, "$load_state_dict")
      groups <- private$groups_from_state_dict(state_dict, who)
      params <- all_params(groups)
      state <- list()
      for (key in names(state_dict$state)) {
        k <- suppressWarnings(as.integer(key))
        if (is.na(k) || k < 1 || k > length(params)) {
          value_error(who, ": state '", key, "' names no parameter (1 to ", length(params), ")")
        }
        state[[k]] <- private$load_state(state_dict$state[[key]], params[[k]], who)
      }
      private$groups <- groups
      private$state <- state
      invisible(self)
    }
  ),
  private = list(
    state = NULL,
    # A new group's parameters must be new to the optimizer (check_r_params).
    add_group = function(group) {
      groups <- c(private$groups, list(group))
      check_r_params(groups, private$who)
      private$groups <- groups
    },
    # Groups may change their options, not their parameters: the state is kept per parameter.
    set_groups = function(groups) {
      for (i in seq_along(groups)) {
        mine <- private$groups[[i]]$params
        same <- length(groups[[i]]$params) == length(mine) &&
          all(vapply(seq_along(mine), function(j) identical(groups[[i]]$params[[j]], mine[[j]]),
                     logical(1)))
        if (!same) {
          value_error(private$who, ": the params of param group ", i, " differ from the ",
                      "optimizer's; param_groups may change options only (use ",
                      "add_param_group() for new parameters)")
        }
      }
      private$groups <- groups
    },
    # The names of a parameter's state; those in param_shaped are tensors shaped as it.
    state_names = character(),
    param_shaped = character(),
    state_of = function(k) if (k <= length(private$state)) private$state[[k]],
    update = function(group, param, grad, state) NULL,
    load_state = function(entry, param, who) {
      unknown <- setdiff(names(entry), private$state_names)
      if (length(unknown) > 0) value_error(who, ": unknown state '", unknown[[1]], "'")
      for (name in intersect(names(entry), private$param_shaped)) {
        if (!is_torch_tensor(entry[[name]]) || !identical(entry[[name]]$shape, param$shape)) {
          shape_error(who, ": state '", name, "' must be a tensor of the parameter's shape (",
                      paste(param$shape, collapse = ", "), ")")
        }
      }
      copy_state(entry, param)
    }
  )
)

# A copy of the state's tensors (also inside lists: LBFGS's history) in the parameter's
# dtype and on its device, so that the loaded optimizer shares nothing with the dict.
copy_state <- function(x, param) {
  if (is_torch_tensor(x)) return(x$to(dtype = param$dtype, device = param$device, copy = TRUE))
  if (is.list(x)) return(lapply(x, copy_state, param = param))
  x
}

all_params <- function(groups) unlist(lapply(groups, `[[`, "params"), recursive = FALSE)

check_r_params <- function(groups, who) {
  params <- all_params(groups)
  for (i in seq_along(params)) {
    if (!is_torch_tensor(params[[i]])) {
      value_error(who, ": params must be tensors, parameter ", i, " is a ",
                  class(params[[i]])[[1]])
    }
    for (j in seq_len(i - 1)) {
      if (identical(params[[i]], params[[j]])) {
        value_error(who, ": parameter ", i, " is also parameter ", j,
                    "; a parameter may appear only once in an optimizer")
      }
    }
  }
}

option_pair <- function(group, name, who, index) {
  v <- group[[name]]
  if (!is.numeric(v) || length(v) != 2 || anyNA(v)) {
    value_error(who, ": param group ", index, ": ", name, " must be two numbers, got ",
                if (is.null(v)) "nothing" else paste(format(v), collapse = " "))
  }
  v
}
