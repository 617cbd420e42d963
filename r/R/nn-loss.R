# Loss functions (nnf_*) and their modules (nn_*_loss), each one call into rcuda::nn. Class
# targets, and ignore_index, are 1-based as in torch for R (Note [1-based classes and indices]
# in src/nn.cpp). reduction is "mean", "sum" or "none"; a vector of them, as in torch for R's
# defaults, means its first.

reduction_arg <- function(fn, reduction, choices = c("mean", "sum", "none")) {
  if (!is.character(reduction) || length(reduction) < 1) {
    value_error(fn, ": reduction must be one of ", paste0("\"", choices, "\"", collapse = ", "),
                ", got ", deparse(reduction)[1])
  }
  if (!reduction[1] %in% choices) {
    value_error(fn, ": reduction must be one of ", paste0("\"", choices, "\"", collapse = ", "),
                ", got \"", reduction[1], "\"")
  }
  reduction[1]
}

# ---- functions --------------------------------------------------------------------------------

# Regression losses broadcast input against target, so a [N, 1] prediction against a [N] target
# compares every prediction with every target: torch warns, and so does rcuda.
warn_target_size <- function(fn, input, target) {
  if (!is_torch_tensor(input) || !is_torch_tensor(target)) return(invisible())
  a <- .Call(rc_shape, input)
  b <- .Call(rc_shape, target)
  if (!identical(a, b)) {
    # torch's wording ("Using a target size ... that is different to the input size"), which
    # scripts and tests match.
    warning(fn, ": using a target size [", paste(b, collapse = ", "), "] that is different to ",
            "the input size [", paste(a, collapse = ", "), "]; broadcasting will likely give ",
            "wrong results (make them the same size)", call. = FALSE)
  }
  invisible()
}

#' @export
nnf_mse_loss <- function(input, target, reduction = "mean") {
  warn_target_size("nnf_mse_loss", input, target)
  .Call(rc_nn_regression_loss, "mse", input, target, reduction_arg("nnf_mse_loss", reduction), 0)
}

#' @export
nnf_l1_loss <- function(input, target, reduction = "mean") {
  warn_target_size("nnf_l1_loss", input, target)
  .Call(rc_nn_regression_loss, "l1", input, target, reduction_arg("nnf_l1_loss", reduction), 0)
}

#' @export
nnf_smooth_l1_loss <- function(input, target, reduction = "mean", beta = 1) {
  warn_target_size("nnf_smooth_l1_loss", input, target)
  .Call(rc_nn_regression_loss, "smooth_l1", input, target, reduction_arg("nnf_smooth_l1_loss", reduction), beta)
}

#' @export
nnf_huber_loss <- function(input, target, reduction = "mean", delta = 1) {
  warn_target_size("nnf_huber_loss", input, target)
  .Call(rc_nn_regression_loss, "huber", input, target, reduction_arg("nnf_huber_loss", reduction), delta)
}

#' @export
nnf_nll_loss <- function(input, target, weight = NULL, ignore_index = -100, reduction = "mean") {
  .Call(rc_nn_nll_loss, input, target, weight, ignore_index, reduction_arg("nnf_nll_loss", reduction))
}

# torch for R's generated form: reduction as torch_reduction_*()'s number, weight = list() for
# none.
#' @export
torch_nll_loss <- function(self, target, weight = list(), reduction = torch_reduction_mean(),
                           ignore_index = -100) {
  modes <- c("none", "mean", "sum")
  if (!is.numeric(reduction) || length(reduction) != 1 || !reduction %in% 0:2) {
    value_error("torch_nll_loss: reduction must be torch_reduction_none(), _mean() or _sum() (0, 1 or 2), got ",
                deparse(reduction, nlines = 1)[1])
  }
  if (is.list(weight) && !length(weight)) weight <- NULL
  nnf_nll_loss(self, target, weight = weight, ignore_index = ignore_index, reduction = modes[reduction + 1])
}

# target: 1-based class indices (an integer tensor), or class probabilities of input's shape (a
# floating tensor).
#' @export
nnf_cross_entropy <- function(input, target, weight = NULL, ignore_index = -100,
                              reduction = c("mean", "sum", "none"), label_smoothing = 0) {
  .Call(rc_nn_cross_entropy, input, target, weight, ignore_index,
        reduction_arg("nnf_cross_entropy", reduction), label_smoothing)
}

#' @export
nnf_binary_cross_entropy <- function(input, target, weight = NULL, reduction = c("mean", "sum", "none")) {
  .Call(rc_nn_bce, input, target, weight, reduction_arg("nnf_binary_cross_entropy", reduction))
}

#' @export
nnf_binary_cross_entropy_with_logits <- function(input, target, weight = NULL,
                                                 reduction = c("mean", "sum", "none"), pos_weight = NULL) {
  .Call(rc_nn_bce_with_logits, input, target, weight,
        reduction_arg("nnf_binary_cross_entropy_with_logits", reduction), pos_weight)
}

