# The conveniences of tensor-like.R, tensor-diff-fill.R, tensor-random.R and
# creation-windows.R against base R: loops and closed forms on fresh
# random inputs; the random draws by their moments on large samples (bounds of several
# standard errors) and by torch_manual_seed() repeating them.

long <- function(x) torch_tensor(x, dtype = torch_long())
float_dtypes <- list(torch_float32(), torch_float64())
tolerance <- function(dtype) if (dtype == torch_float64()) 1e-12 else 1e-5

# A sample mean within k standard errors of its expectation.
expect_mean_near <- function(values, mean, sd, k = 6) {
  expect_lt(abs(base::mean(values) - mean), k * sd / sqrt(length(values)))
}
expect_near <- function(value, target, bound) expect_lt(abs(value - target), bound)

test_that("$expand_as, $view_as, $reshape_as and $type_as take other's shape or dtype", {
  for (device in test_devices()) {
    a <- random_array(3, 1)
    x <- torch_tensor(a, device = device)
    expect_equal(as_array(x$expand_as(torch_zeros(2, 3, 4))), array(rep(a, each = 2, times = 4), c(2, 3, 4))[, , ],
                 tolerance = 1e-6)
    b <- random_array(2, 6)
    y <- torch_tensor(b, device = device)
    # view and reshape keep row-major order.
    expect_equal(as_array(y$view_as(torch_zeros(3, 4))), matrix(as.vector(t(b)), 3, 4, byrow = TRUE), tolerance = 1e-6)
    expect_equal(as_array(y$t()$reshape_as(torch_zeros(12))), as.vector(b), tolerance = 1e-6)
    z <- y$type_as(torch_zeros(1, dtype = torch_int32()))
    expect_true(z$dtype == torch_int32())
    expect_equal(as_array(z), trunc(b))
  }
  expect_error(torch_zeros(2)$expand_as(c(2, 2)), class = "value_error", regexp = "expand_as: other must be a tensor")
})

test_that("$expand_as of a one-row tensor broadcasts as its definition says", {
  a <- random_array(1, 4)
  out <- as_array(torch_tensor(a)$expand_as(torch_zeros(3, 4)))
  expect_equal(out, matrix(a, 3, 4, byrow = TRUE), tolerance = 1e-6)
})

test_that("$new_zeros, $new_ones, $new_full, $new_empty and $new_tensor keep self's dtype and device", {
  for (device in test_devices()) {
    x <- torch_randn(2, dtype = torch_float64(), device = device)
    z <- x$new_zeros(c(2, 3))
    expect_equal(as_array(z), matrix(0, 2, 3))
    expect_true(z$dtype == torch_float64())
    expect_equal(z$device$type, x$device$type)
    expect_equal(as_array(x$new_ones(list(4))), rep(1, 4))
    f <- x$new_full(c(3, 1), 2.5, options = list(dtype = torch_float32(), requires_grad = TRUE))
    expect_equal(as_array(f), matrix(2.5, 3, 1))
    expect_true(f$dtype == torch_float32())
    expect_true(f$requires_grad)
    expect_equal(x$new_empty(c(0, 5))$shape, c(0, 5))
    t <- x$new_tensor(c(1L, 2L))
    expect_true(t$dtype == torch_float64())
    expect_equal(as_array(t), c(1, 2))
    expect_true(x$new_tensor(c(1.7, 2), dtype = torch_long())$dtype == torch_long())
    expect_false(x$new_ones(1)$requires_grad)
  }
  i <- torch_tensor(1:3)
  expect_true(i$new_zeros(2)$dtype == torch_long())
  expect_error(i$new_zeros(2, options = list(dtyp = torch_float())), class = "value_error", regexp = "new_zeros: options may hold")
  expect_error(i$new_ones(2, options = "float"), class = "value_error", regexp = "new_ones: options must be a list")
})

test_that("$nelement, torch_numel, torch_is_floating_point and torch_is_complex", {
  x <- torch_randn(3, 0, 2)
  expect_identical(x$nelement(), 0)
  expect_equal(torch_numel(torch_zeros(3, 4)), 12)
  expect_true(torch_is_floating_point(torch_zeros(1, dtype = torch_float64())))
  expect_false(torch_is_floating_point(torch_tensor(1:2)))
  expect_false(torch_tensor(TRUE)$is_floating_point())
  expect_false(torch_is_complex(torch_zeros(1)))
  expect_error(torch_numel(1:3), class = "value_error", regexp = "torch_numel: self must be a tensor")
})

# ---- diff, vander ---------------------------------------------------------------------------

# n-th differences along a matrix dim by base R's diff().
diff_ref <- function(a, n, dim) if (dim == 1) diff(a, differences = n) else t(diff(t(a), differences = n))

