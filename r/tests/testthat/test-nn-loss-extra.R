# Margin, embedding, triplet and likelihood losses against PyTorch's documented formulas in base
# R loops on as_array() values; every reduction, float32 and float64, 1-based classes.

ex_dtypes <- list(float32 = torch_float32(), float64 = torch_float64())
ex_tol <- list(float32 = 1e-5, float64 = 1e-10)
ex_tensor <- function(x, dtype = torch_float64(), requires_grad = FALSE) {
  torch_tensor(x, dtype = dtype, requires_grad = requires_grad)
}
ex_reduce <- function(losses, reduction) {
  switch(reduction, none = losses, mean = mean(losses), sum = sum(losses))
}
ex_signs <- function(n) sample(c(-1, 1), n, replace = TRUE)
# Every reduction of a loss against its per-element reference, in both float dtypes.
ex_check_reductions <- function(compute, reference, info) {
  for (name in names(ex_dtypes)) {
    for (reduction in c("none", "mean", "sum")) {
      out <- compute(ex_dtypes[[name]], reduction)
      expect_equal(out$dtype == ex_dtypes[[name]], TRUE, info = paste(info, name, reduction))
      expect_equal(as.numeric(as_array(out)), as.numeric(ex_reduce(reference, reduction)),
                   tolerance = ex_tol[[name]], info = paste(info, name, reduction))
    }
  }
}

test_that("nnf_margin_ranking_loss is max(0, -y (x1 - x2) + margin)", {
  x1 <- rnorm(7)
  x2 <- rnorm(7)
  y <- ex_signs(7)
  ref <- pmax(0, -y * (x1 - x2) + 0.3)
  ex_check_reductions(function(dtype, reduction) {
    nnf_margin_ranking_loss(ex_tensor(x1, dtype), ex_tensor(x2, dtype), ex_tensor(y, dtype), 0.3, reduction)
  }, ref, "margin_ranking")
  # Broadcasting: [3, 4] inputs against a [3, 1] target; a transposed (non-contiguous) input1.
  a <- matrix(rnorm(12), 4, 3)
  b <- matrix(rnorm(12), 3, 4)
  t3 <- ex_signs(3)
  out <- nnf_margin_ranking_loss(ex_tensor(a)$t(), ex_tensor(b), ex_tensor(matrix(t3, 3, 1)), reduction = "none")
  ref <- matrix(0, 3, 4)
  for (i in 1:3) for (j in 1:4) ref[i, j] <- max(0, -t3[i] * (a[j, i] - b[i, j]))
  expect_equal(as_array(out), ref)
  # Empty: "sum" is 0, "none" is empty.
  e <- torch_randn(0)
  expect_equal(as_array(nnf_margin_ranking_loss(e, e, e, reduction = "sum")), 0)
  expect_equal(nnf_margin_ranking_loss(e, e, e, reduction = "none")$shape, 0L)
  expect_error(nnf_margin_ranking_loss(torch_randn(3), torch_randn(4), torch_randn(3)),
               class = "value_error", regexp = "nnf_margin_ranking_loss: the shapes of input1 \\[3\\], input2 \\[4\\]")
  expect_error(nnf_margin_ranking_loss(torch_randn(3), torch_randn(3), torch_randn(3), margin = "a"),
               class = "value_error", regexp = "nnf_margin_ranking_loss: margin must be a number")
})

test_that("nnf_hinge_embedding_loss is x for y = 1 and max(0, margin - x) for y = -1", {
  x <- rnorm(9)
  y <- ex_signs(9)
  ref <- ifelse(y == 1, x, pmax(0, 0.5 - x))
  ex_check_reductions(function(dtype, reduction) {
    nnf_hinge_embedding_loss(ex_tensor(x, dtype), ex_tensor(y, dtype), margin = 0.5, reduction = reduction)
  }, ref, "hinge_embedding")
  # Default margin 1, a [2, 3] input against a [3] target, non-contiguous.
  m <- matrix(rnorm(6), 3, 2)
  t3 <- ex_signs(3)
  out <- nnf_hinge_embedding_loss(ex_tensor(m)$t(), ex_tensor(t3), reduction = "none")
  ref <- matrix(0, 2, 3)
  for (i in 1:2) for (j in 1:3) ref[i, j] <- if (t3[j] == 1) m[j, i] else max(0, 1 - m[j, i])
  expect_equal(as_array(out), ref)
  expect_error(nnf_hinge_embedding_loss(torch_randn(2, 3), torch_randn(2)),
               class = "value_error", regexp = "nnf_hinge_embedding_loss: the shapes of input \\[2, 3\\], target \\[2\\]")
})

