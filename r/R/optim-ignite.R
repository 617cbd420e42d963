# torch for R's optim_ignite_* optimizers (its "ignite" optimizers, stepped in LibTorch's C++
# rather than in R): rcuda's optimizers already take each step as one fused engine call, so these
# are rcuda's optim_adam, optim_adamw, optim_sgd, optim_rmsprop and optim_adagrad (the same
# updates and option checks) under torch's names, with the ignite classes' state layout and
# load_state_dict() checks.
#
# Note [Ignite state layout]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch's ignite optimizers give every parameter that has state each entry of a fixed set
# (adam: exp_avg, exp_avg_sq, max_exp_avg_sq, step); an entry that the group's options do not
# use (max_exp_avg_sq without amsgrad, momentum_buffer without momentum) holds LibTorch's
# undefined tensor. rcuda has no undefined tensor and its engine keeps only the entries in use,
# so state_dict() fills the unused entries with an empty float tensor and load_state_dict()
# drops the entries that the options do not use before the engine sees the state. A state dict
# of rcuda's optim_adam therefore loads into optim_ignite_adam and back.

# The state entries each optimizer's state dict has (torch for R's `.state_names`), and those
# that a group's options leave unused.
ignite_layouts <- list(
  optim_ignite_adam = list(
    names = c("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"),
    unused = function(group) if (!isTRUE(group$amsgrad)) "max_exp_avg_sq"
  ),
  optim_ignite_adamw = list(
    names = c("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"),
    unused = function(group) if (!isTRUE(group$amsgrad)) "max_exp_avg_sq"
  ),
  optim_ignite_sgd = list(
    names = "momentum_buffer",
    unused = function(group) if (identical(as.numeric(group$momentum), 0)) "momentum_buffer"
  ),
  optim_ignite_rmsprop = list(
    names = c("grad_avg", "square_avg", "momentum_buffer", "step"),
    unused = function(group) {
      c(if (!isTRUE(group$centered)) "grad_avg", if (identical(as.numeric(group$momentum), 0)) "momentum_buffer")
    }
  ),
  optim_ignite_adagrad = list(names = c("sum", "step"), unused = function(group) NULL)
)

# An rcuda optimizer class (OptimAdam, ...) with the ignite layout: Note [Ignite state layout].
ignite_class <- function(classname, parent, engine) {
  layout <- ignite_layouts[[classname]]
  R6::R6Class(
    classname,
    inherit = parent,
    lock_objects = FALSE,
    cloneable = FALSE,
    public = list(
      initialize = function(params, defaults) {
        if (is.list(params) && length(params) == 0) {
          value_error(classname, ": the `params` must have length > 0 (a tensor, a list of tensors or ",
                      "a list of param groups)")
        }
        super$initialize(params, defaults)
      },
      state_dict = function() {
        dict <- super$state_dict()
        dict$state <- structure(
          lapply(names(dict$state), function(id) {
            state <- dict$state[[id]]
            for (name in setdiff(layout$names, names(state))) state[[name]] <- torch_empty(0)
            state[intersect(layout$names, names(state))]
          }),
          names = as.character(names(dict$state))  # character(0) too, as torch's
        )
        dict
      },
      # torch for R's checks and messages (OptimizerIgnite$load_state_dict), then rcuda's load.
      load_state_dict = function(state_dict) {
        who <- paste0(classname, "$load_state_dict")
        if (!is.list(state_dict) || !all(c("param_groups", "state") %in% names(state_dict))) {
          value_error(who, ": the `state_dict` must be a list with elements 'param_groups' and 'state'")
        }
        states <- state_dict$state
        previous <- self$state_dict()$state
        missing <- setdiff(names(previous), names(states))
        if (length(missing)) {
          value_error(who, ": To-be loaded state dict is missing states for parameters ",
                      paste(missing, collapse = ", "), ".")
        }
        for (id in names(previous)) {
          if (!setequal(names(states[[id]]), names(previous[[id]]))) {
            value_error(who, ": The ", id, "-th state has elements with names ",
                        paste(names(previous[[id]]), collapse = ", "), " but got ",
                        paste(names(states[[id]]), collapse = ", "), ".")
          }
        }
        required <- c("params", names(self$defaults))
        for (group in state_dict$param_groups) {
          if (!all(required %in% names(group))) {
            value_error(who, ": Parameter groups must include names '", paste(required, collapse = ", "),
                        "' but only included '", paste(names(group), collapse = ", "), "'.")
          }
        }
        # The entries the options leave unused are the placeholders state_dict() added.
        group_of <- private$group_of_parameter(state_dict$param_groups)
        state_dict$state <- structure(
          lapply(names(states), function(id) {
            group <- state_dict$param_groups[[group_of[[as.integer(id)]]]]
            states[[id]][setdiff(names(states[[id]]), layout$unused(group))]
          }),
          names = names(states)
        )
        super$load_state_dict(state_dict)
      }
    ),
    private = list(
      who = classname,
      engine = engine,
      # For parameter number i (counting through the groups), the number of its group.
      group_of_parameter = function(groups = private$groups) {
        rep(seq_along(groups), vapply(groups, function(g) length(g$params), integer(1)))
      }
    )
  )
}

OptimIgniteAdam <- ignite_class("optim_ignite_adam", OptimAdam, "optim_adam")
OptimIgniteAdamW <- ignite_class("optim_ignite_adamw", OptimAdamW, "optim_adamw")
OptimIgniteSGD <- ignite_class("optim_ignite_sgd", OptimSGD, "optim_sgd")
OptimIgniteRMSprop <- ignite_class("optim_ignite_rmsprop", OptimRMSprop, "optim_rmsprop")
OptimIgniteAdagrad <- ignite_class("optim_ignite_adagrad", OptimAdagrad, "optim_adagrad")

#' @export
optim_ignite_adam <- function(params, lr = 1e-3, betas = c(0.9, 0.999), eps = 1e-8, weight_decay = 0,
                              amsgrad = FALSE) {
  OptimIgniteAdam$new(params, defaults = list(
    lr = lr, betas = betas, eps = eps, weight_decay = weight_decay, amsgrad = amsgrad
  ))
}

#' @export
optim_ignite_adamw <- function(params, lr = 1e-3, betas = c(0.9, 0.999), eps = 1e-8,
                               weight_decay = 1e-2, amsgrad = FALSE) {
  OptimIgniteAdamW$new(params, defaults = list(
    lr = lr, betas = betas, eps = eps, weight_decay = weight_decay, amsgrad = amsgrad
  ))
}

#' @export
optim_ignite_sgd <- function(params, lr = optim_required(), momentum = 0, dampening = 0,
                             weight_decay = 0, nesterov = FALSE) {
  OptimIgniteSGD$new(params, defaults = list(
    lr = lr, momentum = momentum, dampening = dampening, weight_decay = weight_decay,
    nesterov = nesterov
  ))
}

#' @export
optim_ignite_rmsprop <- function(params, lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0,
                                 momentum = 0, centered = FALSE) {
  OptimIgniteRMSprop$new(params, defaults = list(
    lr = lr, alpha = alpha, eps = eps, weight_decay = weight_decay, momentum = momentum,
    centered = centered
  ))
}

#' @export
optim_ignite_adagrad <- function(params, lr = 1e-2, lr_decay = 0, weight_decay = 0,
                                 initial_accumulator_value = 0, eps = 1e-10) {
  OptimIgniteAdagrad$new(params, defaults = list(
    lr = lr, lr_decay = lr_decay, weight_decay = weight_decay,
    initial_accumulator_value = initial_accumulator_value, eps = eps
  ))
}
