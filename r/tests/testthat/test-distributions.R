# distr_normal, distr_bernoulli, distr_categorical and distr_poisson (R/distributions*.R): log_prob
# against base R's densities, entropies against sums in double precision, moments of 1e6 draws
# within 4 standard errors, rsample gradients against central differences, shapes, constraints
# and argument validation; CUDA against the CPU. Gamma and chi-squared are in
# test-distributions-gamma.R, the multivariate normal and mixtures in
# test-distributions-multivariate.R.

f64 <- function(x) torch_tensor(x, dtype = torch_float64())

test_that("distr_normal: log_prob, cdf, icdf and entropy match dnorm, pnorm and qnorm", {
  loc <- rnorm(4)
  scale <- runif(4, 0.2, 3)
  d <- distr_normal(f64(loc), f64(scale))
  value <- matrix(rnorm(12, sd = 3), 3, 4)
  expected <- dnorm(value, rep(loc, each = 3), rep(scale, each = 3), log = TRUE)
  expect_equal(as_array(d$log_prob(f64(value))), expected, tolerance = 1e-12)
  expect_equal(as_array(d$cdf(f64(value))),
               pnorm(value, rep(loc, each = 3), rep(scale, each = 3)), tolerance = 1e-12)
  p <- runif(4)
  expect_equal(as_array(d$icdf(f64(p))), qnorm(p, loc, scale), tolerance = 1e-10)
  expect_equal(as_array(d$entropy()), 0.5 * log(2 * pi * exp(1) * scale^2), tolerance = 1e-12)
  expect_equal(as_array(d$mean), loc)
  expect_equal(as_array(d$variance), scale^2, tolerance = 1e-14)
  expect_equal(as_array(d$stddev), scale)
  # float32 parameters and an R number as value
  d32 <- distr_normal(loc[1], scale[1])
  expect_equal(as_array(d32$log_prob(0.5)), dnorm(0.5, loc[1], scale[1], log = TRUE),
               tolerance = 1e-6)
})

test_that("distr_normal: 1e6 draws have the moments of N(loc, scale^2)", {
  seed <- fresh_torch_seed()
  loc <- c(rnorm(1), 5)
  scale <- c(runif(1, 0.1, 2), 0.01)
  d <- distr_normal(f64(loc), f64(scale))
  x <- d$sample(5e5)
  expect_equal(x$shape, c(5e5, 2))
  expect_false(x$requires_grad)
  expect_moments(x, loc, scale^2, normal_fourth(scale^2), seed, "distr_normal")
  expect_moments(d$rsample(5e5), loc, scale^2, normal_fourth(scale^2), seed, "rsample")
})

test_that("distr_normal: rsample's gradients match central differences of the same draws", {
  loc <- rnorm(3)
  scale <- runif(3, 0.5, 2)
  seed <- sample.int(1e6, 1)
  draw <- function(loc, scale) {
    torch_manual_seed(seed)
    distr_normal(loc, scale)$rsample(5)
  }
  l <- f64(loc)$requires_grad_()
  s <- f64(scale)$requires_grad_()
  draw(l, s)$pow(3)$sum()$backward()
  loss <- function(loc, scale) sum(as_array(draw(f64(loc), f64(scale)))^3)
  expect_equal(as_array(l$grad), numeric_grad(function(v) loss(v, scale), loc), tolerance = 1e-7)
  expect_equal(as_array(s$grad), numeric_grad(function(v) loss(loc, v), scale), tolerance = 1e-7)
  # sample() draws without a graph
  expect_false(distr_normal(l, s)$sample()$requires_grad)
})

test_that("distributions take torch for R's shapes", {
  d <- distr_normal(0, 1)
  expect_equal(d$batch_shape, 1)
  expect_null(d$event_shape)
  expect_equal(d$sample()$shape, 1)
  expect_equal(d$sample(c(3, 2))$shape, c(3, 2, 1))
  expect_equal(d$sample(list())$shape, 1)
  loc <- torch_randn(2, 3)
  d <- distr_normal(loc, torch_ones(3))
  expect_equal(d$batch_shape, c(2, 3))
  expect_equal(d$sample(4)$shape, c(4, 2, 3))
  expect_equal(d$log_prob(torch_zeros(5, 1, 3))$shape, c(5, 2, 3))
  scalar <- distr_normal(torch_tensor(1)$sum(), torch_tensor(2)$sum())
  expect_equal(scalar$batch_shape, integer(0))
  expect_equal(scalar$sample()$shape, integer(0))
  expect_equal(scalar$sample(3)$shape, 3)
  expanded <- d$expand(c(4, 2, 3))
  expect_s3_class(expanded, "torch_Normal")
  expect_equal(expanded$batch_shape, c(4, 2, 3))
  expect_equal(as_array(expanded$log_prob(torch_zeros(2, 3))[2, , ]),
               as_array(d$log_prob(torch_zeros(2, 3))))
  expect_s3_class(d, "torch_Distribution")
  expect_output(print(distr_normal(0, 2)), "torch_Normal (loc: 0, scale: 2)", fixed = TRUE)
})