test_that("nnf_soft_margin_loss is log(1 + exp(-y x)), with its gradient", {
  x <- matrix(rnorm(12, sd = 3), 3, 4)
  y <- matrix(ex_signs(12), 3, 4)
  ref <- log(1 + exp(-y * x))
  ex_check_reductions(function(dtype, reduction) {
    nnf_soft_margin_loss(ex_tensor(x, dtype), ex_tensor(y, dtype), reduction)
  }, ref, "soft_margin")
  # Large margins do not overflow: log(1 + exp(200)) is 200.
  expect_equal(as_array(nnf_soft_margin_loss(torch_tensor(-200), torch_tensor(1))), 200, tolerance = 1e-6)
  xt <- ex_tensor(x, requires_grad = TRUE)
  nnf_soft_margin_loss(xt, ex_tensor(y))$backward()
  numeric <- numeric_grad(function(v) as_array(nnf_soft_margin_loss(ex_tensor(v), ex_tensor(y))), x)
  expect_equal(as_array(xt$grad), numeric, tolerance = 1e-6)
})

test_that("nnf_cosine_embedding_loss is 1 - cos for y = 1 and max(0, cos - margin) for y = -1", {
  a <- matrix(rnorm(20), 5, 4)
  b <- matrix(rnorm(20), 5, 4)
  y <- ex_signs(5)
  ref <- numeric(5)
  for (i in 1:5) {
    cosine <- sum(a[i, ] * b[i, ]) / sqrt(sum(a[i, ]^2) * sum(b[i, ]^2))
    ref[i] <- if (y[i] == 1) 1 - cosine else max(0, cosine - 0.2)
  }
  ex_check_reductions(function(dtype, reduction) {
    nnf_cosine_embedding_loss(ex_tensor(a, dtype), ex_tensor(b, dtype), ex_tensor(y, dtype), 0.2, reduction)
  }, ref, "cosine_embedding")
  # The default reduction is the first of c("mean", "sum", "none"); non-contiguous inputs.
  out <- nnf_cosine_embedding_loss(ex_tensor(t(a))$t(), ex_tensor(t(b))$t(), ex_tensor(y), margin = 0.2)
  expect_equal(as_array(out), mean(ref))
  # One pair: 1-d inputs and a 0-d target.
  cosine <- sum(a[1, ] * b[1, ]) / sqrt(sum(a[1, ]^2) * sum(b[1, ]^2))
  out <- nnf_cosine_embedding_loss(ex_tensor(a[1, ]), ex_tensor(b[1, ]), torch_tensor(-1, dtype = torch_float64())$reshape(integer(0)))
  expect_equal(as_array(out), max(0, cosine))
  # Gradient against finite differences.
  at <- ex_tensor(a, requires_grad = TRUE)
  nnf_cosine_embedding_loss(at, ex_tensor(b), ex_tensor(y), reduction = "sum")$backward()
  numeric <- numeric_grad(function(v) {
    as_array(nnf_cosine_embedding_loss(ex_tensor(v), ex_tensor(b), ex_tensor(y), reduction = "sum"))
  }, a)
  expect_equal(as_array(at$grad), numeric, tolerance = 1e-6)
  expect_error(nnf_cosine_embedding_loss(torch_randn(5, 4), torch_randn(5, 4), torch_randn(5, 1)),
               class = "value_error", regexp = "nnf_cosine_embedding_loss: target must be 0-d or 1-d")
  expect_error(nnf_cosine_embedding_loss(torch_randn(5, 4), torch_randn(5), torch_randn(5)),
               class = "value_error", regexp = "needs 2-d input1 and input2, got shapes \\[5, 4\\] and \\[5\\]")
  expect_error(nnf_cosine_embedding_loss(torch_randn(5, 4), torch_randn(5, 4), torch_randn(3)),
               class = "value_error", regexp = "target \\[3\\] do not broadcast")
})

# ||x1 - x2 + eps||_p per row, as torch's pairwise distance.
ex_distance <- function(u, v, p = 2, eps = 1e-6) {
  d <- abs(u - v + eps)
  if (is.infinite(p)) max(d) else sum(d^p)^(1 / p)
}

