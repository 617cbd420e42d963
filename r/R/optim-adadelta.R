# optim_adadelta, stepped in R (Note [Optimizers stepped in R] in optim-r-base.R).

OptimAdadelta <- R6::R6Class(
  "optim_adadelta",
  inherit = OptimizerR,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_adadelta",
    state_names = c("step", "square_avg", "acc_delta"),
    param_shaped = c("square_avg", "acc_delta"),
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      rho <- option_number(group, "rho", who, index)
      if (rho < 0 || rho > 1) invalid_option(who, index, "rho value", "rho", rho, "0 <= rho <= 1")
      option_nonnegative(group, "eps", "epsilon value", who, index)
      option_nonnegative(group, "weight_decay", "weight_decay value", who, index)
    },
    update = function(group, param, grad, state) {
      if (is.null(state)) {
        state <- list(step = 0, square_avg = torch_zeros_like(param),
                      acc_delta = torch_zeros_like(param))
      }
      rho <- group$rho
      eps <- group$eps
      state$step <- state$step + 1
      if (group$weight_decay != 0) grad <- grad$add(param, alpha = group$weight_decay)
      state$square_avg$mul_(rho)$add_(grad * grad, alpha = 1 - rho)
      std <- state$square_avg$add(eps)$sqrt()
      delta <- state$acc_delta$add(eps)$sqrt()$div(std)$mul(grad)
      param$add_(delta, alpha = -group$lr)
      state$acc_delta$mul_(rho)$add_(delta * delta, alpha = 1 - rho)
      state
    }
  )
)

#' @export
optim_adadelta <- function(params, lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0) {
  OptimAdadelta$new(params, defaults = list(lr = lr, rho = rho, eps = eps,
                                            weight_decay = weight_decay))
}
