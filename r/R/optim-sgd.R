# Stochastic gradient descent, as torch for R's optim_sgd (torch.optim.SGD's update): the step
# is rcuda::optim::SGD's.

OptimSGD <- R6::R6Class(
  "optim_sgd",
  inherit = Optimizer,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_sgd",
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      momentum <- option_nonnegative(group, "momentum", "momentum value", who, index)
      dampening <- option_number(group, "dampening", who, index)
      option_nonnegative(group, "weight_decay", "weight_decay value", who, index)
      if (option_flag(group, "nesterov", who, index) && (momentum <= 0 || dampening != 0)) {
        value_error(who, ": Nesterov momentum requires a momentum > 0 and zero dampening ",
                    "(param group ", index, " has momentum = ", momentum, ", dampening = ",
                    dampening, ")")
      }
    }
  )
)

#' @export
optim_sgd <- function(params, lr = optim_required(), momentum = 0, dampening = 0,
                      weight_decay = 0, nesterov = FALSE) {
  OptimSGD$new(params, defaults = list(
    lr = lr, momentum = momentum, dampening = dampening, weight_decay = weight_decay,
    nesterov = nesterov
  ))
}
