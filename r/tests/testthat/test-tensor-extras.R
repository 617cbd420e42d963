# Functions composed from other ops, checked against base R on fresh random inputs.

dbl <- function(a) torch_tensor(a, dtype = torch_double())
# The transpose of a tensor made from t(a): a non-contiguous view with a's values.
dbl_t <- function(a) dbl(t(a))$t()

test_that("torch_flip reverses the given dims", {
  a <- random_array(3, 4, 2)
  expect_equal(as_array(torch_flip(dbl(a), 1)), a[3:1, , ])
  expect_equal(as_array(torch_flip(dbl(a), c(1, -1))), a[3:1, , 2:1])
  m <- random_array(4, 5)
  x <- dbl_t(m)
  expect_false(x$is_contiguous())
  expect_equal(as_array(x$flip(2)), m[, 5:1])
  expect_equal(dim(torch_flip(torch_zeros(0, 3), 1)), c(0L, 3L))
  expect_error(torch_flip(dbl(m), 3), "torch_flip: dims: Dimension out of range (expected to be in range of [-2, 2], but got 3)", fixed = TRUE)
  expect_error(torch_flip(dbl(m), c(1, 1)), "torch_flip: dims 1 appears more than once")
})

test_that("torch_roll shifts with wraparound", {
  m <- random_array(4, 5)
  shift_cols <- function(a, s) a[, ((seq_len(ncol(a)) - 1 - s) %% ncol(a)) + 1]
  shift_rows <- function(a, s) a[((seq_len(nrow(a)) - 1 - s) %% nrow(a)) + 1, ]
  expect_equal(as_array(torch_roll(dbl(m), 2, 2)), shift_cols(m, 2))
  expect_equal(as_array(torch_roll(dbl(m), -1, 1)), shift_rows(m, -1))
  expect_equal(as_array(torch_roll(dbl(m), c(1, 7), c(1, 2))), shift_cols(shift_rows(m, 1), 7))
  expect_equal(as_array(dbl_t(m)$roll(3, 2)), shift_cols(m, 3))
  # Without dims: over the row-major flattening.
  flat <- as.vector(t(m))
  rolled <- flat[((seq_along(flat) - 1 - 3) %% length(flat)) + 1]
  expect_equal(as_array(torch_roll(dbl(m), 3)), matrix(rolled, 4, 5, byrow = TRUE))
  expect_equal(dim(torch_roll(torch_zeros(0, 2), 1, 1)), c(0L, 2L))
  expect_error(torch_roll(dbl(m), c(1, 2), 1), "torch_roll: shifts and dims must have the same length")
})

test_that("torch_tril and torch_triu keep a triangle", {
  m <- random_array(4, 6)
  for (k in c(-2, 0, 1, 3)) {
    lower <- m * (col(m) - row(m) <= k)
    upper <- m * (col(m) - row(m) >= k)
    expect_equal(as_array(torch_tril(dbl(m), k)), lower)
    expect_equal(as_array(torch_triu(dbl(m), k)), upper)
  }
  expect_equal(as_array(torch_tril(dbl(m))), m * lower.tri(m, diag = TRUE))
  expect_equal(as_array(torch_triu(dbl(m))), m * upper.tri(m, diag = TRUE))
  s <- random_array(5, 5)
  expect_equal(as_array(dbl_t(s)$tril(-1)), s * lower.tri(s))
  b <- random_array(2, 3, 3)
  out <- as_array(torch_triu(dbl(b), 1))
  for (i in 1:2) expect_equal(out[i, , ], b[i, , ] * upper.tri(b[i, , ]))
  expect_equal(dim(torch_tril(torch_zeros(0, 3))), c(0L, 3L))
  expect_error(torch_tril(dbl(1:3)), "torch_tril: self must have at least 2 dims")
  expect_error(torch_triu(dbl(m), 0.5), "torch_triu: diagonal must be a whole number")
})

