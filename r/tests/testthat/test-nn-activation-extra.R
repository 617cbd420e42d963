# Extra activations, channel dropout, local response norm, pixel shuffles and distances,
# checked against base R on fresh random inputs (closed forms and plain loops in double).

dbl <- function(a) torch_tensor(a, dtype = torch_float64())
flt <- function(a) torch_tensor(a, dtype = torch_float32())
# The transpose of a tensor made from t(a): a non-contiguous view with a's values.
dbl_t <- function(a) dbl(t(a))$t()
sigmoid_ref <- function(x) 1 / (1 + exp(-x))
softplus_ref <- function(x) ifelse(x > 20, x, log1p(exp(x)))

# Each: the function, the module, and the closed form.
elementwise <- list(
  celu = list(function(x) nnf_celu(x, 1.7), nn_celu(1.7), function(x) ifelse(x > 0, x, 1.7 * (exp(x / 1.7) - 1))),
  selu = list(nnf_selu, nn_selu(), function(x) {
    1.0507009873554804934 * ifelse(x > 0, x, 1.6732632423543772849 * (exp(x) - 1))
  }),
  hardswish = list(nnf_hardswish, nn_hardswish(), function(x) x * pmin(pmax(x + 3, 0), 6) / 6),
  hardsigmoid = list(nnf_hardsigmoid, nn_hardsigmoid(), function(x) pmin(pmax(x + 3, 0), 6) / 6),
  mish = list(nnf_mish, nn_mish(), function(x) x * tanh(log1p(exp(x)))),
  softsign = list(nnf_softsign, nn_softsign(), function(x) x / (1 + abs(x))),
  tanhshrink = list(nnf_tanhshrink, nn_tanhshrink(), function(x) x - tanh(x)),
  softshrink = list(function(x) nnf_softshrink(x, 0.7), nn_softshrink(0.7), function(x) {
    ifelse(x > 0.7, x - 0.7, ifelse(x < -0.7, x + 0.7, 0))
  }),
  hardshrink = list(function(x) nnf_hardshrink(x, 0.7), nn_hardshrink(0.7), function(x) ifelse(abs(x) > 0.7, x, 0)),
  threshold = list(function(x) nnf_threshold(x, 0.3, -2), nn_threshold(0.3, -2), function(x) ifelse(x > 0.3, x, -2)),
  logsigmoid = list(nnf_logsigmoid, nn_log_sigmoid(), function(x) -log1p(exp(-x))),
  rrelu_eval = list(function(x) nnf_rrelu(x, 0.1, 0.3), local({
    m <- nn_rrelu(0.1, 0.3)
    m$eval()
    m
  }), function(x) ifelse(x > 0, x, 0.2 * x))
)

test_that("elementwise activations match their closed forms, as functions and modules", {
  for (name in names(elementwise)) {
    f <- elementwise[[name]]
    a <- random_array(5, 7) * 3
    expect_equal(as_array(f[[1]](dbl(a))), f[[3]](a), tolerance = 1e-12, info = name)
    expect_equal(as_array(f[[2]](dbl(a))), f[[3]](a), tolerance = 1e-12, info = name)
    # Non-contiguous input.
    x <- dbl_t(a)
    expect_false(x$is_contiguous())
    expect_equal(as_array(f[[1]](x)), f[[3]](a), tolerance = 1e-12, info = name)
    # float32 keeps its dtype.
    y <- f[[1]](flt(a))
    expect_true(y$dtype == torch_float32(), info = name)
    expect_equal(as_array(y), f[[3]](as_array(flt(a))), tolerance = 1e-5, info = name)
    # Empty.
    expect_equal(dim(f[[1]](torch_zeros(0, 3))), c(0L, 3L), info = name)
  }
})

