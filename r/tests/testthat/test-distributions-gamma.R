# distr_gamma and distr_chi2 (R/distributions-gamma*.R): log_prob against dgamma and dchisq,
# entropy against integrate(), moments of 1e6 draws of the Marsaglia-Tsang sampler within 4
# standard errors, and rsample's implicit-reparameterisation gradients against central
# differences of R's qgamma at the draw's CDF level; CUDA against the same references.

f64 <- function(x) torch_tensor(x, dtype = torch_float64())

# dx/da and dx/db of a Gamma(a, b) draw x at fixed F(x): central differences of qgamma() at
# the draw's (log) CDF level, taken from the nearer tail.
qgamma_grads <- function(x, a, b) {
  upper <- pgamma(x, a, b) > 0.5
  quantile <- function(i, a, b) {
    level <- pgamma(x[i], a[i], b[i], lower.tail = !upper[i], log.p = TRUE)
    function(a2, b2) qgamma(level, a2, b2, lower.tail = !upper[i], log.p = TRUE)
  }
  da <- db <- numeric(length(x))
  for (i in seq_along(x)) {
    q <- quantile(i, a, b)
    ha <- 1e-5 * a[i]
    hb <- 1e-5 * b[i]
    da[i] <- (q(a[i] + ha, b[i]) - q(a[i] - ha, b[i])) / (2 * ha)
    db[i] <- (q(a[i], b[i] + hb) - q(a[i], b[i] - hb)) / (2 * hb)
  }
  list(concentration = da, rate = db)
}

# -integral of f log f, over y = log(x) (which takes the singularity at 0 of a < 1 away).
gamma_entropy <- function(a, b) {
  integrate(function(y) {
    log_f <- dgamma(exp(y), a, b, log = TRUE)
    ifelse(is.finite(log_f), -exp(log_f + y) * log_f, 0)
  }, -Inf, Inf, rel.tol = 1e-10)$value
}

test_that("distr_gamma: log_prob matches dgamma, entropy integrate()", {
  a <- c(runif(2, 0.3, 0.9), runif(2, 1, 30))
  b <- runif(4, 0.2, 5)
  d <- distr_gamma(f64(a), f64(b))
  value <- matrix(rgamma(8, rep(a, each = 2), rep(b, each = 2)), 2, 4)
  expected <- dgamma(value, rep(a, each = 2), rep(b, each = 2), log = TRUE)
  expect_equal(as_array(d$log_prob(f64(value))), expected, tolerance = 1e-12)
  expect_equal(as_array(distr_gamma(1, 2)$log_prob(0)), log(2), tolerance = 1e-6)
  expect_equal(as_array(d$entropy()), mapply(gamma_entropy, a, b), tolerance = 1e-8)
  expect_equal(as_array(d$mean), a / b, tolerance = 1e-14)
  expect_equal(as_array(d$variance), a / b^2, tolerance = 1e-14)
})

test_that("distr_chi2: log_prob matches dchisq and it is Gamma(df / 2, 1 / 2)", {
  df <- c(runif(2, 0.5, 2), runif(2, 3, 40))
  d <- distr_chi2(f64(df))
  value <- rchisq(4, df)
  expect_equal(as_array(d$log_prob(f64(value))), dchisq(value, df, log = TRUE), tolerance = 1e-12)
  expect_equal(as_array(d$df), df, tolerance = 1e-14)
  expect_equal(as_array(d$mean), df, tolerance = 1e-14)
  expect_equal(as_array(d$variance), 2 * df, tolerance = 1e-14)
  expect_equal(as_array(d$entropy()), mapply(gamma_entropy, df / 2, 0.5), tolerance = 1e-8)
  expect_s3_class(d, "torch_Gamma")
  expect_equal(distr_chi2(1)$batch_shape, 1)
  expect_null(distr_chi2(1)$event_shape)
  expect_equal(distr_chi2(1)$sample(c(3, 2))$shape, c(3, 2, 1))
  expect_equal(d$expand(c(2, 4))$batch_shape, c(2, 4))
  expect_equal(as_array(d$expand(c(2, 4))$df[2, ]), df, tolerance = 1e-14)
})

test_that("distr_gamma: 1e6 draws have the moments of Gamma(a, b), below and above a = 1", {
  seed <- fresh_torch_seed()
  a <- c(runif(1, 0.1, 0.9), runif(1, 1.5, 20))
  b <- runif(2, 0.5, 3)
  x <- distr_gamma(f64(a), f64(b))$sample(5e5)
  expect_equal(x$shape, c(5e5, 2))
  expect_true(as_array((x > 0)$all()))
  expect_moments(x, a / b, a / b^2, 3 * a * (a + 2) / b^4, seed, "distr_gamma")
})