test_that("torch_diff and $diff match base R's diff, with prepend, append and views", {
  for (device in test_devices()) for (dtype in float_dtypes) {
    a <- random_array(5, 6)
    x <- torch_tensor(a, dtype = dtype, device = device)
    for (n in 1:3) for (dim in c(1, 2, -1)) {
      d <- if (dim < 0) 2 else dim
      expect_equal(as_array(torch_diff(x, n = n, dim = dim)), diff_ref(a, n, d), tolerance = tolerance(dtype) * 10)
    }
    expect_equal(as_array(x$t()$diff()), diff_ref(t(a), 1, 2), tolerance = tolerance(dtype) * 10)
    p <- random_array(1, 6)
    q <- random_array(2, 6)
    out <- x$diff(dim = 1, prepend = torch_tensor(p, dtype = dtype, device = device),
                  append = torch_tensor(q, dtype = dtype, device = device))
    expect_equal(as_array(out), diff(rbind(p, a, q)), tolerance = tolerance(dtype) * 10, ignore_attr = TRUE)
    expect_equal(as_array(x$diff(n = 0)), a, tolerance = tolerance(dtype))
  }
  v <- sample.int(100, 8)
  expect_equal(as_array(torch_diff(torch_tensor(v))), diff(v))
  expect_equal(torch_diff(torch_randn(3, 2), n = 5, dim = 1)$shape, c(0, 2))
  b <- c(TRUE, TRUE, FALSE, TRUE, FALSE, FALSE)
  expect_equal(as_array(torch_diff(torch_tensor(b))), xor(b[-1], b[-6]))
  expect_equal(torch_diff(torch_zeros(0))$shape, 0)
})

test_that("torch_diff's gradient is the closed form and bad input is refused", {
  x <- torch_randn(3, 4, dtype = torch_float64(), requires_grad = TRUE)
  torch_diff(x)$sum()$backward()
  # sum(x[, j + 1] - x[, j]) = x[, 4] - x[, 1].
  expect_equal(as_array(x$grad), matrix(c(-1, 0, 0, 1), 3, 4, byrow = TRUE))
  expect_error(torch_diff(torch_zeros(3), n = -1), class = "value_error", regexp = "torch_diff: n must be a whole number >= 0")
  expect_error(torch_diff(torch_zeros(3), dim = 2), regexp = "torch_diff: dim: Dimension out of range (expected to be in range of [-1, 1], but got 2)", fixed = TRUE)
})

vander_ref <- function(v, N, increasing) {
  out <- matrix(0, length(v), N)
  for (i in seq_along(v)) for (j in seq_len(N)) out[i, j] <- v[i]^(if (increasing) j - 1 else N - j)
  out
}

test_that("torch_vander matches its definition and differentiates at 0", {
  for (device in test_devices()) for (dtype in float_dtypes) {
    v <- random_array(5)
    x <- torch_tensor(v, dtype = dtype, device = device)
    expect_equal(as_array(torch_vander(x)), vander_ref(v, 5, FALSE), tolerance = tolerance(dtype) * 10)
    expect_equal(as_array(torch_vander(x, N = 3, increasing = TRUE)), vander_ref(v, 3, TRUE), tolerance = tolerance(dtype) * 10)
    expect_equal(as_array(torch_vander(x, N = 1)), matrix(1, 5, 1))
    expect_equal(torch_vander(x, N = 0)$shape, c(5, 0))
  }
  i <- torch_vander(torch_tensor(c(2L, -3L)), N = 4)
  expect_true(i$dtype == torch_long())
  expect_equal(as_array(i), vander_ref(c(2, -3), 4, FALSE))
  v <- c(0, 0.5, -1.5)
  x <- torch_tensor(v, dtype = torch_float64(), requires_grad = TRUE)
  torch_vander(x, N = 4)$sum()$backward()
  expect_equal(as_array(x$grad), 1 + 2 * v + 3 * v^2)
  expect_error(torch_vander(torch_zeros(2, 2)), class = "value_error", regexp = "torch_vander: x must be a 1-d tensor")
  expect_error(torch_vander(torch_zeros(2), N = -1), class = "value_error", regexp = "torch_vander: N must be")
})

# ---- index_fill, masked_scatter, renorm, clamp_min/max ---------------------------------------

index_fill_ref <- function(a, dim, index, value) {
  if (dim == 1) a[index, ] <- value else a[, index] <- value
  a
}

