# distr_bernoulli(): draws of 1 with probability probs and 0 otherwise, parameterised by probs or
# by logits (the log-odds), not both. Not reparameterisable: rsample() is an error.

Bernoulli <- R6::R6Class(
  "torch_Bernoulli",
  inherit = Distribution,
  lock_objects = FALSE,
  public = list(
    .arg_constraints = list(probs = constraint_unit_interval, logits = constraint_real),
    .support = constraint_boolean,
    has_enumerate_support = TRUE,
    initialize = function(probs = NULL, logits = NULL, validate_args = NULL) {
      fn <- private$.fn
      if (is.null(probs) == is.null(logits)) {
        value_error(fn, ": either probs or logits must be given, but not both")
      }
      if (!is.null(probs)) {
        private$.probs <- distr_broadcast(list(probs = probs), fn)[[1]]
      } else {
        private$.logits <- distr_broadcast(list(logits = logits), fn)[[1]]
      }
      param <- self$.param
      super$initialize(param$shape, validate_args = validate_args,
                       params = list(probs = private$.probs, logits = private$.logits))
    },
    expand = function(batch_shape, .instance = NULL) {
      batch_shape <- as.integer(batch_shape)
      new <- if (!is.null(private$.probs)) {
        Bernoulli$new(probs = private$.probs$expand(batch_shape), validate_args = FALSE)
      } else {
        Bernoulli$new(logits = private$.logits$expand(batch_shape), validate_args = FALSE)
      }
      self$.expanded(new)
    },
    sample = function(sample_shape = NULL) {
      shape <- self$.extended_shape(sample_shape)
      with_no_grad(torch_bernoulli(self$probs$expand(shape)))
    },
    log_prob = function(value) {
      value <- self$.as_value(value, self$.param)
      if (self$.validate_args) self$.validate_sample(value)
      # log p^v (1 - p)^(1 - v): from probs where they were given (exact at 0 and 1), else as
      # v * logits - log(1 + exp(logits)), stable for any logits.
      if (!is.null(private$.probs)) {
        p <- private$.probs
        return(torch_xlogy(value, p) + torch_xlogy(1 - value, 1 - p))
      }
      value * private$.logits - nnf_softplus(private$.logits)
    },
    entropy = function() {
      if (!is.null(private$.probs)) {
        p <- private$.probs
        return(-(torch_xlogy(p, p) + torch_xlogy(1 - p, 1 - p)))
      }
      nnf_softplus(self$logits) - self$probs * self$logits
    },
    .shown_params = function() if (is.null(private$.probs)) "logits" else "probs",
    enumerate_support = function(expand = TRUE) {
      param <- self$.param
      values <- torch_tensor(c(0, 1), dtype = param$dtype, device = param$device)
      values <- values$view(c(-1, rep(1L, length(self$batch_shape))))
      if (expand) values <- values$expand(c(-1L, self$batch_shape))
      values
    }
  ),
  active = list(
    probs = function() {
      if (is.null(private$.probs)) private$.probs <- logits_to_probs(private$.logits, TRUE)
      private$.probs
    },
    logits = function() {
      if (is.null(private$.logits)) private$.logits <- probs_to_logits(private$.probs, TRUE)
      private$.logits
    },
    .param = function() if (is.null(private$.probs)) private$.logits else private$.probs,
    param_shape = function() self$.param$shape,
    mean = function() self$probs,
    variance = function() self$probs * (1 - self$probs)
  ),
  private = list(.fn = "distr_bernoulli", .probs = NULL, .logits = NULL)
)

# Documented in man/distributions.Rd.
#' @export
distr_bernoulli <- function(probs = NULL, logits = NULL, validate_args = NULL) {
  Bernoulli$new(probs, logits, validate_args)
}