test_that("activations on large inputs stay finite", {
  x <- dbl(c(-800, -30, 30, 800))
  expect_equal(as_array(nnf_logsigmoid(x)), c(-800, -30 - log1p(exp(-30)), -log1p(exp(-30)), 0))
  expect_equal(as_array(nnf_celu(x, 2)), c(-2, 2 * expm1(-15), 30, 800))
  expect_equal(as_array(nnf_mish(x)), c(-800 * tanh(log1p(exp(-800))), -30 * tanh(log1p(exp(-30))), 30, 800))
  g <- dbl(c(-3, 50, 800))$requires_grad_(TRUE)
  nnf_celu(g, 0.5)$sum()$backward()
  expect_equal(as_array(g$grad), c(exp(-6), 1, 1))
})

test_that("integer inputs: threshold and hardshrink keep the dtype, softsign and tanhshrink give floats", {
  v <- sample(-5:5, 8, replace = TRUE)
  i <- torch_tensor(v)
  out <- nnf_threshold(i, 1, 7)
  expect_true(out$dtype == torch_int64())
  expect_equal(as.numeric(as_array(out)), ifelse(v > 1, v, 7))
  out <- nnf_hardshrink(i, 2)
  expect_true(out$dtype == torch_int64())
  expect_equal(as.numeric(as_array(out)), ifelse(abs(v) > 2, v, 0))
  expect_equal(as.numeric(as_array(nnf_softsign(i))), v / (1 + abs(v)), tolerance = 1e-6)
  expect_equal(as.numeric(as_array(nnf_tanhshrink(i))), v - tanh(v), tolerance = 1e-6)
  expect_error(nnf_selu(i), class = "value_error", regexp = "nnf_selu: input must be a floating tensor.*int64")
})

test_that("inplace = TRUE writes into the input and returns it", {
  cases <- list(
    celu = list(function(x) nnf_celu(x, 0.5, inplace = TRUE), function(x) ifelse(x > 0, x, 0.5 * expm1(x / 0.5))),
    selu = list(function(x) nnf_selu(x, inplace = TRUE), elementwise$selu[[3]]),
    hardswish = list(function(x) nnf_hardswish(x, inplace = TRUE), elementwise$hardswish[[3]]),
    hardsigmoid = list(function(x) nnf_hardsigmoid(x, inplace = TRUE), elementwise$hardsigmoid[[3]]),
    mish = list(function(x) nnf_mish(x, inplace = TRUE), elementwise$mish[[3]]),
    threshold = list(function(x) nnf_threshold(x, 0, 5, inplace = TRUE), function(x) ifelse(x > 0, x, 5)),
    rrelu = list(function(x) nnf_rrelu(x, 0.2, 0.4, inplace = TRUE), function(x) ifelse(x > 0, x, 0.3 * x))
  )
  for (name in names(cases)) {
    a <- random_array(3, 4) * 3
    x <- dbl(a)
    out <- cases[[name]][[1]](x)
    expect_equal(as_array(x), cases[[name]][[2]](a), tolerance = 1e-12, info = name)
    expect_equal(as_array(out), as_array(x), info = name)
  }
})

test_that("gradients match the closed forms", {
  a <- random_array(3, 4) * 3
  grads <- list(
    celu = list(function(x) nnf_celu(x, 1.3), function(x) ifelse(x > 0, 1, exp(x / 1.3))),
    selu = list(nnf_selu, function(x) 1.0507009873554804934 * ifelse(x > 0, 1, 1.6732632423543772849 * exp(x))),
    hardswish = list(nnf_hardswish, function(x) ifelse(x < -3, 0, ifelse(x > 3, 1, x / 3 + 0.5))),
    mish = list(nnf_mish, function(x) {
      sp <- log1p(exp(x))
      tanh(sp) + x * (1 - tanh(sp)^2) * sigmoid_ref(x)
    }),
    softsign = list(nnf_softsign, function(x) 1 / (1 + abs(x))^2),
    tanhshrink = list(nnf_tanhshrink, function(x) tanh(x)^2),
    softshrink = list(function(x) nnf_softshrink(x, 0.5), function(x) (abs(x) > 0.5) * 1),
    logsigmoid = list(nnf_logsigmoid, function(x) 1 - sigmoid_ref(x))
  )
  for (name in names(grads)) {
    x <- dbl(a)$requires_grad_(TRUE)
    grads[[name]][[1]](x)$sum()$backward()
    expect_equal(as_array(x$grad), grads[[name]][[2]](a), tolerance = 1e-10, info = name)
  }
})

