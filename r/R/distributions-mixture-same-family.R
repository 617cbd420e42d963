# distr_mixture_same_family(): a mixture of K components of one family, chosen by a categorical
# distribution over the rightmost batch dim of the component distribution. Not
# reparameterisable (the choice of component is discrete) and without a closed-form entropy.

MixtureSameFamily <- R6::R6Class(
  "torch_MixtureSameFamily",
  inherit = Distribution,
  lock_objects = FALSE,
  public = list(
    .arg_constraints = list(),
    initialize = function(mixture_distribution, component_distribution,
                          validate_args = NULL) {
      fn <- private$.fn
      if (!inherits(mixture_distribution, "torch_Categorical")) {
        value_error(fn, ": mixture_distribution must be a distr_categorical(), got ",
                    class(mixture_distribution)[1])
      }
      if (!inherits(component_distribution, "torch_Distribution")) {
        value_error(fn, ": component_distribution must be a distribution (distr_*), got ",
                    class(component_distribution)[1])
      }
      component_batch <- component_distribution$batch_shape
      if (length(component_batch) < 1) {
        value_error(fn, ": component_distribution must have at least one batch dim (its ",
                    "rightmost indexes the components), got batch_shape ()")
      }
      k_mixture <- mixture_distribution$.num_events
      k_component <- utils::tail(component_batch, 1)
      if (k_mixture != k_component) {
        value_error(fn, ": mixture_distribution has ", k_mixture, " components but the ",
                    "rightmost batch dim of component_distribution is ", k_component)
      }
      batch_shape <- utils::head(component_batch, -1)
      mixture_batch <- mixture_distribution$batch_shape
      if (length(mixture_batch) && !identical(mixture_batch, batch_shape)) {
        value_error(fn, ": the batch_shape of mixture_distribution ",
                    shape_string(mixture_batch), " must be () or that of ",
                    "component_distribution without its last dim ", shape_string(batch_shape))
      }
      private$.mixture <- mixture_distribution
      private$.component <- component_distribution
      private$.num_components <- k_mixture
      super$initialize(batch_shape, component_distribution$event_shape,
                       validate_args = validate_args)
    },
    expand = function(batch_shape, .instance = NULL) {
      batch_shape <- as.integer(batch_shape)
      component <- private$.component$expand(c(batch_shape, private$.num_components))
      mixture <- private$.mixture$expand(batch_shape)
      self$.expanded(MixtureSameFamily$new(mixture, component, validate_args = FALSE))
    },
    sample = function(sample_shape = NULL) {
      sample_shape <- distr_sample_shape(sample_shape, private$.fn)
      with_no_grad({
        n_event <- length(self$event_shape)
        gather_dim <- length(sample_shape) + length(self$batch_shape) + 1L
        choice <- private$.mixture$sample(sample_shape)
        components <- private$.component$sample(sample_shape)
        index <- choice$reshape(c(choice$shape, rep(1L, n_event + 1L)))
        index <- index$expand(c(choice$shape, 1L, self$event_shape))
        components$gather(gather_dim, index)$squeeze(gather_dim)
      })
    },
    log_prob = function(value) {
      value <- self$.as_value(value, self$.like)
      if (self$.validate_args) self$.validate_sample(value)
      log_prob_x <- private$.component$log_prob(self$.pad(value))
      log_mix <- torch_log_softmax(private$.mixture$logits, dim = -1)
      torch_logsumexp(log_prob_x + log_mix, dim = -1)
    },
    cdf = function(value) {
      value <- self$.as_value(value, self$.like, "cdf")
      if (self$.validate_args) self$.validate_sample(value, "cdf")
      cdf_x <- private$.component$cdf(self$.pad(value))
      torch_sum(cdf_x * private$.mixture$probs, dim = -1)
    },
    print = function(...) {
      cat(class(self)[1], " (", private$.num_components, " components of ",
          class(private$.component)[1], ", batch_shape ", shape_string(self$batch_shape),
          ", event_shape ", shape_string(self$event_shape), ")\n", sep = "")
      invisible(self)
    },
    # value with a component dim before its event dims.
    .pad = function(value) value$unsqueeze(-1L - length(self$event_shape)),
    # The mixing probabilities, with trailing dims of size 1 for the event dims.
    .pad_mixture = function(probs) {
      probs$reshape(c(probs$shape, rep(1L, length(self$event_shape))))
    }
  ),
  active = list(
    mixture_distribution = function() private$.mixture,
    component_distribution = function() private$.component,
    support = function() private$.component$support,
    .like = function() private$.mixture$probs,
    mean = function() {
      probs <- self$.pad_mixture(private$.mixture$probs)
      torch_sum(probs * private$.component$mean, dim = -1L - length(self$event_shape))
    },
    # The law of total variance: the mean of the components' variances plus the variance of
    # their means.
    variance = function() {
      dim <- -1L - length(self$event_shape)
      probs <- self$.pad_mixture(private$.mixture$probs)
      means <- private$.component$mean
      mean_of_variances <- torch_sum(probs * private$.component$variance, dim = dim)
      mixture_mean <- torch_sum(probs * means, dim = dim, keepdim = TRUE)
      variance_of_means <- torch_sum(probs * (means - mixture_mean)^2, dim = dim)
      mean_of_variances + variance_of_means
    }
  ),
  private = list(
    .fn = "distr_mixture_same_family",
    .mixture = NULL,
    .component = NULL,
    .num_components = NULL
  )
)

# Documented in man/distributions.Rd.
#' @export
distr_mixture_same_family <- function(mixture_distribution, component_distribution,
                                      validate_args = NULL) {
  MixtureSameFamily$new(mixture_distribution, component_distribution, validate_args)
}