test_that("distr_bernoulli: log_prob and entropy match dbinom, by probs and by logits", {
  p <- runif(5, 0.01, 0.99)
  value <- rbinom(5, 1, 0.5)
  expected <- dbinom(value, 1, p, log = TRUE)
  expect_equal(as_array(distr_bernoulli(f64(p))$log_prob(f64(value))), expected,
               tolerance = 1e-12)
  by_logits <- distr_bernoulli(logits = f64(qlogis(p)))
  expect_equal(as_array(by_logits$log_prob(f64(value))), expected, tolerance = 1e-12)
  expect_equal(as_array(by_logits$probs), p, tolerance = 1e-12)
  entropy <- -(p * log(p) + (1 - p) * log(1 - p))
  expect_equal(as_array(distr_bernoulli(f64(p))$entropy()), entropy, tolerance = 1e-12)
  expect_equal(as_array(by_logits$entropy()), entropy, tolerance = 1e-12)
  expect_equal(as_array(distr_bernoulli(c(0, 1))$entropy()), c(0, 0))
  expect_equal(as_array(distr_bernoulli(0.3)$enumerate_support()), matrix(c(0, 1), 2))
  expect_equal(distr_bernoulli(f64(p))$enumerate_support()$shape, c(2, 5))
})

test_that("distr_bernoulli: 1e6 draws have mean p and variance p (1 - p)", {
  seed <- fresh_torch_seed()
  p <- c(runif(1, 0.05, 0.95), 0.01)
  x <- distr_bernoulli(p)$sample(5e5)
  expect_true(all(as_array(x$unique()) %in% c(0, 1)))
  v <- p * (1 - p)
  expect_moments(x, p, v, v * (1 - 3 * v), seed, "distr_bernoulli")
  expect_error(distr_bernoulli(p)$rsample(), "distr_bernoulli\\$rsample",
               class = "not_implemented_error")
})

test_that("distr_categorical: log_prob, entropy and 1-based draws with the category frequencies", {
  seed <- fresh_torch_seed()
  w <- runif(4, 0.1, 1)
  p <- w / sum(w)
  d <- distr_categorical(probs = f64(w))
  expect_equal(d$batch_shape, integer(0))
  expect_equal(as_array(d$log_prob(f64(c(3, 1, 4)))), log(p[c(3, 1, 4)]), tolerance = 1e-12)
  expect_equal(as_array(d$entropy()), -sum(p * log(p)), tolerance = 1e-12)
  by_logits <- distr_categorical(logits = f64(log(w) + 3))
  expect_equal(as_array(by_logits$probs), p, tolerance = 1e-12)
  expect_equal(as_array(by_logits$log_prob(f64(2))), log(p[2]), tolerance = 1e-12)
  expect_equal(as_array(d$enumerate_support()), 1:4)
  expect_true(all(is.nan(as_array(d$mean))))
  x <- d$sample(1e6)
  expect_equal(x$shape, 1e6)
  expect_equal(x$dtype, torch_long())
  counts <- tabulate(as_array(x), nbins = 4)
  expect_equal(sum(counts), 1e6)
  # each category's indicator is a Bernoulli(p_k) draw
  z <- abs(counts / 1e6 - p) / sqrt(p * (1 - p) / 1e6)
  expect_lte(max(z), 4, label = paste("standard errors of the frequencies (seed", seed, ")"))
})

