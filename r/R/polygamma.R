# torch_polygamma(n, input), $polygamma(n) and $polygamma_(n): the n-th derivative of digamma,
# composed from the engine's ops so that it runs on every device and autograd differentiates it
# (its gradient is polygamma(n + 1, x), up to the series' own error).
#
# Note [Hurwitz zeta]
# ~~~~~~~~~~~~~~~~~~~
# For n >= 1, polygamma(n, x) = (-1)^(n + 1) n! zeta(n + 1, x), and zeta is computed as Cephes'
# zeta (which PyTorch's kernels use): a direct sum of (x + k)^-s for k = 0..N, where N >= 9 and
# x + N > 9, then the Euler-Maclaurin tail at w = x + N, w^(1-s) / (s - 1) - w^-s / 2 plus twelve
# Bernoulli terms, each added until one is below double precision relative to the sum (a
# mask per element stands in for Cephes' early return). One N serves the whole tensor: it is
# found from the smallest element, one read of a value from the device (a host sync). Elements
# larger than that one only get more exact terms. The sum runs in float64 whatever the input's
# floating dtype, and the result is cast back, so float32 results are float32 rounding of an
# accurate value.
#
# Where zeta is not computed: at non-positive integers (poles; -inf counts, as in Cephes)
# the result is (-1)^(n + 1) inf. PyTorch agrees for n >= 2; for n = 1 its trigamma gives a large
# finite number at negative integers (1 / sin(pi x)^2 rounded) and NaN at -inf. At +inf the
# result is 0, the limit (PyTorch gives 0 for n = 1 and NaN for n >= 2, Cephes' 0 * inf); NaN
# stays NaN.

# Cephes' zeta.c: the Euler-Maclaurin coefficients (2j)! / B_2j.
zeta_coefficients <- c(
  12, -720, 30240, -1209600, 47900160, -1.8924375803183791606e9, 7.47242496e10,
  -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
  1.8152105401943546773e17, -7.1661652561756670113e18
)
zeta_machep <- 1.11022302462515654042e-16

# (x)^-s for a whole s >= 2, by squaring: negative x (x + k for negative non-integer input) is
# then exact, where a pow through exp(s log x) would be NaN.
inverse_power <- function(x, s) {
  base <- 1 / x
  out <- NULL
  while (s > 0) {
    if (s %% 2 == 1) out <- if (is.null(out)) base else out * base
    s <- s %/% 2
    if (s > 0) base <- base * base
  }
  out
}

# zeta(s, q) for a whole s >= 2 and a float64 tensor q with no poles, infinities or NaN
# (Note [Hurwitz zeta]).
hurwitz_zeta <- function(s, q) {
  shift <- 9
  if (q$numel() > 0) {
    lowest <- as.numeric(as_array(q$min()))  # the host sync
    shift <- max(9, floor(9 - lowest) + 1)
  }
  total <- inverse_power(q, s)
  for (k in seq_len(shift)) total <- total + inverse_power(q + k, s)
  w <- q + shift
  b <- inverse_power(w, s)
  total <- total + b * w / (s - 1) - 0.5 * b
  done <- torch_zeros_like(q, dtype = torch_bool())
  rising <- 1  # s (s + 1) ... (s + 2j - 2), Cephes' `a`
  k <- 0
  for (coefficient in zeta_coefficients) {
    rising <- rising * (s + k)
    b <- b / w
    term <- (rising / coefficient) * b
    total <- total + term$masked_fill(done, 0)
    done <- done | (torch_abs(term / total) < zeta_machep)
    k <- k + 1
    rising <- rising * (s + k)
    b <- b / w
    k <- k + 1
  }
  total
}

# n as a whole number of at least 0, or an error naming fn.
polygamma_order <- function(n, fn) {
  if (!is.numeric(n) || is.object(n) || length(n) != 1 || is.na(n) || !is.finite(n) ||
      n < 0 || n != trunc(n)) {
    value_error(fn, ": n must be a single whole number of at least 0, got ", deparse(n, nlines = 1)[1])
  }
  n
}

polygamma_of <- function(n, x, fn) {
  if (is_complex_dtype(dtype_of(x))) {
    dtype_error(fn, ": input must be real, got a tensor of dtype ", dtype_labels[[dtype_of(x)]])
  }
  if (!is_float_tensor(x)) x <- x$to(dtype = torch_get_default_dtype())
  if (n == 0) return(torch_digamma(x))
  dtype <- x$dtype
  x64 <- x$to(dtype = torch_float64())
  pole <- (x64 <= 0) & (x64 == torch_floor(x64))
  regular <- torch_isfinite(x64) & !pole
  q <- torch_where(regular, x64, torch_ones_like(x64))
  sign <- if (n %% 2 == 1) 1 else -1
  out <- (sign * factorial(n)) * hurwitz_zeta(n + 1, q)
  out <- out$masked_fill(pole, sign * Inf)$masked_fill(x64 == Inf, 0)$masked_fill(torch_isnan(x64), NaN)
  out$to(dtype = dtype)
}

#' @export
torch_polygamma <- function(n, input) {
  fn <- "torch_polygamma"
  n <- polygamma_order(n, fn)
  polygamma_of(n, extra_tensor(input, fn, "input"), fn)
}

tensor_methods$polygamma <- function(self, n) {
  polygamma_of(polygamma_order(n, "polygamma"), self, "polygamma")
}
tensor_methods$polygamma_ <- function(self, n) {
  n <- polygamma_order(n, "polygamma_")
  inplace("polygamma_", self, function(x) polygamma_of(n, x, "polygamma_"))
}