test_that("torch_index_fill, $index_fill and $index_fill_ set the 1-based slices", {
  for (device in test_devices()) for (dtype in float_dtypes) {
    a <- random_array(4, 5)
    x <- torch_tensor(a, dtype = dtype, device = device)
    for (dim in 1:2) {
      index <- sample.int(dim(a)[dim], 2)
      out <- torch_index_fill(x, dim, long(index)$to(device = device), -2.5)
      expect_equal(as_array(out), index_fill_ref(a, dim, index, -2.5), tolerance = tolerance(dtype))
    }
    # dim -1 is the last; a repeated index and a 0-d tensor value; a transposed view.
    out <- x$t()$index_fill(-1, long(c(2, 2, 4))$to(device = device), torch_tensor(7, dtype = dtype)$squeeze())
    expect_equal(as_array(out), index_fill_ref(t(a), 2, c(2, 4), 7), tolerance = tolerance(dtype))
    y <- x$clone()
    expect_identical(y$index_fill_(1, long(3)$to(device = device), 0), y)
    expect_equal(as_array(y), index_fill_ref(a, 1, 3, 0), tolerance = tolerance(dtype))
  }
  i <- matrix(sample.int(9, 6), 2, 3)
  expect_equal(as_array(torch_tensor(i)$index_fill(2, long(3), 100L)), index_fill_ref(i, 2, 3, 100))
  expect_equal(as_array(torch_zeros(3, 2)$index_fill(1, long(integer(0)), 1)), matrix(0, 3, 2))
  flags <- matrix(runif(6) < 0.5, 2, 3)
  expect_equal(as_array(torch_tensor(flags)$index_fill(2, c(1, 3), TRUE)), index_fill_ref(flags, 2, c(1, 3), TRUE))
  expect_error(torch_index_fill(torch_zeros(3), 1, long(1), "a"), class = "value_error",
               regexp = "torch_index_fill: value must be a number or a 0-d tensor")
  x <- torch_randn(3, 4, dtype = torch_float64(), requires_grad = TRUE)
  torch_index_fill(x, 2, long(c(1, 3)), 5)$sum()$backward()
  expect_equal(as_array(x$grad), matrix(c(0, 1, 0, 1), 3, 4, byrow = TRUE))
  expect_error(torch_index_fill(torch_zeros(3), 1, long(0), 1), regexp = "torch_index_fill: index 0 is out of range")
  expect_error(torch_index_fill(torch_zeros(3), 1, long(4), 1), regexp = "index 4 is out of range for a dim of size 3")
  expect_error(torch_index_fill(torch_zeros(3), 1, torch_tensor(1), 1), class = "value_error",
               regexp = "torch_index_fill: index must be a 1-d integer tensor")
  leaf <- torch_zeros(3, requires_grad = TRUE)
  expect_error(leaf$index_fill_(1, long(1), 2), class = "value_error", regexp = "index_fill_: a leaf Variable")
})

# masked_scatter's definition: the TRUE positions, in row-major order, take source's elements
# in row-major order.
masked_scatter_ref <- function(a, mask, source) {
  values <- as.vector(t(source))
  k <- 0
  for (i in seq_len(nrow(a))) for (j in seq_len(ncol(a))) {
    if (mask[i, j]) {
      k <- k + 1
      a[i, j] <- values[k]
    }
  }
  a
}

test_that("torch_masked_scatter and $masked_scatter(_) fill the mask in row-major order", {
  for (device in test_devices()) for (dtype in float_dtypes) {
    a <- random_array(3, 4)
    mask <- matrix(runif(12) < 0.5, 3, 4)
    s <- random_array(4, 3)
    x <- torch_tensor(a, dtype = dtype, device = device)
    source <- torch_tensor(s, dtype = dtype, device = device)
    expect_equal(as_array(torch_masked_scatter(x, torch_tensor(mask, device = device), source)),
                 masked_scatter_ref(a, mask, s), tolerance = tolerance(dtype))
    # A one-row mask broadcasts over self's rows; a transposed self.
    row <- matrix(c(TRUE, FALSE, TRUE), 1, 3)
    expect_equal(as_array(x$t()$masked_scatter(torch_tensor(row, device = device), source)),
                 masked_scatter_ref(t(a), row[rep(1, 4), ], s), tolerance = tolerance(dtype))
    y <- x$clone()
    y$masked_scatter_(torch_tensor(mask, device = device), source)
    expect_equal(as_array(y), masked_scatter_ref(a, mask, s), tolerance = tolerance(dtype))
    none <- matrix(FALSE, 3, 4)
    expect_equal(as_array(x$masked_scatter(torch_tensor(none, device = device), source[1:0])), a, tolerance = tolerance(dtype))
  }
  i <- matrix(sample.int(50, 6), 2, 3)
  m <- matrix(c(TRUE, TRUE, FALSE, FALSE, TRUE, TRUE), 2, 3)
  expect_equal(as_array(torch_tensor(i)$masked_scatter(torch_tensor(m), torch_tensor(-(1:6)))),
               masked_scatter_ref(i, m, matrix(-(1:6), 1)))
  x <- torch_randn(2, 3, dtype = torch_float64(), requires_grad = TRUE)
  s <- torch_randn(6, dtype = torch_float64(), requires_grad = TRUE)
  torch_masked_scatter(x, torch_tensor(m), s)$sum()$backward()
  expect_equal(as_array(x$grad), 1 - m + 0)
  expect_equal(as_array(s$grad), c(1, 1, 1, 1, 0, 0))
  expect_error(torch_masked_scatter(torch_zeros(2, 3), torch_tensor(m), torch_zeros(3)), class = "value_error",
               regexp = "torch_masked_scatter: mask selects 4 elements but source has only 3")
  expect_error(torch_masked_scatter(torch_zeros(2), torch_tensor(c(1, 0)), torch_zeros(2)), class = "value_error",
               regexp = "mask must be a bool tensor")
})