test_that("nnf_triplet_margin_loss is max(0, d(a, p) - d(a, n) + margin), with swap and its gradient", {
  a <- matrix(rnorm(15), 5, 3)
  pos <- matrix(rnorm(15), 5, 3)
  neg <- matrix(rnorm(15), 5, 3)
  for (p in c(1, 2, 3)) {
    for (swap in c(FALSE, TRUE)) {
      ref <- numeric(5)
      for (i in 1:5) {
        dn <- ex_distance(a[i, ], neg[i, ], p)
        if (swap) dn <- min(dn, ex_distance(pos[i, ], neg[i, ], p))
        ref[i] <- max(0, ex_distance(a[i, ], pos[i, ], p) - dn + 1.5)
      }
      ex_check_reductions(function(dtype, reduction) {
        nnf_triplet_margin_loss(ex_tensor(a, dtype), ex_tensor(pos, dtype), ex_tensor(neg, dtype),
                                margin = 1.5, p = p, swap = swap, reduction = reduction)
      }, ref, paste("triplet p", p, "swap", swap))
    }
  }
  # Broadcasting one negative against every row, non-contiguous anchors.
  one_neg <- matrix(rnorm(3), 1, 3)
  out <- nnf_triplet_margin_loss(ex_tensor(t(a))$t(), ex_tensor(pos), ex_tensor(one_neg), reduction = "none")
  ref <- vapply(1:5, function(i) max(0, ex_distance(a[i, ], pos[i, ]) - ex_distance(a[i, ], one_neg[1, ]) + 1), 0)
  expect_equal(as_array(out), ref)
  at <- ex_tensor(a, requires_grad = TRUE)
  nnf_triplet_margin_loss(at, ex_tensor(pos), ex_tensor(neg), margin = 3)$backward()
  numeric <- numeric_grad(function(v) {
    as_array(nnf_triplet_margin_loss(ex_tensor(v), ex_tensor(pos), ex_tensor(neg), margin = 3))
  }, a)
  expect_equal(as_array(at$grad), numeric, tolerance = 1e-6)
  expect_error(nnf_triplet_margin_loss(torch_randn(5, 3), torch_randn(5, 3), torch_randn(3)),
               class = "value_error", regexp = "nnf_triplet_margin_loss: anchor, positive and negative must have the same number of dims")
  expect_error(nnf_triplet_margin_loss(torch_randn(5, 3), torch_randn(4, 3), torch_randn(5, 3)),
               class = "value_error", regexp = "positive \\[4, 3\\]")
  expect_error(nnf_triplet_margin_loss(torch_randn(5, 3), torch_randn(5, 3), torch_randn(5, 3), swap = NA),
               class = "value_error", regexp = "swap must be TRUE or FALSE")
})

test_that("nnf_triplet_margin_with_distance_loss takes any distance, the pairwise one by default", {
  a <- matrix(rnorm(12), 4, 3)
  pos <- matrix(rnorm(12), 4, 3)
  neg <- matrix(rnorm(12), 4, 3)
  ref <- vapply(1:4, function(i) max(0, ex_distance(a[i, ], pos[i, ]) - ex_distance(a[i, ], neg[i, ]) + 1), 0)
  ex_check_reductions(function(dtype, reduction) {
    nnf_triplet_margin_with_distance_loss(ex_tensor(a, dtype), ex_tensor(pos, dtype), ex_tensor(neg, dtype),
                                          reduction = reduction)
  }, ref, "triplet with distance")
  # torch for R's own example: the L-infinity distance, margin 1.5, with swap.
  l_infinity <- function(x1, x2) torch_max(torch_abs(x1 - x2), dim = 2)[[1]]
  ref <- numeric(4)
  for (i in 1:4) {
    dn <- min(max(abs(a[i, ] - neg[i, ])), max(abs(pos[i, ] - neg[i, ])))
    ref[i] <- max(0, max(abs(a[i, ] - pos[i, ])) - dn + 1.5)
  }
  out <- nnf_triplet_margin_with_distance_loss(ex_tensor(a), ex_tensor(pos), ex_tensor(neg),
                                               distance_function = l_infinity, margin = 1.5, swap = TRUE,
                                               reduction = "none")
  expect_equal(as_array(out), ref)
  loss <- nn_triplet_margin_with_distance_loss(distance_function = l_infinity, margin = 1.5, swap = TRUE,
                                               reduction = "sum")
  expect_equal(as_array(loss(ex_tensor(a), ex_tensor(pos), ex_tensor(neg))), sum(ref))
  expect_error(nnf_triplet_margin_with_distance_loss(torch_randn(2, 3), torch_randn(2, 3), torch_randn(2, 3),
                                                     distance_function = "l2"),
               class = "value_error", regexp = "nnf_triplet_margin_with_distance_loss: distance_function must be a function")
})