test_that("argument errors name the function, the argument and the value", {
  x <- torch_randn(3)
  expect_error(nnf_celu(x, 0), class = "value_error", regexp = "nnf_celu: alpha must be nonzero")
  expect_error(nnf_softshrink(x, -1), class = "value_error", regexp = "nnf_softshrink: lambd must be >= 0, got -1")
  expect_error(nnf_threshold(x, 0.5), class = "value_error", regexp = "nnf_threshold: value is required")
  expect_error(nnf_hardshrink(x, "a"), class = "value_error", regexp = "nnf_hardshrink: lambd must be a single number")
  expect_error(nnf_mish(1:3), class = "value_error", regexp = "nnf_mish: input must be a tensor, got integer")
  expect_error(nnf_rrelu(x, 0.5, 0.1), class = "value_error", regexp = "nnf_rrelu: lower \\(0.5\\) must not exceed upper \\(0.1\\)")
})

test_that("nnf_softmin is the softmax of the negated input", {
  a <- random_array(4, 5)
  ref <- function(a, margin) {
    e <- exp(-a)
    if (margin == 1) sweep(e, 2, colSums(e), "/") else sweep(e, 1, rowSums(e), "/")
  }
  expect_equal(as_array(nnf_softmin(dbl(a), 2)), ref(a, 2))
  expect_equal(as_array(nnf_softmin(dbl(a), 1)), ref(a, 1))
  expect_equal(as_array(nnf_softmin(dbl_t(a), -1)), ref(a, 2))
  expect_equal(as_array(nn_softmin(1)(dbl(a))), ref(a, 1))
  y <- nnf_softmin(flt(a), 2, dtype = torch_float64())
  expect_true(y$dtype == torch_float64())
  expect_equal(as_array(y), ref(as_array(flt(a)), 2))
  expect_error(nnf_softmin(dbl(a)), class = "value_error", regexp = "nnf_softmin: dim is required")
})

test_that("nnf_glu gates the first half by the sigmoid of the second", {
  a <- random_array(3, 6)
  ref <- a[, 1:3] * sigmoid_ref(a[, 4:6])
  expect_equal(as_array(nnf_glu(dbl(a))), ref)
  expect_equal(as_array(nn_glu(2)(dbl(a))), ref)
  b <- random_array(4, 5)
  expect_equal(as_array(nnf_glu(dbl(b), 1)), b[1:2, ] * sigmoid_ref(b[3:4, ]))
  expect_equal(as_array(nnf_glu(dbl_t(b), 1)), b[1:2, ] * sigmoid_ref(b[3:4, ]))
  expect_equal(as_array(nnf_glu(flt(a))), ref, tolerance = 1e-6)
  expect_equal(dim(nnf_glu(torch_zeros(0, 4))), c(0L, 2L))
  x <- dbl(a)$requires_grad_(TRUE)
  nnf_glu(x)$sum()$backward()
  s <- sigmoid_ref(a[, 4:6])
  expect_equal(as_array(x$grad), cbind(s, a[, 1:3] * s * (1 - s)))
  expect_error(nnf_glu(dbl(b)), class = "value_error", regexp = "nnf_glu: the size of dim -1 must be even to halve it, got 5")
  expect_error(nnf_glu(dbl(a), 3), class = "value_error", regexp = "nnf_glu: dim 3 is out of range")
})

