# optim_rprop, stepped in R (Note [Optimizers stepped in R] in optim-r-base.R).

OptimRprop <- R6::R6Class(
  "optim_rprop",
  inherit = OptimizerR,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_rprop",
    state_names = c("step", "prev", "step_size"),
    param_shaped = c("prev", "step_size"),
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      etas <- option_pair(group, "etas", who, index)
      if (etas[[1]] < 0 || etas[[1]] > 1 || etas[[2]] < 1) {
        invalid_option(who, index, "eta values", "etas", paste(etas, collapse = ", "),
                       "0 <= etaminus <= 1 <= etaplus")
      }
      option_pair(group, "step_sizes", who, index)
    },
    update = function(group, param, grad, state) {
      if (is.null(state)) {
        state <- list(step = 0, prev = torch_zeros_like(param),
                      step_size = torch_full_like(param, group$lr))
      }
      etaminus <- group$etas[[1]]
      etaplus <- group$etas[[2]]
      state$step <- state$step + 1
      # In PyTorch's order, so that an eta of 0 or 1 maps as it does there.
      sign <- grad$mul(state$prev)$sign()
      sign$masked_fill_(sign$gt(0), etaplus)
      sign$masked_fill_(sign$lt(0), etaminus)
      sign$masked_fill_(sign$eq(0), 1)
      state$step_size$mul_(sign)$clamp_(group$step_sizes[[1]], group$step_sizes[[2]])
      # After a sign change the step is skipped, and the next step sees no previous gradient.
      grad <- grad$clone()
      grad$masked_fill_(sign$eq(etaminus), 0)
      param$add_(grad$sign()$mul(state$step_size), alpha = -1)
      state$prev$copy_(grad)
      state
    }
  )
)

#' @export
optim_rprop <- function(params, lr = 1e-2, etas = c(0.5, 1.2), step_sizes = c(1e-6, 50)) {
  OptimRprop$new(params, defaults = list(lr = lr, etas = etas, step_sizes = step_sizes))
}
