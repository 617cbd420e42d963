# distr_gamma() (shape `concentration`, `rate`) and distr_chi2() (Gamma(df / 2, 1 / 2)), both
# reparameterisable: rsample() is differentiable in the concentration (or df) through the
# implicit reparameterisation and in the rate through x = standard draw / rate
# (torch__standard_gamma() in R/tensor-random.R, docs/distributions.md).

Gamma <- R6::R6Class(
  "torch_Gamma",
  inherit = Distribution,
  lock_objects = FALSE,
  public = list(
    .arg_constraints = list(concentration = constraint_positive, rate = constraint_positive),
    .support = constraint_nonnegative,
    has_rsample = TRUE,
    concentration = NULL,
    rate = NULL,
    # .checked: the parameters the user gave, for validation, where they are not these two
    # (distr_chi2's df).
    initialize = function(concentration, rate, validate_args = NULL, .checked = NULL) {
      params <- distr_broadcast(list(concentration = concentration, rate = rate), private$.fn)
      self$concentration <- params$concentration
      self$rate <- params$rate
      super$initialize(self$rate$shape, validate_args = validate_args,
                       params = if (is.null(.checked)) params else .checked)
    },
    expand = function(batch_shape, .instance = NULL) {
      batch_shape <- as.integer(batch_shape)
      self$.expanded(Gamma$new(self$concentration$expand(batch_shape),
                               self$rate$expand(batch_shape), validate_args = FALSE))
    },
    rsample = function(sample_shape = NULL) {
      shape <- self$.extended_shape(sample_shape)
      value <- torch__standard_gamma(self$concentration$expand(shape)) / self$rate$expand(shape)
      # Kept above 0 where the division underflows, without changing the gradient.
      tiny <- torch_finfo(value$dtype)$tiny
      value + (value$clamp(min = tiny) - value)$detach()
    },
    log_prob = function(value) {
      value <- self$.as_value(value, self$rate)
      if (self$.validate_args) self$.validate_sample(value)
      a <- self$concentration
      torch_xlogy(a, self$rate) + torch_xlogy(a - 1, value) - self$rate * value - torch_lgamma(a)
    },
    entropy = function() {
      a <- self$concentration
      a - torch_log(self$rate) + torch_lgamma(a) + (1 - a) * torch_digamma(a)
    }
  ),
  active = list(
    mean = function() self$concentration / self$rate,
    variance = function() self$concentration / self$rate^2
  ),
  private = list(.fn = "distr_gamma")
)

Chi2 <- R6::R6Class(
  "torch_Chi2",
  inherit = Gamma,
  lock_objects = FALSE,
  public = list(
    .arg_constraints = list(df = constraint_positive),
    initialize = function(df, validate_args = NULL) {
      df <- distr_broadcast(list(df = df), private$.fn)$df
      super$initialize(0.5 * df, torch_full_like(df, 0.5), validate_args = validate_args,
                       .checked = list(df = df))
    },
    expand = function(batch_shape, .instance = NULL) {
      self$.expanded(Chi2$new(self$df$expand(as.integer(batch_shape)), validate_args = FALSE))
    }
  ),
  active = list(
    df = function() self$concentration * 2
  ),
  private = list(.fn = "distr_chi2")
)

# Documented in man/distributions.Rd.
#' @export
distr_gamma <- function(concentration, rate, validate_args = NULL) {
  Gamma$new(concentration, rate, validate_args)
}

# Documented in man/distributions.Rd.
#' @export
distr_chi2 <- function(df, validate_args = NULL) {
  Chi2$new(df, validate_args = validate_args)
}
