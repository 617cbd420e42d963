# distr_multivariate_normal and distr_mixture_same_family (R/distributions-*.R): log_prob against
# densities written out in double precision, moments and covariances of 1e6 draws within 4
# standard errors, rsample gradients against central differences of the same draws, shapes and
# argument validation; CUDA against the CPU.

f64 <- function(x) torch_tensor(x, dtype = torch_float64())

# log N(x; mu, sigma) from its formula, x one point.
mvn_log_density <- function(x, mu, sigma) {
  d <- x - mu
  -0.5 * (length(mu) * log(2 * pi) + log(det(sigma)) + sum(d * solve(sigma, d)))
}

random_covariance <- function(n) {
  a <- matrix(rnorm(n * n), n)
  crossprod(a) + diag(runif(n, 0.5, 1.5))
}

test_that("distr_multivariate_normal: log_prob and entropy match the density's formula", {
  n <- 3
  mu <- rnorm(n)
  sigma <- random_covariance(n)
  x <- matrix(rnorm(4 * n, sd = 2), 4)
  expected <- apply(x, 1, mvn_log_density, mu = mu, sigma = sigma)
  given <- list(covariance_matrix = sigma, precision_matrix = solve(sigma),
                scale_tril = t(chol(sigma)))
  for (which in names(given)) {
    args <- list(f64(mu))
    args[[which]] <- f64(given[[which]])
    d <- do.call(distr_multivariate_normal, args)
    expect_equal(as_array(d$log_prob(f64(x))), expected, tolerance = 1e-10, label = which)
    expect_equal(as_array(d$covariance_matrix), sigma, tolerance = 1e-10)
    expect_equal(as_array(d$precision_matrix), solve(sigma), tolerance = 1e-10)
    expect_equal(as_array(d$scale_tril), t(chol(sigma)), tolerance = 1e-10)
  }
  expect_equal(as_array(d$entropy()), 0.5 * log(det(2 * pi * exp(1) * sigma)), tolerance = 1e-12)
  expect_equal(as_array(d$variance), diag(sigma), tolerance = 1e-12)
  expect_equal(as_array(d$mean), mu)
  expect_equal(d$batch_shape, integer(0))
  expect_equal(d$event_shape, n)
  expect_equal(d$sample(c(5, 2))$shape, c(5, 2, n))
  expect_equal(d$log_prob(d$sample(c(5, 2)))$shape, c(5, 2))
})

test_that("distr_multivariate_normal: batches of loc and scale_tril broadcast", {
  n <- 2
  sigmas <- list(random_covariance(n), random_covariance(n))
  tril <- torch_stack(lapply(sigmas, function(s) f64(t(chol(s)))))
  loc <- array(rnorm(4 * 2 * n), c(4, 2, n))
  d <- distr_multivariate_normal(f64(loc), scale_tril = tril)
  expect_equal(d$batch_shape, c(4, 2))
  x <- d$sample(3)
  expect_equal(x$shape, c(3, 4, 2, n))
  lp <- as_array(d$log_prob(x))
  xs <- as_array(x)
  for (s in 1:3) for (i in 1:4) for (j in 1:2) {
    expect_equal(lp[s, i, j], mvn_log_density(xs[s, i, j, ], loc[i, j, ], sigmas[[j]]),
                 tolerance = 1e-10)
  }
  expect_equal(d$entropy()$shape, c(4, 2))
  expect_equal(d$expand(c(5, 4, 2))$batch_shape, c(5, 4, 2))
  # one value for every batch element
  expect_equal(d$log_prob(torch_zeros(n, dtype = torch_float64()))$shape, c(4, 2))
})

test_that("distr_multivariate_normal: 1e6 draws have the mean and covariance", {
  seed <- fresh_torch_seed()
  n <- 3
  mu <- rnorm(n)
  sigma <- random_covariance(n)
  d <- distr_multivariate_normal(f64(mu), covariance_matrix = f64(sigma))
  x <- d$sample(333334)
  expect_moments(x, mu, diag(sigma), normal_fourth(diag(sigma)), seed, "distr_multivariate_normal")
  draws <- as_array(x)
  m <- nrow(draws)
  # the sample covariance of coordinates i and j of a normal has variance
  # (sigma_ii sigma_jj + sigma_ij^2) / m
  se <- sqrt((outer(diag(sigma), diag(sigma)) + sigma^2) / m)
  expect_lte(max(abs(cov(draws) - sigma) / se), 4,
             label = paste("standard errors of the covariances (seed", seed, ")"))
})