test_that("nnf_poisson_nll_loss matches the formula with log_input, without, and with Stirling's term", {
  x <- matrix(rnorm(12), 3, 4)
  rate <- matrix(runif(12, 0.1, 3), 3, 4)
  counts <- matrix(rpois(12, 3), 3, 4)
  counts[1, 1:2] <- c(0, 1)   # Stirling's term leaves targets <= 1 out.
  stirling <- ifelse(counts > 1, counts * log(counts) - counts + 0.5 * log(2 * pi * counts), 0)
  ex_check_reductions(function(dtype, reduction) {
    nnf_poisson_nll_loss(ex_tensor(x, dtype), ex_tensor(counts, dtype), reduction = reduction)
  }, exp(x) - counts * x, "poisson log_input")
  ex_check_reductions(function(dtype, reduction) {
    nnf_poisson_nll_loss(ex_tensor(rate, dtype), ex_tensor(counts, dtype), log_input = FALSE, eps = 1e-4,
                         reduction = reduction)
  }, rate - counts * log(rate + 1e-4), "poisson rate")
  ex_check_reductions(function(dtype, reduction) {
    nnf_poisson_nll_loss(ex_tensor(x, dtype), ex_tensor(counts, dtype), full = TRUE, reduction = reduction)
  }, exp(x) - counts * x + stirling, "poisson full")
  xt <- ex_tensor(x, requires_grad = TRUE)
  nnf_poisson_nll_loss(xt, ex_tensor(counts), full = TRUE, reduction = "sum")$backward()
  expect_equal(as_array(xt$grad), exp(x) - counts)
  loss <- nn_poisson_nll_loss(log_input = FALSE, full = TRUE, eps = 1e-4, reduction = "none")
  expect_equal(as_array(loss(ex_tensor(rate), ex_tensor(counts))), rate - counts * log(rate + 1e-4) + stirling)
  expect_error(nnf_poisson_nll_loss(torch_randn(3), torch_randn(3), log_input = "yes"),
               class = "value_error", regexp = "nnf_poisson_nll_loss: log_input must be TRUE or FALSE")
})