test_that("distr_chi2: 1e6 draws have mean df and variance 2 df", {
  seed <- fresh_torch_seed()
  df <- c(runif(1, 0.5, 2), runif(1, 3, 30))
  x <- distr_chi2(df)$rsample(5e5)
  expect_equal(x$dtype, torch_float())
  expect_moments(x, df, 2 * df, 12 * df * (df + 4), seed, "distr_chi2")
})

test_that("distr_gamma: rsample's gradients match central differences of qgamma", {
  a <- c(0.01, runif(3, 0.05, 1), runif(3, 1, 20), 300, 5000)
  b <- runif(length(a), 0.3, 3)
  concentration <- f64(a)$requires_grad_()
  rate <- f64(b)$requires_grad_()
  fresh_torch_seed()
  x <- distr_gamma(concentration, rate)$rsample(4)
  x$sum()$backward()
  draws <- as_array(x$detach())
  expected <- lapply(seq_along(a), function(j) {
    qgamma_grads(draws[, j], rep(a[j], 4), rep(b[j], 4))
  })
  expect_equal(as_array(concentration$grad),
               vapply(expected, function(e) sum(e$concentration), 0), tolerance = 1e-6)
  expect_equal(as_array(rate$grad), vapply(expected, function(e) sum(e$rate), 0), tolerance = 1e-6)
  # float32, as the parameters come most often
  a32 <- torch_tensor(a[2:6], requires_grad = TRUE)
  x32 <- distr_gamma(a32, 1)$rsample()
  x32$sum()$backward()
  reference <- qgamma_grads(as_array(x32$detach()), a[2:6], rep(1, 5))$concentration
  expect_equal(as_array(a32$grad), reference, tolerance = 1e-4)
})

test_that("distr_chi2: rsample's gradient in df matches central differences of qchisq", {
  df <- runif(5, 0.5, 30)
  dfs <- f64(df)$requires_grad_()
  x <- distr_chi2(dfs)$rsample()
  x$sum()$backward()
  reference <- qgamma_grads(as_array(x$detach()), df / 2, rep(0.5, 5))$concentration / 2
  expect_equal(as_array(dfs$grad), reference, tolerance = 1e-6)
})

test_that("distr_gamma: draws of tiny concentrations stay positive, float32 as float64", {
  fresh_torch_seed()
  x <- distr_gamma(c(0.01, 0.001), 1)$sample(1000)
  expect_equal(x$dtype, torch_float())
  expect_true(as_array((x > 0)$all()))
  expect_equal(distr_gamma(f64(0.01), 1)$sample(10)$dtype, torch_float64())
})

test_that("distr_gamma and distr_chi2: bad arguments are value errors naming them", {
  expect_error(distr_gamma(-1, 1), "distr_gamma: concentration must satisfy constraint_positive",
               class = "value_error")
  expect_error(distr_gamma(1, torch_tensor(c(1, 0))), "distr_gamma: rate must satisfy")
  expect_error(distr_gamma(1), "rate")
  expect_error(distr_chi2(0), "distr_chi2: df must satisfy constraint_positive")
  expect_error(distr_gamma(2, 1)$log_prob(-1), "distr_gamma\\$log_prob: value must be within")
  expect_error(distr_chi2(c(1, 2))$log_prob(torch_ones(3)), "does not broadcast")
  expect_error(distr_gamma(1, 1)$cdf(1), class = "not_implemented_error")
})

test_that("CUDA: gamma draws, log_prob and rsample gradients agree with the references", {
  skip_if_not(cuda_is_available())
  seed <- fresh_torch_seed()
  a <- c(runif(1, 0.1, 0.9), runif(1, 2, 20))
  b <- runif(2, 0.5, 3)
  gpu <- distr_gamma(f64(a)$cuda(), f64(b)$cuda())
  x <- gpu$sample(5e5)
  expect_true(x$is_cuda)
  expect_moments(x, a / b, a / b^2, 3 * a * (a + 2) / b^4, seed, "CUDA distr_gamma")
  value <- rgamma(2, a, b)
  expect_equal(as_array(gpu$log_prob(f64(value)$cuda())$cpu()), dgamma(value, a, b, log = TRUE),
               tolerance = 1e-12)
  expect_equal(as_array(gpu$entropy()$cpu()), as_array(distr_gamma(f64(a), f64(b))$entropy()),
               tolerance = 1e-12)
  concentration <- f64(a)$cuda()$requires_grad_()
  draws <- distr_gamma(concentration, f64(b)$cuda())$rsample()
  draws$sum()$backward()
  reference <- qgamma_grads(as_array(draws$detach()$cpu()), a, b)$concentration
  expect_equal(as_array(concentration$grad$cpu()), reference, tolerance = 1e-6)
  chi2 <- distr_chi2(torch_tensor(c(1, 7))$cuda())$sample(4e5)
  expect_moments(chi2, c(1, 7), c(2, 14), 12 * c(1, 7) * c(5, 11), seed, "CUDA distr_chi2")
})