# renorm's definition: each slice along dim (all dims but dim reduced) whose p-norm is above
# maxnorm is scaled by maxnorm / (norm + 1e-7).
renorm_ref <- function(a, p, dim, maxnorm) {
  for (i in seq_len(dim(a)[dim])) {
    slice <- if (dim == 1) a[i, ] else a[, i]
    norm <- sum(abs(slice)^p)^(1 / p)
    if (norm > maxnorm) slice <- slice * maxnorm / (norm + 1e-7)
    if (dim == 1) a[i, ] <- slice else a[, i] <- slice
  }
  a
}

test_that("torch_renorm and $renorm cap each slice's p-norm", {
  for (device in test_devices()) for (dtype in float_dtypes) {
    a <- random_array(4, 6) * rep(c(0.1, 1, 3, 0.2), 6)
    x <- torch_tensor(a, dtype = dtype, device = device)
    for (p in c(1, 2, 3.5)) for (dim in 1:2) {
      expect_equal(as_array(torch_renorm(x, p, dim, 1.5)), renorm_ref(a, p, dim, 1.5), tolerance = tolerance(dtype) * 10)
    }
    expect_equal(as_array(x$t()$renorm(2, -1, 1)), renorm_ref(t(a), 2, 2, 1), tolerance = tolerance(dtype) * 10)
  }
  v <- random_array(5) * 3
  expect_equal(as_array(torch_tensor(v, dtype = torch_float64())$renorm(2, 1, 1)),
               ifelse(abs(v) > 1, v / (abs(v) + 1e-7), v))
  a <- random_array(3, 4) * 2
  x <- torch_tensor(a, dtype = torch_float64(), requires_grad = TRUE)
  weights <- random_array(3, 4)
  (torch_renorm(x, 2, 1, 1) * torch_tensor(weights, dtype = torch_float64()))$sum()$backward()
  expected <- numeric_grad(function(b) sum(renorm_ref(b, 2, 1, 1) * weights), a)
  expect_equal(as_array(x$grad), expected, tolerance = 1e-6)
  expect_error(torch_renorm(torch_zeros(2, 2), 0, 1, 1), class = "value_error", regexp = "torch_renorm: p must be a number > 0")
  expect_error(torch_renorm(torch_zeros(2, 2), 2, 1, -1), class = "value_error", regexp = "torch_renorm: maxnorm must be")
})

test_that("torch_clamp_max and torch_clamp_min take numbers and broadcasting tensors", {
  for (device in test_devices()) {
    a <- random_array(3, 4)
    x <- torch_tensor(a, dtype = torch_float64(), device = device)
    expect_equal(as_array(torch_clamp_max(x, 0.2)), pmin(a, 0.2))
    expect_equal(as_array(x$clamp_min(-0.1)), pmax(a, -0.1))
    b <- random_array(1, 4)
    bound <- torch_tensor(b, dtype = torch_float64(), device = device)
    expect_equal(as_array(torch_clamp_max(x, bound)), pmin(a, b[rep(1, 3), ]))
    expect_equal(as_array(torch_clamp_min(x$t(), bound$t())), pmax(t(a), t(b)[, rep(1, 3)]))
  }
  expect_equal(as_array(torch_clamp_min(torch_tensor(c(-3L, 4L)), 0L)), c(0, 4))
})

test_that("torch_one_hot and torch_narrow_copy are torch for R's", {
  classes <- sample.int(5, 7, replace = TRUE)
  expect_equal(as_array(torch_one_hot(long(classes), 5)), outer(classes, 1:5, `==`) + 0)
  # torch for R's torch_narrow_copy() takes start from 0 (torch_narrow_copy(1:10, 1, 1, 3) is
  # 2:4 in its own tests), unlike the method $narrow_copy(), which counts from 1.
  a <- random_array(4, 5)
  x <- torch_tensor(a, dtype = torch_float64())
  out <- torch_narrow_copy(x, 2, 2, 3)
  expect_equal(as_array(out), a[, 3:5])
  expect_true(out$is_contiguous())
  expect_equal(as_array(torch_narrow_copy(x, 1, 0, 2)), a[1:2, ])
  expect_equal(as_array(torch_narrow_copy(x, 2, -2, 2)), a[, 4:5])
  expect_equal(as_array(torch_narrow_copy(x, 2, -1, 1)), a[, 5, drop = FALSE])
  expect_equal(as_array(torch_narrow_copy(torch_tensor(1:10), dim = 1, start = 1, length = 3)), 2:4)
  expect_error(torch_narrow_copy(x, 1, "a", 2), class = "value_error", regexp = "torch_narrow_copy: start")
})

# ---- random draws ---------------------------------------------------------------------------