test_that("distr_multivariate_normal: rsample's gradients match central differences", {
  n <- 3
  mu <- rnorm(n)
  tril <- t(chol(random_covariance(n)))
  lower <- which(lower.tri(tril, diag = TRUE))
  seed <- sample.int(1e6, 1)
  draw <- function(loc, scale_tril) {
    torch_manual_seed(seed)
    distr_multivariate_normal(loc, scale_tril = scale_tril)$rsample(4)
  }
  loc <- f64(mu)$requires_grad_()
  scale_tril <- f64(tril)$requires_grad_()
  draw(loc, scale_tril)$pow(3)$sum()$backward()
  loss <- function(mu, tril) sum(as_array(draw(f64(mu), f64(tril)))^3)
  expect_equal(as_array(loc$grad), numeric_grad(function(v) loss(v, tril), mu), tolerance = 1e-7)
  numeric <- numeric_grad(function(v) {
    m <- tril
    m[lower] <- v
    loss(mu, m)
  }, tril[lower])
  expect_equal(as_array(scale_tril$grad)[lower], numeric, tolerance = 1e-7)
})

test_that("distr_mixture_same_family: log_prob, cdf, mean and variance of a normal mixture", {
  k <- 3
  w <- runif(k, 0.2, 1)
  p <- w / sum(w)
  m <- rnorm(k, sd = 3)
  s <- runif(k, 0.3, 2)
  d <- distr_mixture_same_family(distr_categorical(f64(w)), distr_normal(f64(m), f64(s)))
  expect_s3_class(d, "torch_MixtureSameFamily")
  expect_equal(d$batch_shape, integer(0))
  x <- rnorm(6, sd = 4)
  # log sum_k p_k N(x; m_k, s_k), summed from the largest term (far out, each density underflows)
  log_density <- vapply(x, function(v) {
    terms <- log(p) + dnorm(v, m, s, log = TRUE)
    max(terms) + log(sum(exp(terms - max(terms))))
  }, 0)
  expect_equal(as_array(d$log_prob(f64(x))), log_density, tolerance = 1e-12)
  expect_equal(as_array(d$cdf(f64(x))), vapply(x, function(v) sum(p * pnorm(v, m, s)), 0),
               tolerance = 1e-12)
  mean <- sum(p * m)
  expect_equal(as_array(d$mean), mean, tolerance = 1e-12)
  expect_equal(as_array(d$variance), sum(p * (s^2 + (m - mean)^2)), tolerance = 1e-12)
  expect_equal(d$sample()$shape, integer(0))
  expect_equal(d$sample(c(2, 3))$shape, c(2, 3))
  expect_identical(d$support, constraint_real)
})

test_that("distr_mixture_same_family: 1e6 draws have the mixture's moments", {
  seed <- fresh_torch_seed()
  w <- runif(3, 0.2, 1)
  p <- w / sum(w)
  m <- rnorm(3, sd = 3)
  s <- runif(3, 0.3, 2)
  d <- distr_mixture_same_family(distr_categorical(w), distr_normal(m, s))
  mean <- sum(p * m)
  variance <- sum(p * (s^2 + (m - mean)^2))
  delta <- m - mean
  fourth <- sum(p * (delta^4 + 6 * delta^2 * s^2 + 3 * s^4))
  expect_moments(d$sample(1e6), mean, variance, fourth, seed, "distr_mixture_same_family")
})

test_that("distr_mixture_same_family: batches of multivariate normal components", {
  n <- 2
  sigma <- random_covariance(n)
  loc <- array(rnorm(4 * 3 * n), c(4, 3, n))
  w <- matrix(runif(12, 0.2, 1), 4, 3)
  components <- distr_multivariate_normal(f64(loc), covariance_matrix = f64(sigma))
  d <- distr_mixture_same_family(distr_categorical(f64(w)), components)
  expect_equal(d$batch_shape, 4)
  expect_equal(d$event_shape, n)
  x <- d$sample(5)
  expect_equal(x$shape, c(5, 4, n))
  lp <- as_array(d$log_prob(x))
  xs <- as_array(x)
  for (i in 1:5) for (b in 1:4) {
    components <- vapply(1:3, function(j) mvn_log_density(xs[i, b, ], loc[b, j, ], sigma), 0)
    density <- sum(w[b, ] / sum(w[b, ]) * exp(components))
    expect_equal(lp[i, b], log(density), tolerance = 1e-10)
  }
  expect_equal(d$mean$shape, c(4, n))
  expect_equal(d$variance$shape, c(4, n))
  expect_equal(d$expand(c(2, 4))$batch_shape, c(2, 4))
})

