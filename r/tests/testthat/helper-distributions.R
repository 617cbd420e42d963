# For test-distributions*.R: fresh draws of the engine's generator, and sample moments checked
# against their standard errors.

# A seed for the engine's generator taken from R's (fresh in each session), returned so that a
# failing check can name it.
fresh_torch_seed <- function() {
  seed <- sample.int(.Machine$integer.max, 1)
  torch_manual_seed(seed)
  seed
}

# The columns of draws (a tensor reshaped to n x k, k = length(mean)) have means within 4
# standard errors of mean and variances within 4 of variance; fourth is the fourth central
# moment, from which the variance's standard error comes: sqrt((fourth - variance^2) / n).
expect_moments <- function(draws, mean, variance, fourth, seed, label = "draws") {
  k <- length(mean)
  x <- as_array(draws$detach()$cpu()$to(dtype = torch_float64())$reshape(c(-1L, k)))
  x <- matrix(x, ncol = k)
  n <- nrow(x)
  m <- colMeans(x)
  v <- colSums(sweep(x, 2, m)^2) / (n - 1)
  z_mean <- abs(m - mean) / sqrt(variance / n)
  z_var <- abs(v - variance) / sqrt((fourth - variance^2) / n)
  where <- paste0(label, " (n = ", n, ", seed ", seed, ")")
  expect_lte(max(z_mean), 4, label = paste("standard errors of the mean of", where))
  expect_lte(max(z_var), 4, label = paste("standard errors of the variance of", where))
}

# The fourth central moment of a normal distribution with variance v.
normal_fourth <- function(v) 3 * v^2