test_that("torch_bernoulli and $bernoulli draw 1 with probability p, repeatably", {
  n <- 1e5
  p <- 0.3
  for (device in test_devices()) for (dtype in float_dtypes) {
    draws <- as_array(torch_bernoulli(torch_full(n, p, dtype = dtype, device = device)))
    expect_true(all(draws %in% c(0, 1)))
    expect_mean_near(draws, p, sqrt(p * (1 - p)))
    draws <- as_array(torch_zeros(n, dtype = dtype, device = device)$bernoulli(0.8))
    expect_mean_near(draws, 0.8, 0.4)
  }
  # Per-element probabilities: 0 and 1 are certain.
  probs <- torch_tensor(rep(c(0, 1, 0.5), 2e4))
  draws <- matrix(as_array(torch_bernoulli(probs)), 3)
  expect_equal(draws[1, ], rep(0, 2e4))
  expect_equal(draws[2, ], rep(1, 2e4))
  expect_mean_near(draws[3, ], 0.5, 0.5)
  torch_manual_seed(11)
  first <- as_array(torch_bernoulli(torch_rand(50)))
  torch_manual_seed(11)
  expect_equal(as_array(torch_bernoulli(torch_rand(50))), first)
  expect_false(torch_bernoulli(torch_rand(3, requires_grad = TRUE))$requires_grad)
  expect_error(torch_bernoulli(torch_tensor(c(0.5, 1.5))), class = "value_error", regexp = "torch_bernoulli: p must hold")
  expect_error(torch_bernoulli(torch_zeros(2), 2), class = "value_error", regexp = "torch_bernoulli: p must be a probability")
  expect_error(torch_bernoulli(torch_zeros(2), 0.5, generator = 1), class = "value_error", regexp = "generator must be NULL or a torch_generator")
})

test_that("$bernoulli_ fills in place from a number or a tensor of probabilities", {
  n <- 1e5
  for (device in test_devices()) {
    x <- torch_empty(n, device = device)
    expect_identical(x$bernoulli_(0.25), x)
    expect_mean_near(as_array(x), 0.25, sqrt(0.25 * 0.75))
    i <- torch_zeros(n, dtype = torch_long(), device = device)$bernoulli_()
    expect_true(i$dtype == torch_long())
    expect_mean_near(as_array(i), 0.5, 0.5)
    halves <- torch_zeros(2, n / 2, device = device)$bernoulli_(torch_tensor(matrix(c(0.1, 0.9), 2, 1), device = device))
    expect_mean_near(as_array(halves[1, ]), 0.1, 0.3)
    expect_mean_near(as_array(halves[2, ]), 0.9, 0.3)
  }
  expect_error(torch_zeros(2, requires_grad = TRUE)$bernoulli_(), class = "value_error", regexp = "bernoulli_: a leaf Variable")
  expect_error(torch_zeros(2)$bernoulli_(torch_rand(3, 2)), regexp = "bernoulli_: the result has shape")
})

test_that("torch_poisson draws have the rate as mean and variance", {
  n <- 1e5
  for (device in test_devices()) for (dtype in float_dtypes) {
    # Rates on both sides of the sampler's switch at 10.
    for (rate in c(0.7, 4, 10, 60)) {
      draws <- as_array(torch_poisson(torch_full(n, rate, dtype = dtype, device = device)))
      expect_true(all(draws >= 0 & draws == round(draws)))
      expect_mean_near(draws, rate, sqrt(rate))
      # The variance of a sample variance is about (mu4 - sigma^4) / n = (rate + 2 rate^2) / n.
      expect_lt(abs(var(draws) - rate), 6 * sqrt((rate + 2 * rate^2) / n))
    }
  }
  # The frequency of each likely count against dpois, below and above the switch at 10.
  for (rate in c(4, 60)) {
    draws <- as_array(torch_poisson(torch_full(n, rate, dtype = torch_float64())))
    counts <- seq(max(0, rate - 3 * sqrt(rate)), rate + 3 * sqrt(rate))
    for (k in round(counts)) expect_near(mean(draws == k), dpois(k, rate), 6 * sqrt(dpois(k, rate) / n))
  }
  rates <- torch_tensor(rep(c(0, 2, 30), 2e4), dtype = torch_float64())
  draws <- matrix(as_array(torch_poisson(rates)), 3)
  expect_equal(draws[1, ], rep(0, 2e4))
  expect_mean_near(draws[2, ], 2, sqrt(2))
  expect_mean_near(draws[3, ], 30, sqrt(30))
  expect_near(mean(draws[2, ] == 0), exp(-2), 6 * sqrt(exp(-2) * (1 - exp(-2)) / 2e4))
  torch_manual_seed(3)
  first <- as_array(torch_poisson(torch_full(40, 25)))
  torch_manual_seed(3)
  expect_equal(as_array(torch_poisson(torch_full(40, 25))), first)
  expect_equal(torch_poisson(torch_zeros(0, 3))$shape, c(0, 3))
  expect_error(torch_poisson(torch_tensor(c(1, -1))), class = "value_error", regexp = "torch_poisson: rates must be >= 0")
  expect_error(torch_poisson(torch_tensor(1:2)), class = "value_error", regexp = "torch_poisson: self must hold floating rates")
})