test_that("multivariate: bad arguments are value errors naming the distribution and argument", {
  expect_error(distr_multivariate_normal(torch_zeros(2)),
               "distr_multivariate_normal: exactly one of covariance_matrix",
               class = "value_error")
  expect_error(distr_multivariate_normal(torch_zeros(2), torch_eye(2), scale_tril = torch_eye(2)),
               "exactly one")
  expect_error(distr_multivariate_normal(torch_tensor(1)$sum(), torch_eye(1)),
               "distr_multivariate_normal: loc must be at least one-dimensional")
  expect_error(distr_multivariate_normal(torch_zeros(3), torch_eye(2)),
               "covariance_matrix must be 3 x 3 matrices")
  expect_error(distr_multivariate_normal(torch_zeros(2), -torch_eye(2)),
               "covariance_matrix must satisfy constraint_positive_definite")
  expect_error(distr_multivariate_normal(torch_zeros(2), torch_tensor(rbind(c(1, 0.5), c(0, 1)))),
               "constraint_positive_definite")
  expect_error(distr_multivariate_normal(torch_zeros(2), precision_matrix = torch_zeros(2, 2)),
               "precision_matrix must satisfy")
  expect_error(distr_multivariate_normal(torch_zeros(2),
                                         scale_tril = torch_tensor(rbind(c(1, 1), c(0, 1)))),
               "scale_tril must satisfy constraint_lower_cholesky")
  two_trils <- torch_eye(2)$expand(c(2, 2, 2))
  expect_error(distr_multivariate_normal(torch_zeros(3, 2), scale_tril = two_trils),
               "do not broadcast")
  d <- distr_multivariate_normal(torch_zeros(2), torch_eye(2))
  expect_error(d$log_prob(torch_zeros(3)), "distr_multivariate_normal\\$log_prob: the rightmost")
  expect_error(d$log_prob(torch_tensor(c(NaN, 0))), "within the support")
  mix <- distr_categorical(torch_ones(2))
  expect_error(distr_mixture_same_family(distr_normal(0, 1), distr_normal(torch_zeros(2), 1)),
               "distr_mixture_same_family: mixture_distribution must be a distr_categorical")
  expect_error(distr_mixture_same_family(mix, "x"),
               "component_distribution must be a distribution")
  expect_error(distr_mixture_same_family(mix, distr_normal(torch_zeros(3), 1)),
               "has 2 components but the rightmost batch dim of component_distribution is 3")
  expect_error(distr_mixture_same_family(distr_categorical(torch_ones(3, 2)),
                                         distr_normal(torch_zeros(4, 2), 1)),
               "batch_shape of mixture_distribution")
  mixture <- distr_mixture_same_family(mix, distr_normal(torch_zeros(2), 1))
  expect_error(mixture$rsample(), class = "not_implemented_error")
  expect_error(mixture$entropy(), "distr_mixture_same_family\\$entropy is not implemented")
})

test_that("CUDA: multivariate normal and mixture agree with the CPU", {
  skip_if_not(cuda_is_available())
  seed <- fresh_torch_seed()
  n <- 3
  mu <- rnorm(n)
  sigma <- random_covariance(n)
  x <- matrix(rnorm(4 * n), 4)
  cpu <- distr_multivariate_normal(f64(mu), covariance_matrix = f64(sigma))
  gpu <- distr_multivariate_normal(f64(mu)$cuda(), precision_matrix = f64(solve(sigma))$cuda())
  expect_equal(as_array(gpu$log_prob(f64(x)$cuda())$cpu()), as_array(cpu$log_prob(f64(x))),
               tolerance = 1e-10)
  expect_equal(as_array(gpu$entropy()$cpu()), as_array(cpu$entropy()), tolerance = 1e-10)
  draws <- gpu$rsample(333334)
  expect_true(draws$is_cuda)
  expect_moments(draws, mu, diag(sigma), normal_fourth(diag(sigma)), seed, "CUDA multivariate")
  w <- runif(3, 0.2, 1)
  m <- rnorm(3)
  s <- runif(3, 0.5, 2)
  mixture <- function(device) {
    distr_mixture_same_family(distr_categorical(f64(w)$to(device = device)),
                              distr_normal(f64(m)$to(device = device), f64(s)$to(device = device)))
  }
  v <- rnorm(5)
  expect_equal(as_array(mixture("cuda")$log_prob(f64(v)$cuda())$cpu()),
               as_array(mixture("cpu")$log_prob(f64(v))), tolerance = 1e-12)
  expect_true(mixture("cuda")$sample(10)$is_cuda)
})