test_that("nnf_gaussian_nll_loss is (log var + (x - y)^2 / var) / 2 for each shape var takes", {
  x <- matrix(rnorm(12), 3, 4)
  y <- matrix(rnorm(12), 3, 4)
  v <- matrix(runif(12, 0.2, 2), 3, 4)
  ref <- 0.5 * (log(v) + (x - y)^2 / v)
  ex_check_reductions(function(dtype, reduction) {
    nnf_gaussian_nll_loss(ex_tensor(x, dtype), ex_tensor(y, dtype), ex_tensor(v, dtype), reduction = reduction)
  }, ref, "gaussian")
  ex_check_reductions(function(dtype, reduction) {
    nnf_gaussian_nll_loss(ex_tensor(x, dtype), ex_tensor(y, dtype), ex_tensor(v, dtype), full = TRUE,
                          reduction = reduction)
  }, ref + 0.5 * log(2 * pi), "gaussian full")
  # One variance per row: [3] (one dim short) or [3, 1]; a number; a non-contiguous input.
  row_var <- runif(3, 0.2, 2)
  ref_rows <- 0.5 * (log(row_var) + (x - y)^2 / row_var)
  expect_equal(as_array(nnf_gaussian_nll_loss(ex_tensor(x), ex_tensor(y), ex_tensor(row_var), reduction = "none")), ref_rows)
  expect_equal(as_array(nnf_gaussian_nll_loss(ex_tensor(t(x))$t(), ex_tensor(y), ex_tensor(matrix(row_var, 3, 1)),
                                              reduction = "none")), ref_rows)
  expect_equal(as_array(nnf_gaussian_nll_loss(ex_tensor(x), ex_tensor(y), 0.7, reduction = "sum")),
               sum(0.5 * (log(0.7) + (x - y)^2 / 0.7)))
  # var below eps is clamped to eps.
  small <- v
  small[1, 1] <- 1e-9
  out <- nnf_gaussian_nll_loss(ex_tensor(x), ex_tensor(y), ex_tensor(small), eps = 1e-3, reduction = "none")
  expect_equal(as_array(out)[1, 1], 0.5 * (log(1e-3) + (x[1, 1] - y[1, 1])^2 / 1e-3))
  # As PyTorch clamps outside autograd, a clamped var still gets the gradient at eps.
  st <- ex_tensor(small, requires_grad = TRUE)
  nnf_gaussian_nll_loss(ex_tensor(x), ex_tensor(y), st, eps = 1e-3, reduction = "sum")$backward()
  expect_equal(as_array(st$grad)[1, 1], 0.5 * (1 / 1e-3 - (x[1, 1] - y[1, 1])^2 / 1e-6))
  # Gradients with respect to input and var against finite differences.
  xt <- ex_tensor(x, requires_grad = TRUE)
  vt <- ex_tensor(v, requires_grad = TRUE)
  nnf_gaussian_nll_loss(xt, ex_tensor(y), vt)$backward()
  f <- function(xv, vv) as_array(nnf_gaussian_nll_loss(ex_tensor(xv), ex_tensor(y), ex_tensor(vv)))
  expect_equal(as_array(xt$grad), numeric_grad(function(a) f(a, v), x), tolerance = 1e-6)
  expect_equal(as_array(vt$grad), numeric_grad(function(a) f(x, a), v), tolerance = 1e-6)
  loss <- nn_gaussian_nll_loss(full = TRUE, reduction = "sum")
  expect_equal(as_array(loss(ex_tensor(x), ex_tensor(y), ex_tensor(v))), sum(ref + 0.5 * log(2 * pi)))
  expect_error(nnf_gaussian_nll_loss(torch_randn(3, 4), torch_randn(3, 4), torch_rand(4)),
               class = "value_error", regexp = "nnf_gaussian_nll_loss: var must have input's shape \\[3, 4\\].*got \\[4\\]")
  expect_error(nnf_gaussian_nll_loss(torch_randn(3, 4), torch_randn(3, 4), -torch_rand(3, 4)),
               class = "value_error", regexp = "nnf_gaussian_nll_loss: var has negative entries")
  expect_error(nnf_gaussian_nll_loss(torch_randn(3, 4), torch_randn(2, 4), torch_rand(3, 4)),
               class = "value_error", regexp = "target \\[2, 4\\] do not broadcast")
})

# sum over i != y of w[y] max(0, margin - x[y] + x[i])^p, over C.
ex_multi_margin <- function(x, y, p = 1, margin = 1, w = NULL) {
  vapply(seq_len(nrow(x)), function(n) {
    total <- 0
    for (i in seq_len(ncol(x))) {
      if (i == y[n]) next
      total <- total + (if (is.null(w)) 1 else w[y[n]]) * max(0, margin - x[n, y[n]] + x[n, i])^p
    }
    total / ncol(x)
  }, 0)
}