test_that("torch_diag builds and extracts diagonals", {
  v <- rnorm(4)
  expect_equal(as_array(torch_diag(dbl(v))), diag(v))
  for (k in c(-2, 1, 3)) {
    n <- length(v) + abs(k)
    ref <- matrix(0, n, n)
    ref[col(ref) - row(ref) == k] <- v
    expect_equal(as_array(torch_diag(dbl(v), k)), ref)
  }
  m <- random_array(4, 6)
  expect_equal(as_array(torch_diag(dbl(m))), diag(m))
  for (k in c(-3, -1, 2, 5)) expect_equal(as.vector(as_array(torch_diag(dbl(m), k))), m[col(m) - row(m) == k])
  expect_equal(as.vector(as_array(dbl_t(m)$diag(1))), m[col(m) - row(m) == 1])
  expect_equal(length(torch_diag(dbl(m), 6)), 0L)
  expect_equal(dim(torch_diag(torch_zeros(0))), c(0L, 0L))
  expect_error(torch_diag(torch_zeros(2, 2, 2)), "torch_diag: self must be 1-d or 2-d, got 3-d")
})

test_that("torch_outer is base R's outer", {
  a <- rnorm(3)
  b <- rnorm(5)
  expect_equal(as_array(torch_outer(dbl(a), dbl(b))), outer(a, b))
  expect_equal(as_array(dbl(a)$outer(dbl(b))), outer(a, b))
  expect_equal(dim(torch_outer(torch_zeros(0), dbl(b))), c(0L, 5L))
  expect_error(torch_outer(dbl(a), dbl(matrix(b, 1))), "torch_outer: vec2 must be 1-d, got 2-d")
})

test_that("torch_repeat_interleave, repeat and tile match rep", {
  m <- random_array(3, 4)
  expect_equal(as_array(torch_repeat_interleave(dbl(m), 2, 1)), m[rep(1:3, each = 2), ])
  expect_equal(as_array(torch_repeat_interleave(dbl(m), c(1, 0, 2, 3), 2)), m[, rep(1:4, times = c(1, 0, 2, 3))])
  expect_equal(as_array(torch_repeat_interleave(dbl(m), 3)), rep(as.vector(t(m)), each = 3))
  expect_equal(as_array(dbl_t(m)$repeat_interleave(2, -1)), m[, rep(1:4, each = 2)])
  expect_equal(length(torch_repeat_interleave(dbl(1:3), 0)), 0L)
  expect_error(torch_repeat_interleave(dbl(m), c(1, 2), 1), "torch_repeat_interleave: repeats must be one number or one per slice")
  expect_error(torch_repeat_interleave(dbl(m), -1), "torch_repeat_interleave: repeats must be non-negative")

  expect_equal(as_array(dbl(m)$`repeat`(c(2, 3))), m[rep(1:3, 2), rep(1:4, 3)])
  expect_equal(as_array(dbl_t(m)$`repeat`(2, 1)), m[rep(1:3, 2), ])
  r <- as_array(dbl(m)$`repeat`(c(2, 1, 1)))
  expect_equal(dim(r), c(2L, 3L, 4L))
  expect_equal(r[2, , ], m)
  expect_equal(dim(dbl(m)$`repeat`(c(0, 1))), c(0L, 4L))
  expect_error(dbl(m)$`repeat`(2), "repeat: sizes must have at least one entry per dim")

  expect_equal(as_array(torch_tile(dbl(m), 2)), m[, rep(1:4, 2)])
  expect_equal(as_array(torch_tile(dbl(m), c(2, 2))), m[rep(1:3, 2), rep(1:4, 2)])
  expect_error(torch_tile(dbl(m), 1.5), "torch_tile: sizes must be non-negative whole numbers")
})

