# Adagrad, as torch for R's optim_adagrad (torch.optim.Adagrad's update): the step is
# rcuda::optim::Adagrad's. A parameter's accumulator `sum` starts at initial_accumulator_value
# at its first update, where torch for R creates it in the constructor: the values agree.

OptimAdagrad <- R6::R6Class(
  "optim_adagrad",
  inherit = Optimizer,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_adagrad",
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      option_nonnegative(group, "lr_decay", "lr_decay value", who, index)
      option_nonnegative(group, "weight_decay", "weight_decay value", who, index)
      option_nonnegative(group, "initial_accumulator_value", "initial_accumulator_value value",
                         who, index)
      option_nonnegative(group, "eps", "epsilon value", who, index)
    }
  )
)

#' @export
optim_adagrad <- function(params, lr = 1e-2, lr_decay = 0, weight_decay = 0,
                          initial_accumulator_value = 0, eps = 1e-10) {
  OptimAdagrad$new(params, defaults = list(
    lr = lr, lr_decay = lr_decay, weight_decay = weight_decay,
    initial_accumulator_value = initial_accumulator_value, eps = eps
  ))
}