test_that("nnf_multi_margin_loss matches the formula for p = 1 and 2, with weights, 1-based classes", {
  x <- matrix(rnorm(24), 6, 4)
  y <- c(1L, 4L, sample(1:4, 4, replace = TRUE))
  w <- runif(4, 0.5, 2)
  ex_check_reductions(function(dtype, reduction) {
    nnf_multi_margin_loss(ex_tensor(x, dtype), torch_tensor(y), reduction = reduction)
  }, ex_multi_margin(x, y), "multi_margin")
  ex_check_reductions(function(dtype, reduction) {
    nnf_multi_margin_loss(ex_tensor(x, dtype), torch_tensor(y), p = 2, margin = 0.5, weight = ex_tensor(w, dtype),
                          reduction = reduction)
  }, ex_multi_margin(x, y, 2, 0.5, w), "multi_margin p 2 weighted")
  # One sample: a [C] input and a [1] target; a non-contiguous input; an empty batch.
  expect_equal(as_array(nnf_multi_margin_loss(ex_tensor(x[2, ]), torch_tensor(3L))),
               ex_multi_margin(x[2, , drop = FALSE], 3L))
  expect_equal(as_array(nnf_multi_margin_loss(ex_tensor(t(x))$t(), torch_tensor(y), reduction = "none")),
               ex_multi_margin(x, y))
  expect_equal(nnf_multi_margin_loss(torch_randn(0, 4), torch_tensor(integer(0)), reduction = "none")$shape, 0L)
  # An int32 target.
  expect_equal(as_array(nnf_multi_margin_loss(ex_tensor(x), torch_tensor(y, dtype = torch_int32()), reduction = "sum")),
               sum(ex_multi_margin(x, y)))
  # The module keeps its weight as a buffer.
  loss <- nn_multi_margin_loss(p = 2, weight = w, reduction = "sum")
  expect_equal(as_array(loss(ex_tensor(x), torch_tensor(y))), sum(ex_multi_margin(x, y, 2, 1, w)), tolerance = 1e-6)
  xt <- ex_tensor(x, requires_grad = TRUE)
  nnf_multi_margin_loss(xt, torch_tensor(y), p = 2)$backward()
  numeric <- numeric_grad(function(v) as_array(nnf_multi_margin_loss(ex_tensor(v), torch_tensor(y), p = 2)), x)
  expect_equal(as_array(xt$grad), numeric, tolerance = 1e-6)
  expect_error(nnf_multi_margin_loss(torch_randn(2, 4), torch_tensor(c(0L, 1L))),
               class = "value_error", regexp = "nnf_multi_margin_loss: target must hold 1-based classes in 1..4, got 0")
  expect_error(nnf_multi_margin_loss(torch_randn(2, 4), torch_tensor(c(5L, 1L))),
               class = "value_error", regexp = "in 1..4, got 5")
  expect_error(nnf_multi_margin_loss(torch_randn(2, 4), torch_tensor(c(1, 2))),
               class = "value_error", regexp = "target must be an integer tensor of 1-based classes, got dtype float32")
  expect_error(nnf_multi_margin_loss(torch_randn(2, 4), torch_tensor(1:3)),
               class = "value_error", regexp = "target must hold one class per row of input \\(2\\), got shape \\[3\\]")
  expect_error(nnf_multi_margin_loss(torch_randn(2, 4), torch_tensor(1:2), p = 3),
               class = "value_error", regexp = "nnf_multi_margin_loss: p must be 1 or 2, got 3")
  expect_error(nnf_multi_margin_loss(torch_randn(2, 4), torch_tensor(1:2), weight = c(1, 2)),
               class = "value_error", regexp = "weight must hold one number per class \\(4\\), got shape \\[2\\]")
  expect_error(nnf_multi_margin_loss(torch_randn(2, 4, 1), torch_tensor(1:2)),
               class = "value_error", regexp = "input must be a non-empty vector \\[C\\] or a matrix \\[N, C\\], got shape \\[2, 4, 1\\]")
})

# Each row's classes are those before its first negative value; the loss sums max(0, 1 - (x[j] -
# x[i])) over listed j and unlisted i, over C.
ex_multilabel_margin <- function(x, y) {
  vapply(seq_len(nrow(x)), function(n) {
    listed <- integer(0)
    for (k in seq_len(ncol(y))) {
      if (y[n, k] < 0) break
      listed <- c(listed, y[n, k])
    }
    total <- 0
    for (j in listed) for (i in setdiff(seq_len(ncol(x)), listed)) total <- total + max(0, 1 - (x[n, j] - x[n, i]))
    total / ncol(x)
  }, 0)
}