test_that("distr_categorical: batches of probabilities along the last dim", {
  w <- matrix(runif(6, 0.1, 1), 2, 3)
  d <- distr_categorical(f64(w))
  expect_equal(d$batch_shape, 2)
  expect_equal(d$sample(c(4, 5))$shape, c(4, 5, 2))
  value <- matrix(sample(1:3, 10, replace = TRUE), 5, 2)
  expected <- log(cbind(w[1, value[, 1]] / sum(w[1, ]), w[2, value[, 2]] / sum(w[2, ])))
  expect_equal(as_array(d$log_prob(f64(value))), expected, tolerance = 1e-12)
  expect_equal(d$expand(c(3, 2))$batch_shape, c(3, 2))
  expect_equal(distr_categorical(torch_ones(5))$sample(0)$shape, 0)
})

test_that("distr_poisson: log_prob matches dpois, entropy a direct sum", {
  rate <- c(runif(3, 0.1, 20), 60, 150, 0)
  value <- c(rpois(5, rate[1:5]), 0)
  d <- distr_poisson(f64(rate))
  expect_equal(as_array(d$log_prob(f64(value))), dpois(value, rate, log = TRUE),
               tolerance = 1e-12)
  entropy <- vapply(rate, function(l) {
    pk <- dpois(0:2000, l)
    -sum(pk[pk > 0] * log(pk[pk > 0]))
  }, 0)
  expect_equal(as_array(d$entropy()), entropy, tolerance = 1e-8)
  expect_equal(as_array(d$mean), rate)
  expect_equal(as_array(d$variance), rate)
})

test_that("distr_poisson: 1e6 draws have mean and variance rate", {
  seed <- fresh_torch_seed()
  rate <- c(runif(1, 0.5, 8), 40)
  x <- distr_poisson(f64(rate))$sample(5e5)
  expect_true(all(as_array(x[1:1000, ] == x[1:1000, ]$floor())))
  expect_moments(x, rate, rate, rate * (1 + 3 * rate), seed, "distr_poisson")
})

test_that("bad arguments are value errors naming the distribution and the argument", {
  expect_error(distr_normal(0, -1), "distr_normal: scale must satisfy constraint_positive",
               class = "value_error")
  expect_error(distr_normal(torch_zeros(2), torch_tensor(c(1, 0))), "found 0")
  expect_error(distr_normal(NaN, 1), "distr_normal: loc must satisfy constraint_real")
  expect_error(distr_normal("a", 1), "distr_normal: loc must be a number or a tensor")
  expect_error(distr_normal(torch_zeros(2), torch_ones(3)), "distr_normal: the shapes of loc")
  expect_error(distr_normal(0, 1, validate_args = NA), "distr_normal: validate_args")
  expect_error(distr_bernoulli(), "distr_bernoulli: either probs or logits")
  expect_error(distr_bernoulli(0.5, 0), "distr_bernoulli: either probs or logits")
  expect_error(distr_bernoulli(1.5),
               "distr_bernoulli: probs must satisfy constraint_unit_interval")
  expect_error(distr_categorical(torch_tensor(c(0.5, -0.1))),
               "distr_categorical: probs must satisfy constraint_simplex")
  expect_error(distr_categorical(torch_tensor(1)$sum()),
               "distr_categorical: probs must be at least")
  expect_error(distr_poisson(-2), "distr_poisson: rate must satisfy constraint_nonnegative")
  d <- distr_normal(torch_zeros(3), 1)
  expect_error(d$sample(-1), "distr_normal: sample_shape must be whole numbers")
  expect_error(d$sample(1.5), "sample_shape")
  expect_error(d$log_prob(torch_zeros(2)), "distr_normal\\$log_prob: value of shape \\(2\\)")
  expect_error(d$log_prob("x"), "distr_normal\\$log_prob: value must be a tensor")
  expect_error(distr_poisson(2)$log_prob(torch_tensor(1.5)),
               "distr_poisson\\$log_prob: value must be within the support")
  expect_error(distr_bernoulli(0.2)$log_prob(torch_tensor(2)), "within the support")
  expect_error(distr_categorical(torch_ones(3))$log_prob(torch_tensor(0)),
               "whole numbers from 1 to 3")
  expect_error(d$icdf(torch_tensor(2)), "distr_normal\\$icdf: value must satisfy")
  expect_error(distr_categorical(torch_ones(3))$rsample(), class = "not_implemented_error")
})

test_that("validate_args = FALSE and the option skip the checks", {
  expect_silent(d <- distr_normal(0, -1, validate_args = FALSE))
  expect_true(is.nan(as_array(d$log_prob(0))))
  expect_equal(as_array(distr_poisson(2, validate_args = FALSE)$log_prob(1.5)),
               log(2) * 1.5 - 2 - lgamma(2.5), tolerance = 1e-6)
  withr::local_options(rcuda.distr_validate_args = FALSE)
  expect_false(distr_normal(0, -1)$.validate_args)
  expect_true(distr_normal(0, 1, validate_args = TRUE)$.validate_args)
})

