# RMSprop, as torch for R's optim_rmsprop (torch.optim.RMSprop's update): the step is
# rcuda::optim::RMSprop's.

OptimRMSprop <- R6::R6Class(
  "optim_rmsprop",
  inherit = Optimizer,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_rmsprop",
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      option_nonnegative(group, "alpha", "alpha value", who, index)
      option_nonnegative(group, "eps", "epsilon value", who, index)
      option_nonnegative(group, "weight_decay", "weight_decay value", who, index)
      option_nonnegative(group, "momentum", "momentum value", who, index)
      option_flag(group, "centered", who, index)
    }
  )
)

#' @export
optim_rmsprop <- function(params, lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0,
                          momentum = 0, centered = FALSE) {
  OptimRMSprop$new(params, defaults = list(
    lr = lr, alpha = alpha, eps = eps, weight_decay = weight_decay, momentum = momentum,
    centered = centered
  ))
}
