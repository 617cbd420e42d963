# torch_tensordot, torch_cross, torch_cdist, torch_hypot, torch_count_nonzero and
# torch_logspace against base R on fresh random inputs, gradients where they compose, errors.

arr <- function(...) array(rnorm(prod(c(...))), dim = c(...))

test_that("torch_tensordot contracts the dims it is given, as base R's sums", {
  a <- arr(3, 4, 5)
  b <- arr(4, 5, 2)
  got <- as_array(torch_tensordot(torch_tensor(a, dtype = torch_float64()),
                                  torch_tensor(b, dtype = torch_float64()), dims = 2))
  want <- matrix(a, 3, 20) %*% matrix(b, 20, 2)
  expect_equal(got, want, tolerance = 1e-12)
  # Explicit dims (1-based): a's 1st with b's 2nd.
  c1 <- arr(3, 6)
  d1 <- arr(2, 3)
  got <- as_array(torch_tensordot(torch_tensor(c1, dtype = torch_float64()),
                                  torch_tensor(d1, dtype = torch_float64()), dims = list(1, 2)))
  expect_equal(got, t(c1) %*% t(d1), tolerance = 1e-12)
  # dims = 0: the outer product.
  u <- rnorm(3)
  v <- rnorm(2)
  expect_equal(as_array(torch_tensordot(torch_tensor(u, dtype = torch_float64()),
                                        torch_tensor(v, dtype = torch_float64()), dims = 0)),
               outer(u, v), tolerance = 1e-12)
  expect_error(torch_tensordot(torch_randn(3, 4), torch_randn(5, 4), dims = 1),
               "contracted dimensions need to match, but first has size 4 in dim 2 and second has size 5 in dim 1")
  expect_error(torch_tensordot(torch_randn(3), torch_randn(3), dims = 2), "dims must be between 0 and 1")
})

test_that("torch_cross is the vector product along the dim of size 3, with gradients", {
  a <- arr(4, 3)
  b <- arr(4, 3)
  want <- cbind(a[, 2] * b[, 3] - a[, 3] * b[, 2], a[, 3] * b[, 1] - a[, 1] * b[, 3],
                a[, 1] * b[, 2] - a[, 2] * b[, 1])
  ta <- torch_tensor(a, dtype = torch_float64(), requires_grad = TRUE)
  tb <- torch_tensor(b, dtype = torch_float64())
  out <- torch_cross(ta, tb, dim = 2)
  expect_equal(as_array(out), want, tolerance = 1e-12)
  expect_equal(as_array(torch_cross(ta, tb)), want, tolerance = 1e-12)  # first dim of size 3
  # d/da of sum(a x b) = b x (1, 1, 1) row by row.
  out$sum()$backward()
  ones <- matrix(1, 4, 3)
  want_grad <- cbind(b[, 2] * ones[, 3] - b[, 3] * ones[, 2], b[, 3] * ones[, 1] - b[, 1] * ones[, 3],
                     b[, 1] * ones[, 2] - b[, 2] * ones[, 1])
  expect_equal(as_array(ta$grad), want_grad, tolerance = 1e-12)
  expect_error(torch_cross(torch_randn(4, 2), torch_randn(4, 2)), "inputs dimension \\(the first of size 3\\) must have length 3")
  expect_error(torch_cross(torch_randn(4, 3), torch_randn(3, 3)), "one shape")
})

test_that("torch_cdist matches base R's dist for p = 0, 1, 2, 3 and Inf", {
  x1 <- arr(5, 4)
  x2 <- arr(3, 4)
  t1 <- torch_tensor(x1, dtype = torch_float64())
  t2 <- torch_tensor(x2, dtype = torch_float64())
  for (p in c(1, 2, 3, Inf)) {
    method <- if (is.infinite(p)) "maximum" else "minkowski"
    full <- as.matrix(dist(rbind(x1, x2), method = method, p = if (is.infinite(p)) 2 else p))
    expect_equal(as_array(torch_cdist(t1, t2, p = p)), full[1:5, 6:8, drop = FALSE],
                 tolerance = 1e-10, ignore_attr = TRUE, info = paste("p", p))
  }
  x1[1, 2] <- x2[1, 2]
  zero <- as_array(torch_cdist(torch_tensor(x1, dtype = torch_float64()), t2, p = 0))
  expect_equal(zero[1, 1], sum(x1[1, ] != x2[1, ]))
  expect_error(torch_cdist(t1, torch_randn(3, 5)), "one M")
})

test_that("torch_hypot matches sqrt(a^2 + b^2) and does not overflow", {
  a <- rnorm(20) * 10
  b <- rnorm(20) * 10
  b[3] <- 0
  a[4] <- 0
  b[4] <- 0
  got <- as_array(torch_hypot(torch_tensor(a, dtype = torch_float64()), torch_tensor(b, dtype = torch_float64())))
  expect_equal(got, sqrt(a^2 + b^2), tolerance = 1e-12)
  big <- torch_tensor(2e38)  # float32: its square overflows, the result does not
  expect_equal(as.numeric(torch_hypot(big, big)), sqrt(2) * 2e38, tolerance = 1e-6)
})

test_that("torch_count_nonzero and torch_logspace", {
  m <- matrix(sample(c(0, 1, -2), 24, replace = TRUE), 4, 6)
  t <- torch_tensor(m)
  expect_equal(as.numeric(torch_count_nonzero(t)), sum(m != 0))
  expect_equal(as_array(torch_count_nonzero(t, dim = 1)), colSums(m != 0))
  expect_equal(torch_count_nonzero(t)$dtype, torch_int64())
  expect_equal(as_array(torch_logspace(-2, 3, 6, dtype = torch_float64())), 10^(-2:3), tolerance = 1e-14)
  expect_equal(as_array(torch_logspace(0, 4, 5, base = 2)), 2^(0:4))
  expect_equal(torch_logspace(0, 1, 3)$dtype, torch_float32())
  expect_error(torch_logspace(0, 1, 3, base = "e"), "base must be one number")
})

test_that("the products run on CUDA as on the CPU", {
  skip_if_cuda_not_available()
  a <- torch_randn(3, 4, 5)
  b <- torch_randn(4, 5, 2)
  expect_equal(as_array(torch_tensordot(a$cuda(), b$cuda())$cpu()), as_array(torch_tensordot(a, b)),
               tolerance = 1e-5)
  x <- torch_randn(6, 3)
  y <- torch_randn(6, 3)
  expect_equal(as_array(torch_cross(x$cuda(), y$cuda())$cpu()), as_array(torch_cross(x, y)), tolerance = 1e-6)
  expect_equal(as_array(torch_cdist(x$cuda(), y$cuda())$cpu()), as_array(torch_cdist(x, y)), tolerance = 1e-5)
})