test_that("torch__standard_gamma draws Gamma(alpha, 1), differentiably in alpha", {
  for (device in test_devices()) for (alpha in c(0.4, 3, 45)) {
    draws <- as_array(torch__standard_gamma(torch_full(2e4, alpha, dtype = "float64", device = device)))
    expect_true(all(draws > 0))
    # The empirical distribution function against pgamma at a few quantiles.
    for (q in c(0.1, 0.5, 0.9)) {
      x <- qgamma(q, alpha)
      expect_near(mean(draws <= x), q, 6 * sqrt(q * (1 - q) / 2e4))
    }
  }
  # The gradient is the implicit one: central differences of qgamma at the draw's quantile.
  alpha <- torch_tensor(c(0.3, 1, 2.5, 12, 300), dtype = "float64", requires_grad = TRUE)
  x <- torch__standard_gamma(alpha)
  x$sum()$backward()
  a <- as_array(alpha$detach())
  u <- pgamma(as_array(x$detach()), a)
  h <- 1e-5 * a
  expected <- (qgamma(u, a + h) - qgamma(u, a - h)) / (2 * h)
  expect_equal(as_array(alpha$grad), expected, tolerance = 1e-6)
  expect_equal(as_array(torch__standard_gamma_grad(alpha$detach(), x$detach())), expected, tolerance = 1e-6)
  torch_manual_seed(4)
  first <- as_array(torch__standard_gamma(torch_full(30, 2)))
  torch_manual_seed(4)
  expect_equal(as_array(torch__standard_gamma(torch_full(30, 2))), first)
  expect_equal(torch__standard_gamma(torch_ones(0, 2))$shape, c(0, 2))
  expect_error(torch__standard_gamma(torch_tensor(c(1, 0))), class = "value_error",
               regexp = "torch__standard_gamma: self \\(the concentration\\) must be > 0 and finite, got 0")
  expect_error(torch__standard_gamma(torch_tensor(1:2)), class = "value_error", regexp = "floating")
  expect_error(torch__standard_gamma_grad(torch_ones(3), torch_ones(2)), regexp = "alpha's shape")
})

test_that("Poisson and Gamma draws on CUDA are the CPU's for a seed", {
  skip_if_not(cuda_is_available())
  rates <- c(0, 0.5, 7, 10, 33, 900)
  torch_manual_seed(12)
  cpu_p <- as_array(torch_poisson(torch_tensor(rep(rates, 500), dtype = "float64")))
  cpu_g <- as_array(torch__standard_gamma(torch_tensor(rep(rates + 0.1, 500), dtype = "float64")))
  torch_manual_seed(12)
  gpu_p <- as_array(torch_poisson(torch_tensor(rep(rates, 500), dtype = "float64", device = "cuda")))
  gpu_g <- as_array(torch__standard_gamma(torch_tensor(rep(rates + 0.1, 500), dtype = "float64", device = "cuda")))
  # The same per-element streams: equal but where an acceptance test lands within an ulp of its
  # bound (libm and CUDA's log, exp and lgamma differ in the last place).
  expect_gt(mean(gpu_p == cpu_p), 0.999)
  expect_gt(mean(abs(gpu_g - cpu_g) <= 1e-12 * cpu_g), 0.999)
})

test_that("torch_multinomial with replacement draws 1-based categories in proportion", {
  weights <- c(0.5, 0, 2, 1.5)
  probs <- weights / sum(weights)
  n <- 1e5
  for (device in test_devices()) for (dtype in float_dtypes) {
    draws <- torch_multinomial(torch_tensor(weights, dtype = dtype, device = device), n, replacement = TRUE)
    expect_true(draws$dtype == torch_long())
    expect_equal(draws$shape, n)
    draws <- as_array(draws)
    expect_true(all(draws %in% c(1, 3, 4)))
    for (k in c(1, 3, 4)) expect_mean_near(draws == k, probs[k], sqrt(probs[k] * (1 - probs[k])))
  }
  rows <- torch_tensor(rbind(c(1, 0, 0), c(0, 0, 1)))
  expect_equal(as_array(torch_multinomial(rows, 5, TRUE)), rbind(rep(1, 5), rep(3, 5)))
  torch_manual_seed(5)
  first <- as_array(torch_multinomial(torch_rand(3, 6), 4, TRUE))
  torch_manual_seed(5)
  expect_equal(as_array(torch_multinomial(torch_rand(3, 6), 4, TRUE)), first)
})

test_that("torch_multinomial without replacement draws distinct categories, the first in proportion", {
  weights <- c(1, 3, 0, 6)
  probs <- weights / sum(weights)
  rows <- 2e4
  w <- torch_tensor(matrix(weights, rows, 4, byrow = TRUE))
  draws <- as_array(torch_multinomial(w, 3))
  expect_equal(dim(draws), c(rows, 3))
  expect_true(all(apply(draws, 1, function(r) length(unique(r)) == 3 && !(3 %in% r))))
  for (k in c(1, 2, 4)) expect_mean_near(draws[, 1] == k, probs[k], sqrt(probs[k] * (1 - probs[k])))
  # The second draw: P(second = k) = sum over j != k of p_j p_k / (1 - p_j).
  second <- sapply(1:4, function(k) sum(sapply(setdiff(1:4, k), function(j) probs[j] * probs[k] / (1 - probs[j]))))
  for (k in c(1, 2, 4)) expect_mean_near(draws[, 2] == k, second[k], sqrt(second[k] * (1 - second[k])))
  expect_equal(sort(as_array(torch_multinomial(torch_tensor(c(2, 1, 5)), 3))), 1:3)
  expect_error(torch_multinomial(torch_tensor(weights), 4), class = "value_error", regexp = "without replacement")
  expect_error(torch_multinomial(torch_tensor(c(1, -1)), 1), class = "value_error", regexp = "weights must be finite and >= 0")
  expect_error(torch_multinomial(torch_zeros(2), 1), class = "value_error", regexp = "positive sum")
  expect_error(torch_multinomial(torch_ones(2, 2, 2), 1), class = "value_error", regexp = "1-d or 2-d")
  expect_error(torch_multinomial(torch_ones(3), 0), class = "value_error", regexp = "num_samples must be")
})