test_that("isnan, isinf, isfinite and nan_to_num", {
  v <- c(rnorm(4), NaN, Inf, -Inf, 0)
  expect_identical(as_array(torch_isnan(dbl(v))), is.nan(v))
  expect_identical(as_array(torch_isinf(dbl(v))), is.infinite(v))
  expect_identical(as_array(torch_isfinite(dbl(v))), is.finite(v))
  expect_identical(as_array(torch_isnan(torch_tensor(1:3))), rep(FALSE, 3))
  expect_identical(as_array(torch_isfinite(torch_tensor(1:3))), rep(TRUE, 3))
  m <- matrix(v, 2)
  expect_identical(as_array(dbl_t(m)$isnan()), is.nan(m))
  expect_equal(length(torch_isnan(torch_zeros(0))), 0L)

  fixed <- v
  fixed[is.nan(v)] <- 1
  fixed[v == Inf & !is.nan(v)] <- 9
  fixed[v == -Inf & !is.nan(v)] <- -9
  expect_equal(as_array(torch_nan_to_num(dbl(v), nan = 1, posinf = 9, neginf = -9)), fixed)
  d <- as_array(torch_nan_to_num(dbl(v)))
  expect_equal(d[6:7], c(.Machine$double.xmax, -.Machine$double.xmax))
  expect_equal(d[5], 0)
  f <- as_array(torch_nan_to_num(torch_tensor(v)))
  expect_equal(f[6], 3.4028234663852886e38, tolerance = 1e-6)
  expect_error(torch_nan_to_num(dbl(v), nan = "a"), "torch_nan_to_num: nan must be a number")
  expect_error(torch_isnan("a"), "torch_isnan: self must be a tensor")
})

test_that("log2, log10, trunc, logit and xlogy", {
  p <- runif(6, 0.05, 0.95)
  expect_equal(as_array(torch_log2(dbl(p))), log2(p))
  expect_equal(as_array(torch_log10(dbl(p))), log10(p))
  z <- rnorm(6) * 5
  expect_equal(as_array(torch_trunc(dbl(z))), trunc(z))
  expect_equal(as_array(torch_logit(dbl(p))), qlogis(p))
  q <- c(0, 1, p)
  expect_equal(as_array(torch_logit(dbl(q), eps = 0.1)), qlogis(pmin(pmax(q, 0.1), 0.9)))
  pm <- matrix(p, 2)
  expect_equal(as_array(dbl_t(pm)$logit()), qlogis(pm))
  expect_error(torch_logit(dbl(p), eps = 1), "torch_logit: eps must be NULL or a number")

  x <- c(0, 0, rexp(4))
  y <- c(0, NaN, rexp(4))
  ref <- ifelse(x == 0 & !is.nan(y), 0, x * log(y))
  expect_equal(as_array(torch_xlogy(dbl(x), dbl(y))), ref)
  expect_equal(as_array(torch_xlogy(dbl(x), 2)), x * log(2))
  # A number keeps self's float64 (not a float32 tensor of the number).
  expect_equal(as_array(torch_xlogy(dbl(x), 1.2345678912)), x * log(1.2345678912), tolerance = 1e-12)
  expect_equal(torch_xlogy(dbl(x), 2)$dtype, torch_double())
  expect_equal(length(torch_xlogy(torch_zeros(0), torch_zeros(0))), 0L)
  expect_error(torch_xlogy(dbl(x), "a"), "torch_xlogy: other must be a tensor or a number")
})

test_that("amax, amin and count_nonzero reduce over several dims", {
  a <- random_array(3, 4, 5)
  expect_equal(as_array(torch_amax(dbl(a), c(1, 3))), apply(a, 2, max))
  expect_equal(as_array(torch_amin(dbl(a), -1)), apply(a, c(1, 2), min))
  expect_equal(as_array(torch_amax(dbl(a))), max(a))
  k <- as_array(torch_amin(dbl(a), c(2, 3), keepdim = TRUE))
  expect_equal(dim(k), c(3L, 1L, 1L))
  expect_equal(as.vector(k), apply(a, 1, min))
  m <- random_array(4, 6)
  expect_equal(as_array(dbl_t(m)$amax(1)), apply(m, 2, max))
  expect_error(torch_amax(dbl(a), c(1, 1)), "torch_amax: dim 1 appears more than once")
  expect_error(torch_amin(dbl(a), 4), "torch_amin: dim: Dimension out of range (expected to be in range of [-3, 3], but got 4)", fixed = TRUE)

  z <- m * (abs(m) > 0.7)
  expect_equal(as_array(torch_count_nonzero(dbl(z))), sum(z != 0))
  expect_equal(as_array(torch_count_nonzero(dbl(z), 2)), rowSums(z != 0))
  expect_equal(as_array(dbl_t(z)$count_nonzero(1)), colSums(z != 0))
  expect_equal(as_array(torch_count_nonzero(torch_zeros(0))), 0)
  expect_error(torch_count_nonzero(dbl(z), 1.5), "torch_count_nonzero: dim must be whole numbers")
})