test_that("nnf_prelu takes one weight or one per channel", {
  a <- random_array(2, 3, 4)
  w <- c(0.1, -0.5, 2)
  ref <- a
  for (c in 1:3) ref[, c, ] <- ifelse(a[, c, ] > 0, a[, c, ], w[c] * a[, c, ])
  expect_equal(as_array(nnf_prelu(dbl(a), dbl(w))), ref)
  expect_equal(as_array(nnf_prelu(dbl(a), dbl(0.3))), ifelse(a > 0, a, 0.3 * a))
  m <- random_array(4, 3)
  expect_equal(as_array(nnf_prelu(dbl_t(m), dbl(w))), ifelse(m > 0, m, rep(w, each = 4) * m))
  expect_equal(as_array(nnf_prelu(flt(m), flt(w))), ifelse(m > 0, m, rep(w, each = 4) * m), tolerance = 1e-6)
  expect_equal(dim(nnf_prelu(torch_zeros(0, 3), flt(w))), c(0L, 3L))
  # Gradients: input's slope where negative, weight's the sum of the negative inputs.
  x <- dbl(a)$requires_grad_(TRUE)
  wt <- dbl(w)$requires_grad_(TRUE)
  nnf_prelu(x, wt)$sum()$backward()
  slopes <- array(rep(w, each = 2), dim(a))
  expect_equal(as_array(x$grad), ifelse(a > 0, 1, slopes))
  expect_equal(as_array(wt$grad), sapply(1:3, function(c) sum(pmin(a[, c, ], 0))))
  expect_error(nnf_prelu(dbl(a), dbl(c(1, 2))), class = "value_error",
               regexp = "nnf_prelu: weight has 2 elements but input has 3 channels")
  # The module: a parameter per channel, filled with init.
  mod <- nn_prelu(3, init = 0.1)
  expect_equal(as_array(mod$weight), rep(0.1, 3), tolerance = 1e-7)
  expect_true(mod$weight$requires_grad)
  expect_equal(as_array(mod(dbl(a)$to(dtype = torch_float32()))), ifelse(a > 0, a, 0.1 * a), tolerance = 1e-6)
  expect_equal(length(mod$parameters), 1)
})

test_that("nnf_rrelu in training draws each negative slope from [lower, upper], repeatably", {
  a <- -abs(random_array(50, 40)) - 0.1
  torch_manual_seed(7)
  y1 <- as_array(nnf_rrelu(dbl(a), 0.1, 0.3, training = TRUE))
  slopes <- y1 / a
  expect_true(all(slopes >= 0.1 & slopes <= 0.3))
  expect_gt(sd(as.vector(slopes)), 0.04)
  expect_equal(mean(slopes), 0.2, tolerance = 0.01)
  torch_manual_seed(7)
  expect_equal(as_array(nnf_rrelu(dbl(a), 0.1, 0.3, training = TRUE)), y1)
  # Positive values pass through; the gradient is each element's slope.
  b <- random_array(6, 5)
  x <- dbl(b)$requires_grad_(TRUE)
  y <- nnf_rrelu(x, 0.1, 0.3, training = TRUE)
  yv <- as_array(y)
  expect_equal(yv[b > 0], b[b > 0])
  y$sum()$backward()
  expect_equal(as_array(x$grad), ifelse(b > 0, 1, yv / b))
  # The module draws in training mode and uses the mean slope in evaluation.
  m <- nn_rrelu(0.1, 0.3)
  expect_false(isTRUE(all.equal(as_array(m(dbl(a))), 0.2 * a)))
  m$eval()
  expect_equal(as_array(m(dbl(a))), 0.2 * a)
})