test_that("$exponential_, $geometric_, $log_normal_ and $cauchy_ fill with their distributions", {
  n <- 1e5
  for (device in test_devices()) for (dtype in float_dtypes) {
    x <- torch_empty(n, dtype = dtype, device = device)
    expect_identical(x$exponential_(lambd = 2.5), x)
    draws <- as_array(x)
    expect_true(all(draws >= 0))
    expect_mean_near(draws, 1 / 2.5, 1 / 2.5)
    expect_lt(abs(var(draws) - 1 / 2.5^2), 6 * sqrt(8 / 2.5^4 / n))  # mu4 - sigma^4 = 8 / lambda^4

    p <- 0.3
    draws <- as_array(x$geometric_(p))
    expect_true(all(draws >= 1 & draws == round(draws)))
    expect_mean_near(draws, 1 / p, sqrt(1 - p) / p)
    expect_near(mean(draws == 1), p, 6 * sqrt(p * (1 - p) / n))

    logs <- log(as_array(x$log_normal_(mean = 0.5, std = 0.25)))
    expect_mean_near(logs, 0.5, 0.25)
    expect_lt(abs(sd(logs) - 0.25), 6 * 0.25 / sqrt(2 * n))

    # Cauchy has no mean: its quartiles are median -/+ sigma.
    draws <- as_array(x$cauchy_(median = 1, sigma = 2))
    expect_near(mean(draws < 1), 0.5, 6 * 0.5 / sqrt(n))
    expect_near(mean(draws < 3), 0.75, 6 * sqrt(0.75 * 0.25 / n))
    expect_near(mean(draws < -1), 0.25, 6 * sqrt(0.75 * 0.25 / n))
  }
  g <- torch_zeros(1000, dtype = torch_int32())$geometric_(0.5)
  expect_true(g$dtype == torch_int32())
  expect_true(all(as_array(g) >= 1))
  torch_manual_seed(9)
  first <- as_array(torch_empty(20)$exponential_())
  torch_manual_seed(9)
  expect_equal(as_array(torch_empty(20)$exponential_()), first)
  expect_error(torch_empty(2)$exponential_(0), class = "value_error", regexp = "exponential_: lambd must be a number > 0")
  expect_error(torch_empty(2)$geometric_(1), class = "value_error", regexp = "geometric_: p must be a probability in \\(0, 1\\)")
  expect_error(torch_empty(2)$cauchy_(sigma = -1), class = "value_error", regexp = "cauchy_: sigma must be")
  expect_error(torch_empty(2)$log_normal_(std = 0), class = "value_error", regexp = "log_normal_: std must be")
  expect_error(torch_tensor(1:2)$exponential_(), class = "value_error", regexp = "exponential_: self must be a floating tensor")
  expect_error(torch_zeros(2, requires_grad = TRUE)$cauchy_(), class = "value_error", regexp = "cauchy_: a leaf Variable")
  # Without grad mode, a leaf that requires grad can be filled, as in torch.
  w <- torch_zeros(4, requires_grad = TRUE)
  with_no_grad(w$exponential_())
  expect_true(all(as_array(w) > 0))
})

test_that("$random_ draws whole numbers from [from, to - 1]", {
  n <- 1e5
  for (device in test_devices()) for (dtype in list(torch_float32(), torch_float64(), torch_long(), torch_int32())) {
    x <- torch_empty(n, dtype = dtype, device = device)
    draws <- as_array(x$random_(-3, 5))
    expect_true(x$dtype == dtype)
    expect_setequal(unique(draws), -3:4)
    expect_mean_near(draws, 0.5, sqrt((8^2 - 1) / 12))
    draws <- as_array(x$random_(6))
    expect_setequal(unique(draws), 0:5)
    draws <- as_array(x$random_()$to(dtype = torch_float64()))
    expect_true(all(draws >= 0 & draws == round(draws)))
  }
  expect_true(all(as_array(torch_empty(100, dtype = torch_int8())$random_()) %in% 0:127))
  expect_lte(max(as_array(torch_empty(1000, dtype = torch_float16())$random_())), 2048)
  torch_manual_seed(2)
  first <- as_array(torch_empty(30)$random_(0, 1000))
  torch_manual_seed(2)
  expect_equal(as_array(torch_empty(30)$random_(0, 1000)), first)
  expect_error(torch_empty(2)$random_(5, 5), class = "value_error", regexp = "random_: from must be less than to")
  expect_error(torch_empty(2)$random_(0.5, 3), class = "value_error", regexp = "random_: from must be a whole number")
  expect_error(torch_empty(2, dtype = torch_int8())$random_(0, 200), class = "value_error",
               regexp = "random_: \\[from, to - 1\\] = \\[0, 199\\] must lie in \\[-128, 127\\]")
  expect_error(torch_empty(2, dtype = torch_uint8())$random_(-1, 3), class = "value_error", regexp = "must lie in \\[0, 255\\]")
})

