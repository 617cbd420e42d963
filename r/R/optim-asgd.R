# optim_asgd, stepped in R (Note [Optimizers stepped in R] in optim-r-base.R).

OptimASGD <- R6::R6Class(
  "optim_asgd",
  inherit = OptimizerR,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_asgd",
    state_names = c("step", "eta", "mu", "ax"),
    param_shaped = "ax",
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      option_number(group, "lambda", who, index)
      option_number(group, "alpha", who, index)
      option_number(group, "t0", who, index)
      option_nonnegative(group, "weight_decay", "weight_decay value", who, index)
    },
    # PyTorch's ASGD: the average ax follows the parameter from step t0 on. (torch for R's
    # averaging adds to the number mu where PyTorch adds to ax, and fails once step > t0.)
    update = function(group, param, grad, state) {
      if (is.null(state)) {
        state <- list(step = 0, eta = group$lr, mu = 1, ax = torch_zeros_like(param))
      }
      state$step <- state$step + 1
      if (group$weight_decay != 0) grad <- grad$add(param, alpha = group$weight_decay)
      param$mul_(1 - group$lambda * state$eta)
      param$add_(grad, alpha = -state$eta)
      if (state$mu != 1) {
        state$ax$add_(param$sub(state$ax)$mul(state$mu))
      } else {
        state$ax$copy_(param)
      }
      state$eta <- group$lr / (1 + group$lambda * group$lr * state$step)^group$alpha
      state$mu <- 1 / max(1, state$step - group$t0)
      state
    }
  )
)

#' @export
optim_asgd <- function(params, lr = 1e-2, lambda = 1e-4, alpha = 0.75, t0 = 1e6,
                       weight_decay = 0) {
  OptimASGD$new(params, defaults = list(lr = lr, lambda = lambda, alpha = alpha, t0 = t0,
                                        weight_decay = weight_decay))
}