test_that("constraints check values as torch for R's", {
  expect_equal(as_array(constraint_real_vector$check(torch_randn(5, 5))), rep(TRUE, 5))
  expect_equal(as_array(constraint_positive$check(torch_tensor(c(-1, 0, 2)))),
               c(FALSE, FALSE, TRUE))
  expect_equal(as_array(constraint_nonnegative_integer$check(torch_tensor(c(0, 1.5, 3, -1)))),
               c(TRUE, FALSE, TRUE, FALSE))
  expect_equal(as_array(constraint_unit_interval$check(torch_tensor(c(0, 1, 1.1)))),
               c(TRUE, TRUE, FALSE))
  a <- matrix(rnorm(9), 3)
  spd <- torch_stack(list(torch_tensor(crossprod(a) + diag(3)), -torch_eye(3)))
  expect_equal(as_array(constraint_positive_definite$check(spd)), matrix(c(TRUE, FALSE), 1))
  lower <- torch_stack(list(torch_eye(2), torch_tensor(rbind(c(1, 1), c(0, 1)))))
  expect_equal(as_array(constraint_lower_cholesky$check(lower)), c(TRUE, FALSE))
  expect_equal(as_array(constraint_simplex$check(torch_tensor(rbind(c(0.3, 0.7), c(0.5, 0.6))))),
               c(TRUE, FALSE))
  expect_equal(as_array(constraint_less_than$new(1)$check(torch_tensor(c(0.5, 1.5)))),
               c(TRUE, FALSE))
  expect_equal(as_array(constraint_half_open_interval$new(0, 1)$check(torch_tensor(c(0, 1)))),
               c(TRUE, FALSE))
  expect_identical(distr_poisson(1)$support, constraint_nonnegative_integer)
  expect_identical(distr_normal(0, 1)$arg_constraints$scale, constraint_positive)
})

test_that("CUDA: log_prob, entropy and draws agree with the CPU", {
  skip_if_not(cuda_is_available())
  seed <- fresh_torch_seed()
  loc <- rnorm(3)
  scale <- runif(3, 0.5, 2)
  value <- rnorm(3)
  cpu <- distr_normal(f64(loc), f64(scale))
  gpu <- distr_normal(f64(loc)$cuda(), f64(scale)$cuda())
  expect_equal(as_array(gpu$log_prob(f64(value)$cuda())$cpu()),
               as_array(cpu$log_prob(f64(value))), tolerance = 1e-12)
  expect_true(gpu$rsample(2)$is_cuda)
  expect_moments(gpu$sample(4e5), loc, scale^2, normal_fourth(scale^2), seed, "CUDA normal")
  p <- runif(3, 0.1, 0.9)
  bern <- distr_bernoulli(f64(p)$cuda())
  expect_equal(as_array(bern$log_prob(f64(c(1, 0, 1))$cuda())$cpu()),
               dbinom(c(1, 0, 1), 1, p, log = TRUE), tolerance = 1e-12)
  expect_moments(bern$sample(4e5), p, p * (1 - p), p * (1 - p) * (1 - 3 * p * (1 - p)), seed,
                 "CUDA bernoulli")
  w <- runif(3, 0.2, 1)
  categorical <- distr_categorical(f64(w)$cuda())
  expect_equal(as_array(categorical$entropy()$cpu()),
               as_array(distr_categorical(f64(w))$entropy()), tolerance = 1e-12)
  counts <- tabulate(as_array(categorical$sample(1e6)$cpu()), nbins = 3)
  q <- w / sum(w)
  expect_lte(max(abs(counts / 1e6 - q) / sqrt(q * (1 - q) / 1e6)), 4)
  rate <- c(0.5, 7, 60)
  poisson <- distr_poisson(f64(rate)$cuda())
  expect_equal(as_array(poisson$entropy()$cpu()), as_array(distr_poisson(f64(rate))$entropy()),
               tolerance = 1e-12)
  expect_moments(poisson$sample(4e5), rate, rate, rate * (1 + 3 * rate), seed, "CUDA poisson")
  expect_error(distr_normal(torch_zeros(2)$cuda(), torch_ones(2)), "one device")
})