test_that("nnf_dropout2d zeroes whole channels and scales the rest", {
  a <- random_array(4, 6, 3, 5) + 10
  torch_manual_seed(3)
  y <- as_array(nnf_dropout2d(dbl(a), p = 0.4))
  kept <- 0
  for (n in 1:4) for (c in 1:6) {
    plane <- y[n, c, , ]
    dropped <- all(plane == 0)
    kept <- kept + !dropped
    if (!dropped) expect_equal(plane, a[n, c, , ] / 0.6)
  }
  expect_true(kept > 0 && kept < 24)
  torch_manual_seed(3)
  expect_equal(as_array(nnf_dropout2d(dbl(a), p = 0.4)), y)
  # The same draws for float32, and a non-contiguous input.
  torch_manual_seed(3)
  expect_equal(as_array(nnf_dropout2d(dbl(a)$permute(c(1, 2, 4, 3)), p = 0.4)), aperm(y, c(1, 2, 4, 3)))
  y32 <- nnf_dropout2d(flt(a), p = 0.5)
  expect_true(y32$dtype == torch_float32())
  # Evaluation, p = 0 and p = 1.
  expect_equal(as_array(nnf_dropout2d(dbl(a), training = FALSE)), a)
  expect_equal(as_array(nnf_dropout2d(dbl(a), p = 0)), a)
  expect_equal(as_array(nnf_dropout2d(dbl(a), p = 1)), array(0, dim(a)))
  # Gradient: the same mask, scaled.
  x <- dbl(a)$requires_grad_(TRUE)
  out <- nnf_dropout2d(x, p = 0.5)
  out$sum()$backward()
  expect_equal(as_array(x$grad), ifelse(as_array(out) == 0, 0, 2))
  # inplace, the module, warnings and errors.
  x <- dbl(a)
  torch_manual_seed(3)
  ret <- nnf_dropout2d(x, p = 0.4, inplace = TRUE)
  expect_equal(as_array(x), y)
  expect_equal(as_array(ret), y)
  m <- nn_dropout2d(0.4)
  torch_manual_seed(3)
  expect_equal(as_array(m(dbl(a))), y)
  m$eval()
  expect_equal(as_array(m(dbl(a))), a)
  expect_warning(nnf_dropout2d(torch_randn(3, 10, 10)), "3-d input")
  expect_warning(nnf_dropout2d(torch_randn(3, 10)), "2-d input")
  expect_error(nnf_dropout2d(dbl(a), p = 1.5), class = "value_error", regexp = "nnf_dropout2d: p must be a probability in \\[0, 1\\], got 1.5")
  expect_error(nn_dropout2d(-0.1), class = "value_error", regexp = "nn_dropout2d: p must be a probability")
})

lrn_ref <- function(a, size, alpha, beta, k) {
  C <- dim(a)[2]
  out <- a
  for (c in 1:C) {
    window <- (c - size %/% 2):(c + (size - 1) %/% 2)
    window <- window[window >= 1 & window <= C]
    s <- 0
    for (j in window) s <- s + a[, j, , drop = FALSE]^2
    out[, c, ] <- a[, c, ] / (k + alpha / size * s[, 1, ])^beta
  }
  out
}

test_that("nnf_local_response_norm divides by the windowed sum of squares across channels", {
  a <- random_array(2, 7, 5) * 3
  for (size in c(1, 2, 3, 4)) {
    expect_equal(as_array(nnf_local_response_norm(dbl(a), size, alpha = 0.3, beta = 0.6, k = 2)),
                 lrn_ref(a, size, 0.3, 0.6, 2), info = size)
  }
  expect_equal(as_array(nnf_local_response_norm(dbl(a), 3)), lrn_ref(a, 3, 1e-4, 0.75, 1))
  expect_equal(as_array(nn_local_response_norm(3, 0.3, 0.6, 2)(dbl(a))), lrn_ref(a, 3, 0.3, 0.6, 2))
  expect_equal(as_array(nnf_local_response_norm(dbl(a)$transpose(2, 3)$transpose(2, 3), 3, 0.3)),
               lrn_ref(a, 3, 0.3, 0.75, 1))
  expect_equal(as_array(nnf_local_response_norm(flt(a), 3, 0.3)), lrn_ref(a, 3, 0.3, 0.75, 1), tolerance = 1e-5)
  # 4-d input (N, C, H, W): the same across channels at each position.
  b <- random_array(2, 5, 3, 2)
  out <- as_array(nnf_local_response_norm(dbl(b), 2, alpha = 0.5))
  for (w in 1:2) expect_equal(out[, , , w], lrn_ref(b[, , , w], 2, 0.5, 0.75, 1))
  expect_equal(dim(nnf_local_response_norm(torch_zeros(0, 3, 4), 2)), c(0L, 3L, 4L))
  # Gradient against central differences.
  x0 <- random_array(1, 4, 3)
  x <- dbl(x0)$requires_grad_(TRUE)
  nnf_local_response_norm(x, 3, alpha = 0.5, beta = 0.7, k = 1)$sum()$backward()
  fd <- numeric_grad(function(a) sum(lrn_ref(a, 3, 0.5, 0.7, 1)), x0)
  expect_equal(as_array(x$grad), fd, tolerance = 1e-6)
  expect_error(nnf_local_response_norm(dbl(matrix(1, 2, 2)), 2), class = "value_error",
               regexp = "nnf_local_response_norm: input must have 3 or more dims")
  expect_error(nnf_local_response_norm(dbl(a), 0), class = "value_error",
               regexp = "nnf_local_response_norm: size must be a positive whole number, got 0")
})