#' @export
nnf_kl_div <- function(input, target, reduction = "mean", log_target = FALSE) {
  reduction <- reduction_arg("nnf_kl_div", reduction, c("mean", "sum", "none", "batchmean"))
  if (reduction == "mean") {
    warning("nnf_kl_div: reduction = \"mean\" divides the total loss by both the batch size and ",
            "the support size; \"batchmean\" divides only by the batch size, as KL divergence's ",
            "definition does", call. = FALSE)
  }
  .Call(rc_nn_kl_div, input, target, reduction, log_target)
}

# ---- modules ------------------------------------------------------------------------------------

# Bases, as torch for R's: the reduction, and an optional per-class weight kept as a buffer (so
# it moves with $to() and is saved in the state dict).
nn_loss <- nn_module(
  "nn_loss",
  initialize = function(reduction = "mean") {
    self$reduction <- reduction_arg(paste0("<", module_class(self), ">"), reduction,
                                    c("mean", "sum", "none", "batchmean"))
  }
)

nn_weighted_loss <- nn_module(
  "nn_weighted_loss",
  inherit = nn_loss,
  initialize = function(weight = NULL, reduction = "mean") {
    super$initialize(reduction)
    if (!is.null(weight) && !is_torch_tensor(weight)) weight <- torch_tensor(weight)
    self$register_buffer("weight", weight)
  }
)

#' @export
nn_mse_loss <- nn_module(
  "nn_mse_loss",
  inherit = nn_loss,
  forward = function(input, target) nnf_mse_loss(input, target, self$reduction)
)

#' @export
nn_l1_loss <- nn_module(
  "nn_l1_loss",
  inherit = nn_loss,
  forward = function(input, target) nnf_l1_loss(input, target, self$reduction)
)

#' @export
nn_smooth_l1_loss <- nn_module(
  "nn_smooth_l1_loss",
  inherit = nn_loss,
  initialize = function(reduction = "mean", beta = 1) {
    super$initialize(reduction)
    self$beta <- beta
  },
  forward = function(input, target) nnf_smooth_l1_loss(input, target, self$reduction, self$beta)
)

#' @export
nn_huber_loss <- nn_module(
  "nn_huber_loss",
  inherit = nn_loss,
  initialize = function(reduction = "mean", delta = 1) {
    super$initialize(reduction)
    self$delta <- delta
  },
  forward = function(input, target) nnf_huber_loss(input, target, self$reduction, self$delta)
)

#' @export
nn_nll_loss <- nn_module(
  "nn_nll_loss",
  inherit = nn_weighted_loss,
  initialize = function(weight = NULL, ignore_index = -100, reduction = "mean") {
    super$initialize(weight, reduction)
    self$ignore_index <- ignore_index
  },
  forward = function(input, target) {
    nnf_nll_loss(input, target, self$weight, self$ignore_index, self$reduction)
  }
)

#' @export
nn_cross_entropy_loss <- nn_module(
  "nn_cross_entropy_loss",
  inherit = nn_weighted_loss,
  initialize = function(weight = NULL, ignore_index = -100, reduction = "mean", label_smoothing = 0) {
    super$initialize(weight, reduction)
    self$ignore_index <- ignore_index
    self$label_smoothing <- label_smoothing
  },
  forward = function(input, target) {
    .Call(rc_nn_cross_entropy, input, target, self$weight, self$ignore_index, self$reduction,
          self$label_smoothing)
  }
)

#' @export
nn_bce_loss <- nn_module(
  "nn_bce_loss",
  inherit = nn_weighted_loss,
  forward = function(input, target) nnf_binary_cross_entropy(input, target, self$weight, self$reduction)
)

#' @export
nn_bce_with_logits_loss <- nn_module(
  "nn_bce_with_logits_loss",
  inherit = nn_loss,
  initialize = function(weight = NULL, reduction = "mean", pos_weight = NULL) {
    super$initialize(reduction)
    if (!is.null(weight) && !is_torch_tensor(weight)) weight <- torch_tensor(weight)
    if (!is.null(pos_weight) && !is_torch_tensor(pos_weight)) pos_weight <- torch_tensor(pos_weight)
    self$register_buffer("weight", weight)
    self$register_buffer("pos_weight", pos_weight)
  },
  forward = function(input, target) {
    nnf_binary_cross_entropy_with_logits(input, target, self$weight, self$reduction, self$pos_weight)
  }
)

#' @export
nn_kl_div_loss <- nn_module(
  "nn_kl_div_loss",
  inherit = nn_loss,
  initialize = function(reduction = "mean", log_target = FALSE) {
    super$initialize(reduction)
    self$log_target <- log_target
  },
  forward = function(input, target) nnf_kl_div(input, target, self$reduction, self$log_target)
)
