# torch for R's window functions (hann, hamming, blackman, bartlett, kaiser) from their closed
# forms over arange, in float64 and cast to the asked dtype, on any device.

# ---- windows -------------------------------------------------------------------------------

# The n = 0 ... L - 1 positions of a symmetric window of length L (periodic: L + 1, the last
# dropped), in float64 on device, with the denominator N the closed forms divide by.
window_positions <- function(fn, window_length, periodic, layout, device) {
  convenience_number(window_length, fn, "window_length", function(v) v >= 0 && v == trunc(v), "a whole number >= 0")
  extra_flag(periodic, fn, "periodic")
  check_layout(layout, fn)
  # Windows of length 0 and 1 are all ones. Whole-number ends keep torch_arange exact (its
  # float64 end, nudged by one epsilon, would drop the last position).
  n <- if (window_length >= 2) {
    torch_arange(0L, as.integer(window_length) - 1L, device = device)$to(dtype = "float64")
  } else {
    torch_zeros(window_length, dtype = "float64", device = device)
  }
  list(n = n,
       N = if (periodic) window_length else window_length - 1)
}

window_result <- function(fn, values, window_length, dtype, device, requires_grad) {
  dtype <- dtype_name(dtype %||% torch_get_default_dtype())
  if (!is_floating_dtype(dtype)) value_error(fn, ": dtype must be a floating dtype, got ", dtype)
  if (window_length <= 1) values <- torch_ones(window_length, dtype = "float64", device = device)
  with_requires_grad(values$to(dtype = dtype), isTRUE(requires_grad))
}

cosine_window <- function(fn, coefficients, window_length, periodic, dtype, layout, device, requires_grad) {
  at <- window_positions(fn, window_length, periodic, layout, device)
  angle <- 2 * pi * at$n / max(at$N, 1)
  values <- torch_zeros_like(at$n)
  for (k in seq_along(coefficients)) values <- values + coefficients[k] * torch_cos((k - 1) * angle)
  window_result(fn, values, window_length, dtype, device, requires_grad)
}

#' @export
torch_hann_window <- function(window_length, periodic = TRUE, dtype = NULL, layout = NULL, device = NULL,
                              requires_grad = FALSE) {
  cosine_window("torch_hann_window", c(0.5, -0.5), window_length, periodic, dtype, layout, device, requires_grad)
}

#' @export
torch_hamming_window <- function(window_length, periodic = TRUE, alpha = 0.54, beta = 0.46, dtype = NULL,
                                 layout = NULL, device = NULL, requires_grad = FALSE) {
  convenience_number(alpha, "torch_hamming_window", "alpha", is.finite, "a finite number")
  convenience_number(beta, "torch_hamming_window", "beta", is.finite, "a finite number")
  cosine_window("torch_hamming_window", c(alpha, -beta), window_length, periodic, dtype, layout, device, requires_grad)
}

#' @export
torch_blackman_window <- function(window_length, periodic = TRUE, dtype = NULL, layout = NULL, device = NULL,
                                  requires_grad = FALSE) {
  cosine_window("torch_blackman_window", c(0.42, -0.5, 0.08), window_length, periodic, dtype, layout, device,
                requires_grad)
}

#' @export
torch_bartlett_window <- function(window_length, periodic = TRUE, dtype = NULL, layout = NULL, device = NULL,
                                  requires_grad = FALSE) {
  at <- window_positions("torch_bartlett_window", window_length, periodic, layout, device)
  values <- 1 - (2 * at$n / max(at$N, 1) - 1)$abs()
  window_result("torch_bartlett_window", values, window_length, dtype, device, requires_grad)
}

# I0(beta * sqrt(1 - (2 n / N - 1)^2)) / I0(beta). periodic and beta default to torch's TRUE
# and 12 when not given.
#' @export
torch_kaiser_window <- function(window_length, periodic, beta, dtype = NULL, layout = NULL, device = NULL,
                                requires_grad = NULL) {
  fn <- "torch_kaiser_window"
  if (missing(periodic)) periodic <- TRUE
  if (missing(beta)) beta <- 12
  convenience_number(beta, fn, "beta", function(v) is.finite(v) && v >= 0, "a finite number >= 0")
  at <- window_positions(fn, window_length, periodic, layout, device)
  ratio <- 2 * at$n / max(at$N, 1) - 1
  argument <- beta * (1 - ratio * ratio)$clamp(min = 0)$sqrt()
  values <- bessel_i0(argument, beta) / bessel_i0(torch_scalar_tensor(beta, dtype = "float64", device = device), beta)
  window_result(fn, values, window_length, dtype, device, requires_grad)
}

# The modified Bessel function I0 by its series sum_k ((x / 2)^k / k!)^2 for 0 <= x <= largest:
# past k = x the terms shrink at least fourfold a step, so 2 * largest + 40 terms reach double
# precision.
bessel_i0 <- function(x, largest) {
  quarter_square <- x * x / 4
  term <- torch_ones_like(x)
  total <- term
  for (k in seq_len(ceiling(2 * largest) + 40)) {
    term <- term * quarter_square / (k * k)
    total <- total + term
  }
  total
}