test_that("nnf_multilabel_margin_loss takes 1-based classes ended by a negative value", {
  # torch for R's own example.
  x <- torch_tensor(matrix(c(0.1, 0.2, 0.4, 0.8), nrow = 1))
  y <- torch_tensor(matrix(c(4, 1, -1, 2), nrow = 1), dtype = torch_int64())
  expect_equal(as_array(nnf_multilabel_margin_loss(x, y)), 0.85, tolerance = 1e-6)
  x <- matrix(rnorm(20), 4, 5)
  y <- matrix(-1L, 4, 5)
  y[1, 1:2] <- c(3L, 5L)            # then -1: 3 and 5
  y[2, ] <- c(2L, -1L, 4L, 1L, 1L)  # only 2: values after the first -1 are ignored
  y[3, ] <- sample(1:5)             # every class listed: no loss
  y[4, 1:3] <- c(4L, 1L, -7L)       # any negative ends the list
  ex_check_reductions(function(dtype, reduction) {
    nnf_multilabel_margin_loss(ex_tensor(x, dtype), torch_tensor(y), reduction)
  }, ex_multilabel_margin(x, y), "multilabel_margin")
  # A [C] input and target; a non-contiguous input.
  expect_equal(as_array(nnf_multilabel_margin_loss(ex_tensor(x[1, ]), torch_tensor(y[1, ]), "none")),
               ex_multilabel_margin(x[1, , drop = FALSE], y[1, , drop = FALSE]))
  expect_equal(as_array(nnf_multilabel_margin_loss(ex_tensor(t(x))$t(), torch_tensor(y), "none")),
               ex_multilabel_margin(x, y))
  expect_equal(as_array(nn_multilabel_margin_loss(reduction = "sum")(ex_tensor(x), torch_tensor(y))),
               sum(ex_multilabel_margin(x, y)))
  expect_equal(as_array(nnf_multilabel_margin_loss(ex_tensor(x), torch_tensor(y, dtype = torch_int32()), "none")),
               ex_multilabel_margin(x, y))
  xt <- ex_tensor(x, requires_grad = TRUE)
  nnf_multilabel_margin_loss(xt, torch_tensor(y))$backward()
  numeric <- numeric_grad(function(v) as_array(nnf_multilabel_margin_loss(ex_tensor(v), torch_tensor(y))), x)
  expect_equal(as_array(xt$grad), numeric, tolerance = 1e-6)
  expect_error(nnf_multilabel_margin_loss(torch_randn(1, 4), torch_tensor(matrix(c(4L, 0L, -1L, 2L), 1))),
               class = "value_error", regexp = "nnf_multilabel_margin_loss: target holds a 0; classes are 1-based")
  expect_error(nnf_multilabel_margin_loss(torch_randn(1, 4), torch_tensor(matrix(c(5L, -1L, -1L, 2L), 1))),
               class = "value_error", regexp = "classes in 1..4, got 5")
  expect_error(nnf_multilabel_margin_loss(torch_randn(2, 4), torch_tensor(matrix(1L, 2, 3))),
               class = "value_error", regexp = "target must have input's shape \\[2, 4\\], got \\[2, 3\\]")
})

test_that("nnf_multilabel_soft_margin_loss averages the logistic loss over the last (class) dim", {
  x <- matrix(rnorm(15, sd = 2), 3, 5)
  y <- matrix(rbinom(15, 1, 0.5), 3, 5)
  w <- runif(5, 0.5, 2)
  sigmoid <- function(z) 1 / (1 + exp(-z))
  per <- -(y * log(sigmoid(x)) + (1 - y) * log(sigmoid(-x)))
  ex_check_reductions(function(dtype, reduction) {
    nnf_multilabel_soft_margin_loss(ex_tensor(x, dtype), ex_tensor(y, dtype), reduction = reduction)
  }, rowMeans(per), "multilabel_soft_margin")
  ex_check_reductions(function(dtype, reduction) {
    nnf_multilabel_soft_margin_loss(ex_tensor(x, dtype), ex_tensor(y, dtype), ex_tensor(w, dtype), reduction)
  }, rowMeans(sweep(per, 2, w, "*")), "multilabel_soft_margin weighted")
  # torch for R's example (an integer target); a 1-d input; a non-contiguous one; the module.
  out <- nnf_multilabel_soft_margin_loss(torch_tensor(matrix(c(0.1, 0.2, 0.4, 0.8), nrow = 1)),
                                         torch_tensor(matrix(c(0, 1, 1, 0), nrow = 1), dtype = torch_int64()))
  expect_equal(as_array(out), 0.7567, tolerance = 1e-4)
  expect_equal(as_array(nnf_multilabel_soft_margin_loss(ex_tensor(x[1, ]), ex_tensor(y[1, ]), reduction = "none")),
               mean(per[1, ]))
  expect_equal(as_array(nnf_multilabel_soft_margin_loss(ex_tensor(t(x))$t(), ex_tensor(y), reduction = "sum")),
               sum(rowMeans(per)))
  loss <- nn_multilabel_soft_margin_loss(weight = w, reduction = "none")
  expect_equal(as_array(loss(ex_tensor(x), ex_tensor(y))), rowMeans(sweep(per, 2, w, "*")), tolerance = 1e-6)
  expect_error(nnf_multilabel_soft_margin_loss(torch_randn(3, 5), torch_randn(3, 4)),
               class = "value_error", regexp = "nnf_multilabel_soft_margin_loss: the shapes of input \\[3, 5\\], target \\[3, 4\\]")
})

