# Likelihood losses (nnf_poisson_nll_loss, nnf_gaussian_nll_loss and their modules), composed
# from tensor ops, so they record autograd and run on every device. nnf_gaussian_nll_loss is
# PyTorch's (torch for R 0.17 lacks it). Helpers (loss_reduce, ...) are in nn-loss-margin.R.

#' @export
nnf_poisson_nll_loss <- function(input, target, log_input = TRUE, full = FALSE,
                                 eps = 1e-8, reduction = "mean") {
  fn <- "nnf_poisson_nll_loss"
  reduction <- reduction_arg(fn, reduction)
  input <- extra_tensor(input, fn, "input")
  target <- extra_tensor(target, fn, "target")
  log_input <- extra_flag(log_input, fn, "log_input")
  full <- extra_flag(full, fn, "full")
  eps <- number_arg(eps, fn, "eps")
  loss_check_broadcast(fn, list(input = input$shape, target = target$shape))
  loss <- if (log_input) input$exp() - target * input else input - target * (input + eps)$log()
  if (full) {
    # Stirling's approximation of log(target!), which ATen counts only for targets above 1.
    stirling <- target * target$log() - target + 0.5 * (2 * pi * target)$log()
    loss <- loss + torch_where(target > 1, stirling, 0)
  }
  loss_reduce(loss, reduction)
}

# PyTorch's F.gaussian_nll_loss. var is input's shape, or one dim short of it, or 1 in the last
# dim (one variance per row), or a number.
#' @export
nnf_gaussian_nll_loss <- function(input, target, var, full = FALSE, eps = 1e-6, reduction = "mean") {
  fn <- "nnf_gaussian_nll_loss"
  reduction <- reduction_arg(fn, reduction)
  input <- extra_tensor(input, fn, "input")
  target <- extra_tensor(target, fn, "target")
  full <- extra_flag(full, fn, "full")
  eps <- number_arg(eps, fn, "eps")
  if (is.numeric(var) && length(var) == 1 && !is_torch_tensor(var)) var <- torch_full_like(input, var)
  var <- extra_tensor(var, fn, "var")
  shape <- input$shape
  if (!identical(var$shape, shape)) {
    row_shape <- shape[-length(shape)]
    if (length(shape) >= 1 && identical(var$shape, row_shape)) {
      var <- var$unsqueeze(-1)
    } else if (!(length(shape) >= 1 && var$dim() == length(shape) &&
                   identical(var$shape[-length(shape)], row_shape) && var$size(-1) == 1)) {
      value_error(fn, ": var must have input's shape ", loss_shape_text(shape), ", or that without its ",
                  "last dim, or 1 as its last dim; got ", loss_shape_text(var$shape))
    }
  }
  loss_check_broadcast(fn, list(input = shape, target = target$shape))
  if (var$numel() > 0 && (var < 0)$any()$item()) value_error(fn, ": var has negative entries")
  # As PyTorch, clamped outside autograd: the gradient reaches var as if it were not clamped.
  var <- var$clone()
  with_no_grad(var$clamp_(min = eps))
  loss <- 0.5 * (var$log() + (input - target)^2 / var)
  if (full) loss <- loss + 0.5 * log(2 * pi)
  loss_reduce(loss, reduction)
}

#' @export
nn_poisson_nll_loss <- nn_module(
  "nn_poisson_nll_loss",
  inherit = nn_loss,
  initialize = function(log_input = TRUE, full = FALSE, eps = 1e-8, reduction = "mean") {
    super$initialize(reduction)
    self$log_input <- log_input
    self$full <- full
    self$eps <- eps
  },
  forward = function(input, target) {
    nnf_poisson_nll_loss(input, target, self$log_input, self$full, self$eps, self$reduction)
  }
)

#' @export
nn_gaussian_nll_loss <- nn_module(
  "nn_gaussian_nll_loss",
  inherit = nn_loss,
  initialize = function(full = FALSE, eps = 1e-6, reduction = "mean") {
    super$initialize(reduction)
    self$full <- full
    self$eps <- eps
  },
  forward = function(input, target, var) {
    nnf_gaussian_nll_loss(input, target, var, self$full, self$eps, self$reduction)
  }
)