# ---- windows --------------------------------------------------------------------------------

# The symmetric closed forms at n = 0 ... L - 1 with N = L - 1; periodic: N = L.
window_ref <- function(kind, L, periodic, alpha = 0.54, beta = 0.46, kaiser_beta = 12) {
  if (L == 0) return(numeric(0))
  if (L == 1) return(1)
  N <- if (periodic) L else L - 1
  n <- 0:(L - 1)
  switch(kind,
    hann = 0.5 - 0.5 * cos(2 * pi * n / N),
    hamming = alpha - beta * cos(2 * pi * n / N),
    blackman = 0.42 - 0.5 * cos(2 * pi * n / N) + 0.08 * cos(4 * pi * n / N),
    bartlett = 1 - abs(2 * n / N - 1),
    kaiser = besselI(kaiser_beta * sqrt(1 - (2 * n / N - 1)^2), 0) / besselI(kaiser_beta, 0)
  )
}

test_that("the window functions match their closed forms, periodic and symmetric", {
  windows <- list(hann = torch_hann_window, hamming = torch_hamming_window, blackman = torch_blackman_window,
                  bartlett = torch_bartlett_window, kaiser = torch_kaiser_window)
  for (device in test_devices()) for (kind in names(windows)) for (dtype in float_dtypes) {
    for (L in c(0, 1, 2, 7, 16)) for (periodic in c(TRUE, FALSE)) {
      w <- windows[[kind]](L, periodic, dtype = dtype, device = device)
      expect_true(w$dtype == dtype)
      expect_equal(w$shape, L)
      expect_equal(as_array(w), window_ref(kind, L, periodic), tolerance = tolerance(dtype) * 10)
    }
  }
  expect_equal(as_array(torch_hamming_window(9, FALSE, alpha = 0.6, beta = 0.3, dtype = torch_float64())),
               window_ref("hamming", 9, FALSE, alpha = 0.6, beta = 0.3))
  for (beta in c(0, 3.3, 20)) {
    expect_equal(as_array(torch_kaiser_window(11, TRUE, beta = beta, dtype = torch_float64())),
                 window_ref("kaiser", 11, TRUE, kaiser_beta = beta), tolerance = 1e-12)
  }
  expect_true(torch_hann_window(4)$dtype == torch_get_default_dtype())
  expect_true(torch_blackman_window(4, requires_grad = TRUE)$requires_grad)
  expect_false(torch_kaiser_window(4)$requires_grad)
  expect_equal(as_array(torch_kaiser_window(6)), window_ref("kaiser", 6, TRUE), tolerance = 1e-5)
  expect_error(torch_hann_window(-1), class = "value_error", regexp = "torch_hann_window: window_length must be a whole number >= 0")
  expect_error(torch_bartlett_window(4, periodic = NA), class = "value_error", regexp = "torch_bartlett_window: periodic must be TRUE or FALSE")
  expect_error(torch_blackman_window(4, dtype = torch_long()), class = "value_error", regexp = "dtype must be a floating dtype")
  expect_error(torch_kaiser_window(4, beta = -1), class = "value_error", regexp = "torch_kaiser_window: beta must be")
})

test_that("head() and tail() take rows as base R's, as copies, on every device", {
  v <- sample(20L)
  m <- matrix(rnorm(24), 8, 3)
  for (dev in test_devices()) {
    tv <- torch_tensor(v, device = dev)
    tm <- torch_tensor(m, dtype = torch_double(), device = dev)
    for (n in c(6L, 3L, 0L, 25L, -2L, -30L)) {
      expect_identical(as.array(head(tv, n)$cpu()), head(v, n), info = paste(dev, n))
      expect_identical(as.array(tail(tv, n)$cpu()), tail(v, n), info = paste(dev, n))
      expect_equal(as.array(head(tm, n)$cpu()), unname(head(m, n)), info = paste(dev, n))
      expect_equal(as.array(tail(tm, n)$cpu()), unname(tail(m, n)), info = paste(dev, n))
    }
    expect_identical(as.array(head(tv)$cpu()), head(v))
    h <- head(tm, 2)
    h$zero_()  # a copy: the tensor keeps its values
    expect_equal(as.array(tm$cpu()), m)
    expect_true(head(tm)$device == tm$device)
  }
  expect_error(head(torch_tensor(1)$squeeze()), "head\\(\\): a 0-dim tensor has no rows",
               class = "rcuda_value_error")
  expect_error(tail(torch_ones(3), 1.5), "tail: n must be a whole number", class = "rcuda_value_error")
})