test_that("nnf_pixel_shuffle and nnf_pixel_unshuffle move channels to space and back", {
  r <- 2
  a <- random_array(2, 3 * r * r, 3, 4)
  ref <- array(0, c(2, 3, 3 * r, 4 * r))
  for (n in 1:2) for (c in 1:3) for (i in 1:r) for (j in 1:r) for (h in 1:3) for (w in 1:4) {
    ref[n, c, (h - 1) * r + i, (w - 1) * r + j] <- a[n, (c - 1) * r * r + (i - 1) * r + j, h, w]
  }
  expect_equal(as_array(nnf_pixel_shuffle(dbl(a), r)), ref)
  expect_equal(as_array(nn_pixel_shuffle(r)(dbl(a))), ref)
  expect_equal(as_array(nnf_pixel_unshuffle(dbl(ref), r)), a)
  expect_equal(as_array(nn_pixel_unshuffle(r)(dbl(ref))), a)
  # No batch dim, extra batch dims, a non-contiguous input, float32 and integers.
  expect_equal(as_array(nnf_pixel_shuffle(dbl(a[1, , , ]), r)), ref[1, , , ])
  expect_equal(dim(nnf_pixel_shuffle(torch_zeros(2, 2, 8, 1, 1), 2)), c(2L, 2L, 2L, 2L, 2L))
  expect_equal(as_array(nnf_pixel_shuffle(dbl(aperm(a, c(1, 2, 4, 3)))$transpose(3, 4), r)), ref)
  expect_equal(as_array(nnf_pixel_shuffle(flt(a), r)), ref, tolerance = 1e-6)
  i <- torch_tensor(array(1:48, c(1, 4, 3, 4)))
  expect_true(nnf_pixel_shuffle(i, 2)$dtype == i$dtype)
  expect_equal(as.numeric(as_array(nnf_pixel_unshuffle(nnf_pixel_shuffle(i, 2), 2))), as.numeric(array(1:48, c(1, 4, 3, 4))))
  expect_equal(dim(nnf_pixel_shuffle(torch_zeros(0, 4, 2, 2), 2)), c(0L, 1L, 4L, 4L))
  # The gradient is the inverse permutation.
  x <- dbl(a)$requires_grad_(TRUE)
  weights <- random_array(2, 3, 3 * r, 4 * r)
  (nnf_pixel_shuffle(x, r) * dbl(weights))$sum()$backward()
  expect_equal(as_array(x$grad), as_array(nnf_pixel_unshuffle(dbl(weights), r)))
  expect_error(nnf_pixel_shuffle(dbl(a), 3), class = "value_error",
               regexp = "nnf_pixel_shuffle: the channel count \\(12\\) must be divisible by upscale_factor\\^2 \\(9\\)")
  expect_error(nnf_pixel_unshuffle(dbl(a), 2), class = "value_error",
               regexp = "nnf_pixel_unshuffle: height \\(3\\) and width \\(4\\) must be divisible by downscale_factor \\(2\\)")
  expect_error(nnf_pixel_shuffle(dbl(matrix(1, 2, 2)), 1), class = "value_error",
               regexp = "nnf_pixel_shuffle: input must have 3 or more dims")
})

