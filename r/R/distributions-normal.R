# distr_normal(): the normal distribution N(loc, scale^2), reparameterisable
# (rsample = loc + scale * eps with eps ~ N(0, 1)).

Normal <- R6::R6Class(
  "torch_Normal",
  inherit = Distribution,
  lock_objects = FALSE,
  public = list(
    .arg_constraints = list(loc = constraint_real, scale = constraint_positive),
    .support = constraint_real,
    has_rsample = TRUE,
    loc = NULL,
    scale = NULL,
    initialize = function(loc, scale, validate_args = NULL) {
      params <- distr_broadcast(list(loc = loc, scale = scale), private$.fn)
      self$loc <- params$loc
      self$scale <- params$scale
      super$initialize(self$loc$shape, validate_args = validate_args, params = params)
    },
    expand = function(batch_shape, .instance = NULL) {
      batch_shape <- as.integer(batch_shape)
      self$.expanded(Normal$new(self$loc$expand(batch_shape), self$scale$expand(batch_shape),
                                validate_args = FALSE))
    },
    sample = function(sample_shape = NULL) {
      with_no_grad(self$rsample(sample_shape))
    },
    rsample = function(sample_shape = NULL) {
      shape <- self$.extended_shape(sample_shape)
      self$loc + standard_normal(shape, self$loc) * self$scale
    },
    log_prob = function(value) {
      value <- self$.as_value(value, self$loc)
      if (self$.validate_args) self$.validate_sample(value)
      -((value - self$loc)^2) / (2 * self$scale^2) - torch_log(self$scale) - log(sqrt(2 * pi))
    },
    cdf = function(value) {
      value <- self$.as_value(value, self$loc, "cdf")
      if (self$.validate_args) self$.validate_sample(value, "cdf")
      # erfc rather than 1 + erf: the lower tail keeps its relative precision.
      0.5 * torch_erfc((self$loc - value) / (self$scale * sqrt(2)))
    },
    icdf = function(value) {
      value <- self$.as_value(value, self$loc, "icdf")
      if (self$.validate_args) {
        check_constraint(value, constraint_unit_interval, paste0(private$.fn, "$icdf"), "value")
      }
      self$loc + self$scale * torch_erfinv(2 * value - 1) * sqrt(2)
    },
    entropy = function() {
      0.5 + 0.5 * log(2 * pi) + torch_log(self$scale)
    }
  ),
  active = list(
    mean = function() self$loc,
    stddev = function() self$scale,
    variance = function() self$scale^2
  ),
  private = list(.fn = "distr_normal")
)

# Documented in man/distributions.Rd.
#' @export
distr_normal <- function(loc, scale, validate_args = NULL) {
  Normal$new(loc, scale, validate_args)
}
