# distr_poisson(): counts with mean `rate`. Samples come from torch_poisson() (Knuth's product
# of uniforms below rate 10, Hoermann's transformed rejection above) and have rate's dtype.

Poisson <- R6::R6Class(
  "torch_Poisson",
  inherit = Distribution,
  lock_objects = FALSE,
  public = list(
    .arg_constraints = list(rate = constraint_nonnegative),
    .support = constraint_nonnegative_integer,
    rate = NULL,
    initialize = function(rate, validate_args = NULL) {
      params <- distr_broadcast(list(rate = rate), private$.fn)
      self$rate <- params$rate
      super$initialize(self$rate$shape, validate_args = validate_args, params = params)
    },
    expand = function(batch_shape, .instance = NULL) {
      rate <- self$rate$expand(as.integer(batch_shape))
      self$.expanded(Poisson$new(rate, validate_args = FALSE))
    },
    sample = function(sample_shape = NULL) {
      shape <- self$.extended_shape(sample_shape)
      with_no_grad(torch_poisson(self$rate$expand(shape)))
    },
    log_prob = function(value) {
      value <- self$.as_value(value, self$rate)
      if (self$.validate_args) self$.validate_sample(value)
      # xlogy: a count of 0 at rate 0 has probability 1.
      torch_xlogy(value, self$rate) - self$rate - torch_lgamma(value + 1)
    },
    # H = rate (1 - log rate) + exp(-rate) sum_k rate^k log(k!) / k!, in float64 (the two terms
    # nearly cancel): the sum, up to where its terms are below double precision, for rates up to
    # 100; above, the asymptotic series
    # 0.5 log(2 pi e rate) - 1 / (12 rate) - 1 / (24 rate^2) - 19 / (360 rate^3), whose next
    # term is below 1e-8 there.
    entropy = function() {
      if (self$rate$numel() == 0) return(self$rate$clone())
      rate <- self$rate$to(dtype = torch_float64())
      large <- rate > 100
      small_rate <- torch_where(large, torch_ones_like(rate), rate)
      max_rate <- small_rate$max()$item()
      k_max <- ceiling(max_rate + 12 * sqrt(max_rate) + 30)
      k <- torch_arange(0, k_max, dtype = rate$dtype, device = rate$device)
      log_k_factorial <- torch_lgamma(k + 1)
      r <- small_rate$unsqueeze(-1)
      log_pmf <- torch_xlogy(k, r) - r - log_k_factorial
      series <- small_rate * (1 - torch_log(small_rate)) +
        (torch_exp(log_pmf) * log_k_factorial)$sum(dim = -1)
      series <- torch_where(small_rate > 0, series, torch_zeros_like(series))
      big <- torch_where(large, rate, torch_full_like(rate, 200))
      asymptotic <- 0.5 * torch_log(2 * pi * exp(1) * big) - 1 / (12 * big) -
        1 / (24 * big^2) - 19 / (360 * big^3)
      torch_where(large, asymptotic, series)$to(dtype = self$rate$dtype)
    }
  ),
  active = list(
    mean = function() self$rate,
    variance = function() self$rate
  ),
  private = list(.fn = "distr_poisson")
)

# Documented in man/distributions.Rd.
#' @export
distr_poisson <- function(rate, validate_args = NULL) {
  Poisson$new(rate, validate_args)
}