test_that("modules pass their settings to the functions", {
  a <- matrix(rnorm(12), 4, 3)
  b <- matrix(rnorm(12), 4, 3)
  n <- matrix(rnorm(12), 4, 3)
  y <- ex_signs(4)
  expect_equal(as_array(nn_margin_ranking_loss(margin = 0.4, reduction = "none")(ex_tensor(a[, 1]), ex_tensor(b[, 1]), ex_tensor(y))),
               pmax(0, -y * (a[, 1] - b[, 1]) + 0.4))
  expect_equal(as_array(nn_hinge_embedding_loss(margin = 2, reduction = "sum")(ex_tensor(a[, 1]), ex_tensor(y))),
               sum(ifelse(y == 1, a[, 1], pmax(0, 2 - a[, 1]))))
  expect_equal(as_array(nn_soft_margin_loss()(ex_tensor(a[, 1]), ex_tensor(y))), mean(log(1 + exp(-y * a[, 1]))))
  cosine <- rowSums(a * b) / sqrt(rowSums(a^2) * rowSums(b^2))
  expect_equal(as_array(nn_cosine_embedding_loss(margin = -0.5, reduction = "none")(ex_tensor(a), ex_tensor(b), ex_tensor(y))),
               ifelse(y == 1, 1 - cosine, pmax(0, cosine + 0.5)))
  ref <- vapply(1:4, function(i) max(0, ex_distance(a[i, ], b[i, ], 1, 1e-3) - ex_distance(a[i, ], n[i, ], 1, 1e-3) + 2), 0)
  loss <- nn_triplet_margin_loss(margin = 2, p = 1, eps = 1e-3, reduction = "sum")
  expect_equal(as_array(loss(ex_tensor(a), ex_tensor(b), ex_tensor(n))), sum(ref))
  ref <- vapply(1:4, function(i) max(0, ex_distance(a[i, ], b[i, ]) - ex_distance(a[i, ], n[i, ]) + 1), 0)
  expect_equal(as_array(nn_triplet_margin_with_distance_loss()(ex_tensor(a), ex_tensor(b), ex_tensor(n))), mean(ref))
})

test_that("every loss rejects a bad reduction, naming itself and the value", {
  x <- torch_randn(3, 4)
  y <- torch_randn(3, 4)
  s <- torch_randn(3)
  calls <- list(
    nnf_margin_ranking_loss = function(r) nnf_margin_ranking_loss(s, s, s, reduction = r),
    nnf_hinge_embedding_loss = function(r) nnf_hinge_embedding_loss(x, y, reduction = r),
    nnf_soft_margin_loss = function(r) nnf_soft_margin_loss(x, y, reduction = r),
    nnf_cosine_embedding_loss = function(r) nnf_cosine_embedding_loss(x, y, s, reduction = r),
    nnf_triplet_margin_loss = function(r) nnf_triplet_margin_loss(x, y, y, reduction = r),
    nnf_triplet_margin_with_distance_loss = function(r) nnf_triplet_margin_with_distance_loss(x, y, y, reduction = r),
    nnf_poisson_nll_loss = function(r) nnf_poisson_nll_loss(x, y, reduction = r),
    nnf_gaussian_nll_loss = function(r) nnf_gaussian_nll_loss(x, y, x$abs(), reduction = r),
    nnf_multi_margin_loss = function(r) nnf_multi_margin_loss(x, torch_tensor(1:3), reduction = r),
    nnf_multilabel_margin_loss = function(r) nnf_multilabel_margin_loss(x, torch_ones(3, 4, dtype = torch_long()), reduction = r),
    nnf_multilabel_soft_margin_loss = function(r) nnf_multilabel_soft_margin_loss(x, y, reduction = r)
  )
  for (fn in names(calls)) {
    expect_error(calls[[fn]]("avg"), class = "value_error",
                 regexp = paste0(fn, ": reduction must be one of \"mean\", \"sum\", \"none\", got \"avg\""))
    expect_error(calls[[fn]](1), class = "value_error", regexp = paste0(fn, ": reduction must be one of"))
  }
  expect_error(nn_soft_margin_loss(reduction = "avg"), class = "value_error", regexp = "reduction must be one of")
})