test_that("nnf_cosine_similarity matches the normalised dot product, broadcasting", {
  a <- random_array(4, 5)
  b <- random_array(4, 5)
  ref <- sapply(1:4, function(i) sum(a[i, ] * b[i, ]) / sqrt(sum(a[i, ]^2) * sum(b[i, ]^2)))
  expect_equal(as_array(nnf_cosine_similarity(dbl(a), dbl(b))), ref)
  expect_equal(as_array(nn_cosine_similarity()(dbl(a), dbl(b))), ref)
  expect_equal(as_array(nnf_cosine_similarity(dbl_t(a), dbl(b))), ref)
  ref1 <- sapply(1:5, function(j) sum(a[, j] * b[, j]) / sqrt(sum(a[, j]^2) * sum(b[, j]^2)))
  expect_equal(as_array(nnf_cosine_similarity(dbl(a), dbl(b), dim = 1)), ref1)
  expect_equal(as_array(nnf_cosine_similarity(flt(a), flt(b))), ref, tolerance = 1e-6)
  # Broadcasting: one row against four.
  v <- a[1, ]
  refb <- sapply(1:4, function(i) sum(v * b[i, ]) / sqrt(sum(v^2) * sum(b[i, ]^2)))
  expect_equal(as_array(nnf_cosine_similarity(dbl(matrix(v, 1)), dbl(b))), refb)
  # A zero vector gives 0 (its norm is clamped at eps).
  expect_equal(as_array(nnf_cosine_similarity(dbl(matrix(0, 1, 3)), dbl(matrix(1, 1, 3)))), 0)
  expect_equal(dim(nnf_cosine_similarity(torch_zeros(0, 3), torch_zeros(0, 3))), 0L)
  # Gradient: d/dx cos = y / (|x||y|) - cos x / |x|^2.
  x <- dbl(a)$requires_grad_(TRUE)
  nnf_cosine_similarity(x, dbl(b))$sum()$backward()
  g <- t(sapply(1:4, function(i) {
    nx <- sqrt(sum(a[i, ]^2))
    ny <- sqrt(sum(b[i, ]^2))
    b[i, ] / (nx * ny) - ref[i] * a[i, ] / nx^2
  }))
  expect_equal(as_array(x$grad), g)
  expect_error(nnf_cosine_similarity(dbl(a), dbl(matrix(1, 3, 5))), class = "value_error",
               regexp = "nnf_cosine_similarity: shapes \\[4, 5\\] and \\[3, 5\\] do not broadcast")
  expect_error(nnf_cosine_similarity(torch_tensor(1:3), torch_tensor(1:3), dim = 1), class = "value_error",
               regexp = "nnf_cosine_similarity: x1 must be a floating tensor")
})

test_that("nnf_pairwise_distance is the p-norm of x1 - x2 + eps over the last dim", {
  a <- random_array(4, 5)
  b <- random_array(4, 5)
  eps <- 1e-6
  for (p in c(1, 2, 3, Inf)) {
    d <- a - b + eps
    ref <- if (is.infinite(p)) apply(abs(d), 1, max) else rowSums(abs(d)^p)^(1 / p)
    expect_equal(as_array(nnf_pairwise_distance(dbl(a), dbl(b), p = p)), ref, info = p)
    expect_equal(as_array(nn_pairwise_distance(p)(dbl(a), dbl(b))), ref, info = p)
  }
  ref <- sqrt(rowSums((a - b + eps)^2))
  expect_equal(as_array(nnf_pairwise_distance(dbl_t(a), dbl(b), keepdim = TRUE)), matrix(ref, 4, 1))
  expect_equal(as_array(nnf_pairwise_distance(flt(a), flt(b))), ref, tolerance = 1e-5)
  v <- rnorm(5)
  expect_equal(as_array(nnf_pairwise_distance(dbl(v), dbl(b))), sqrt(colSums((v - t(b) + eps)^2)))
  expect_equal(dim(nnf_pairwise_distance(torch_zeros(0, 3), torch_zeros(0, 3))), 0L)
  x <- dbl(a)$requires_grad_(TRUE)
  nnf_pairwise_distance(x, dbl(b))$sum()$backward()
  expect_equal(as_array(x$grad), (a - b + eps) / ref)
  expect_error(nnf_pairwise_distance(dbl(a), dbl(b), p = -1), class = "value_error",
               regexp = "nnf_pairwise_distance: p must be >= 0, got -1")
})
