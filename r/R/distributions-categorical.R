# distr_categorical(): one of K categories, with probabilities along the last dim of probs (or
# logits, unnormalised log-probabilities). Categories are 1-based, as torch for R's (its
# torch_multinomial() and gather() count from 1): samples are int64 in 1..K.

Categorical <- R6::R6Class(
  "torch_Categorical",
  inherit = Distribution,
  lock_objects = FALSE,
  public = list(
    .arg_constraints = list(probs = constraint_simplex, logits = constraint_real_vector),
    has_enumerate_support = TRUE,
    initialize = function(probs = NULL, logits = NULL, validate_args = NULL) {
      fn <- private$.fn
      if (is.null(probs) == is.null(logits)) {
        value_error(fn, ": either probs or logits must be given, but not both")
      }
      given <- if (is.null(probs)) "logits" else "probs"
      param <- distr_param(if (is.null(probs)) logits else probs, fn, given)
      if (param$dim() < 1) {
        value_error(fn, ": ", given, " must be at least one-dimensional, got a 0-dim tensor")
      }
      if (param$size(-1) < 1) value_error(fn, ": ", given, " must have at least one category")
      if (!is.null(probs)) {
        private$.probs <- param / param$sum(dim = -1, keepdim = TRUE)
      } else {
        private$.logits <- param - param$logsumexp(dim = -1, keepdim = TRUE)
      }
      private$.n_categories <- param$size(-1)
      super$initialize(utils::head(param$shape, -1), validate_args = validate_args,
                       params = list(probs = private$.probs, logits = private$.logits))
    },
    expand = function(batch_shape, .instance = NULL) {
      shape <- c(as.integer(batch_shape), private$.n_categories)
      new <- if (!is.null(private$.probs)) {
        Categorical$new(probs = private$.probs$expand(shape), validate_args = FALSE)
      } else {
        Categorical$new(logits = private$.logits$expand(shape), validate_args = FALSE)
      }
      self$.expanded(new)
    },
    sample = function(sample_shape = NULL) {
      shape <- self$.extended_shape(sample_shape)
      n <- prod(distr_sample_shape(sample_shape, private$.fn))
      device <- self$.param$device
      if (n == 0 || prod(self$batch_shape) == 0) {
        return(torch_empty(shape, dtype = torch_long(), device = device))
      }
      with_no_grad({
        probs_2d <- self$probs$reshape(c(-1L, private$.n_categories))
        draws <- torch_multinomial(probs_2d, n, replacement = TRUE)$t()
        draws$reshape(shape)
      })
    },
    log_prob = function(value) {
      value <- self$.as_value(value, self$.param)
      if (self$.validate_args) self$.validate_sample(value)
      index <- value$to(dtype = torch_long())$unsqueeze(-1)
      pair <- torch_broadcast_tensors(list(index, self$logits))
      index <- pair[[1]]$narrow(-1, 1, 1)
      pair[[2]]$gather(-1, index)$squeeze(-1)
    },
    entropy = function() {
      logits <- self$logits$clamp(min = torch_finfo(self$logits$dtype)$min)
      -(logits * self$probs)$sum(dim = -1)
    },
    .shown_params = function() if (is.null(private$.probs)) "logits" else "probs",
    enumerate_support = function(expand = TRUE) {
      n_batch <- length(self$batch_shape)
      values <- torch_arange(1, private$.n_categories, dtype = torch_long(),
                             device = self$.param$device)
      values <- values$view(c(-1L, rep(1L, n_batch)))
      if (expand) values <- values$expand(c(-1L, self$batch_shape))
      values
    }
  ),
  active = list(
    support = function() .IntegerInterval$new(1, private$.n_categories),
    probs = function() {
      if (is.null(private$.probs)) private$.probs <- logits_to_probs(private$.logits)
      private$.probs
    },
    logits = function() {
      if (is.null(private$.logits)) private$.logits <- probs_to_logits(private$.probs)
      private$.logits
    },
    .param = function() if (is.null(private$.probs)) private$.logits else private$.probs,
    param_shape = function() self$.param$shape,
    .num_events = function() private$.n_categories,
    # As torch's: a category has no mean or variance.
    mean = function() {
      torch_full(self$.extended_shape(), NaN, dtype = self$.param$dtype,
                 device = self$.param$device)
    },
    variance = function() {
      torch_full(self$.extended_shape(), NaN, dtype = self$.param$dtype,
                 device = self$.param$device)
    }
  ),
  private = list(.fn = "distr_categorical", .probs = NULL, .logits = NULL,
                 .n_categories = NULL)
)

# Documented in man/distributions.Rd.
#' @export
distr_categorical <- function(probs = NULL, logits = NULL, validate_args = NULL) {
  Categorical$new(probs, logits, validate_args = validate_args)
}
