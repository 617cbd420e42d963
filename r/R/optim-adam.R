# Adam and AdamW, as torch for R's optim_adam and optim_adamw (torch.optim.Adam's and AdamW's
# updates): the steps are rcuda::optim::Adam's and AdamW's.

check_adam_group <- function(group, index, who) {
  option_nonnegative(group, "lr", "learning rate", who, index)
  option_nonnegative(group, "eps", "epsilon value", who, index)
  betas <- group$betas
  if (!is.numeric(betas) || length(betas) != 2 || anyNA(betas)) {
    value_error(who, ": param group ", index, ": betas must be two numbers, got ",
                if (is.null(betas)) "nothing" else paste(format(betas), collapse = " "))
  }
  for (k in 1:2) {
    if (betas[[k]] < 0 || betas[[k]] >= 1) {
      invalid_option(who, index, paste("beta parameter at index", k), paste0("betas[", k, "]"),
                     betas[[k]], paste0("0 <= betas[", k, "] < 1"))
    }
  }
  option_nonnegative(group, "weight_decay", "weight_decay value", who, index)
  option_flag(group, "amsgrad", who, index)
}

OptimAdam <- R6::R6Class(
  "optim_adam",
  inherit = Optimizer,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_adam",
    check_group = function(group, index) check_adam_group(group, index, private$who)
  )
)

OptimAdamW <- R6::R6Class(
  "optim_adamw",
  inherit = Optimizer,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_adamw",
    check_group = function(group, index) check_adam_group(group, index, private$who)
  )
)

#' @export
optim_adam <- function(params, lr = 1e-3, betas = c(0.9, 0.999), eps = 1e-8, weight_decay = 0,
                       amsgrad = FALSE) {
  OptimAdam$new(params, defaults = list(
    lr = lr, betas = betas, eps = eps, weight_decay = weight_decay, amsgrad = amsgrad
  ))
}

#' @export
optim_adamw <- function(params, lr = 1e-3, betas = c(0.9, 0.999), eps = 1e-8,
                        weight_decay = 1e-2, amsgrad = FALSE) {
  OptimAdamW$new(params, defaults = list(
    lr = lr, betas = betas, eps = eps, weight_decay = weight_decay, amsgrad = amsgrad
  ))
}