test_that("nansum, nanmean, var_mean and std_mean", {
  m <- random_array(4, 5)
  m[sample(length(m), 5)] <- NaN
  expect_equal(as_array(torch_nansum(dbl(m))), sum(m, na.rm = TRUE))
  expect_equal(as_array(torch_nansum(dbl(m), 1)), colSums(m, na.rm = TRUE))
  expect_equal(as_array(torch_nanmean(dbl(m), 2)), rowMeans(m, na.rm = TRUE))
  expect_equal(as_array(dbl_t(m)$nanmean()), mean(m, na.rm = TRUE))
  expect_equal(as_array(torch_nansum(torch_zeros(0))), 0)
  expect_error(torch_nanmean(torch_tensor(1:3)), "torch_nanmean: self must have a floating dtype")

  a <- random_array(5, 3)
  vm <- torch_var_mean(dbl(a), 1)
  expect_equal(as_array(vm[[1]]), apply(a, 2, var))
  expect_equal(as_array(vm[[2]]), colMeans(a))
  sm <- torch_std_mean(dbl(a))
  expect_equal(as_array(sm[[1]]), sd(a))
  expect_equal(as_array(sm[[2]]), mean(a))
  sm0 <- torch_std_mean(dbl_t(a), 2, unbiased = FALSE, keepdim = TRUE)
  expect_equal(as.vector(as_array(sm0[[1]])), apply(a, 1, function(r) sqrt(mean((r - mean(r))^2))))
  expect_error(torch_var_mean("a"), "torch_var_mean: self must be a tensor")
})

test_that("allclose and equal compare whole tensors", {
  m <- random_array(3, 4)
  x <- dbl(m)
  expect_true(torch_allclose(x, dbl(m + 1e-9)))
  expect_false(torch_allclose(x, dbl(m + 1e-3)))
  expect_true(x$allclose(dbl(m + 1e-3), atol = 1e-2))
  expect_true(torch_allclose(x, dbl(m * (1 + 1e-3)), rtol = 1e-2, atol = 0))
  expect_true(torch_allclose(dbl_t(m), x))
  nan <- dbl(c(1, NaN, Inf))
  expect_false(torch_allclose(nan, nan))
  expect_true(torch_allclose(nan, nan, equal_nan = TRUE))
  expect_true(torch_allclose(torch_zeros(0), torch_zeros(0)))
  expect_error(torch_allclose(x, x, rtol = -1), "torch_allclose: rtol must be a non-negative number")

  expect_true(torch_equal(x, dbl_t(m)))
  expect_false(torch_equal(x, dbl(m + 1)))
  expect_false(torch_equal(x, dbl(m[1:2, ])))
  expect_true(x$equal(x$clone()))
  expect_error(torch_equal(x, "a"), "torch_equal: other must be a tensor")
})

test_that("gradients flow through the composed ops", {
  m <- random_array(3, 3)
  x <- dbl(m)$requires_grad_(TRUE)
  w <- random_array(3, 3)
  out <- torch_sum(torch_tril(x) * dbl(w)) + torch_sum(torch_flip(x, 1) * dbl(w)) + torch_sum(torch_diag(x))
  out$backward()
  expect_equal(as_array(x$grad), w * lower.tri(w, diag = TRUE) + w[3:1, ] + diag(3))
})

test_that("half() converts to float16", {
  expect_equal(dbl(c(1.5, 2))$half()$dtype, torch_float16())
})
