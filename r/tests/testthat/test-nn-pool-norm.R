# Pooling and normalisation from R against base R computations on the same values.

test_that("max and average pooling match base R windows", {
  x <- array(rnorm(2 * 3 * 6 * 5), c(2, 3, 6, 5))
  t <- torch_tensor(x, dtype = torch_double())
  got <- as_array(nnf_max_pool2d(t, 2))
  avg <- as_array(nnf_avg_pool2d(t, c(2, 1), stride = c(2, 1)))
  for (i in 1:2) for (c in 1:3) for (p in 1:3) for (q in 1:2) {
    window <- x[i, c, (2 * p - 1):(2 * p), (2 * q - 1):(2 * q)]
    expect_equal(got[i, c, p, q], max(window))
  }
  for (p in 1:3) for (q in 1:5) expect_equal(avg[2, 3, p, q], mean(x[2, 3, (2 * p - 1):(2 * p), q]))
  expect_equal(dim(as_array(nnf_max_pool2d(t, 2, ceil_mode = TRUE))), c(2, 3, 3, 3))
  expect_equal(dim(as_array(nn_max_pool1d(3, stride = 2)(torch_randn(2, 4, 9)))), c(2, 4, 4))
})

test_that("max pool indices are 1-based positions in each plane", {
  x <- array(sample(48) + 0, c(1, 2, 4, 6))
  r <- nnf_max_pool2d(torch_tensor(x, dtype = torch_double()), 2, return_indices = TRUE)
  values <- as_array(r[[1]])
  idx <- as_array(r[[2]])
  for (c in 1:2) {
    plane <- x[1, c, , ]
    flat <- as.vector(t(plane))  # row-major, as the engine numbers a plane
    for (p in 1:2) for (q in 1:3) expect_equal(flat[idx[1, c, p, q]], values[1, c, p, q])
  }
})

test_that("adaptive pooling of a size that divides evenly is an ordinary pool", {
  t <- torch_randn(2, 3, 8, 6, dtype = torch_double())
  expect_equal(as_array(nnf_adaptive_avg_pool2d(t, c(4, 3))), as_array(nnf_avg_pool2d(t, 2)))
  expect_equal(as_array(nn_adaptive_max_pool2d(c(2, 2))(t)), as_array(nnf_max_pool2d(t, c(4, 3))))
  expect_equal(dim(as_array(nnf_adaptive_avg_pool2d(t, 1))), c(2, 3, 1, 1))
})

test_that("batch norm normalises with batch statistics and updates the running ones", {
  x <- array(rnorm(4 * 3 * 5 * 2, mean = 2, sd = 3), c(4, 3, 5, 2))
  bn <- nn_batch_norm2d(3, momentum = 0.2)
  bn$to(dtype = torch_double())
  y <- as_array(bn(torch_tensor(x, dtype = torch_double())))
  for (c in 1:3) {
    v <- x[, c, , ]
    expect_equal(as.vector(y[, c, , ]), (as.vector(v) - mean(v)) / sqrt(mean((v - mean(v))^2) + 1e-5),
                 tolerance = 1e-10)
    expect_equal(as_array(bn$running_mean)[c], 0.2 * mean(v), tolerance = 1e-12)
    expect_equal(as_array(bn$running_var)[c], 0.8 + 0.2 * var(as.vector(v)), tolerance = 1e-12)
  }
  expect_equal(as_array(bn$num_batches_tracked), 1)
  bn$eval()
  ye <- as_array(bn(torch_tensor(x, dtype = torch_double())))
  rm <- as_array(bn$running_mean); rv <- as_array(bn$running_var)
  expect_equal(ye[2, 3, 4, 1], (x[2, 3, 4, 1] - rm[3]) / sqrt(rv[3] + 1e-5), tolerance = 1e-12)
  expect_equal(as_array(bn$num_batches_tracked), 1)
  expect_equal(names(bn$state_dict()), c("weight", "bias", "running_mean", "running_var", "num_batches_tracked"))
  expect_error(bn(torch_randn(3, 3)), "nn_batch_norm2d")
})

test_that("group norm matches per-group standardisation, and gradients flow", {
  x <- array(rnorm(2 * 4 * 3), c(2, 4, 3))
  gn <- nn_group_norm(2, 4)
  gn$to(dtype = torch_double())
  xt <- torch_tensor(x, dtype = torch_double(), requires_grad = TRUE)
  y <- gn(xt)
  ya <- as_array(y)
  g <- x[1, 3:4, ]
  expect_equal(as.vector(ya[1, 3:4, ]), (as.vector(g) - mean(g)) / sqrt(mean((g - mean(g))^2) + 1e-5),
               tolerance = 1e-10)
  (y * y)$sum()$backward()
  # With weight 1 and bias 0, y is the standardised x: d sum(y^2) / d weight[c] = 2 sum(y[, c, ]^2)
  # and d / d bias[c] = 2 sum(y[, c, ]).
  expect_equal(as.vector(as_array(gn$weight$grad)), 2 * apply(ya^2, 2, sum), tolerance = 1e-10)
  expect_equal(as.vector(as_array(gn$bias$grad)), 2 * apply(ya, 2, sum), tolerance = 1e-10)
  expect_error(nn_group_norm(3, 4), "divisible")
})

test_that("CUDA pooling and batch norm agree with the CPU's", {
  skip_if_not(cuda_is_available())
  x <- torch_randn(4, 3, 8, 8)
  bn <- nn_batch_norm2d(3)
  cpu <- as_array(nnf_max_pool2d(bn(x), 2))
  bn2 <- nn_batch_norm2d(3)
  bn2$to(device = "cuda")
  gpu <- as_array(nnf_max_pool2d(bn2(x$cuda()), 2))
  expect_equal(gpu, cpu, tolerance = 1e-4)
  expect_equal(as_array(bn2$running_mean), as_array(bn$running_mean), tolerance = 1e-5)
})

# Window i of L positions pooled to `out`: positions floor((i-1) L / out) + 1 .. ceiling(i L / out).
adaptive_windows_1d <- function(L, out) {
  lapply(seq_len(out), function(i) (floor((i - 1) * L / out) + 1):ceiling(i * L / out))
}

test_that("adaptive 1-d pools match base R windows, with gradients and indices, on every device", {
  for (dev in test_devices()) {
    for (case in list(c(L = 10, out = 3), c(L = 7, out = 7), c(L = 5, out = 8), c(L = 9, out = 1))) {
      L <- case[["L"]]
      out <- case[["out"]]
      x <- array(rnorm(2 * 3 * L), c(2, 3, L))
      windows <- adaptive_windows_1d(L, out)
      avg_ref <- array(0, c(2, 3, out))
      max_ref <- array(0, c(2, 3, out))
      idx_ref <- array(0L, c(2, 3, out))
      for (n in 1:2) for (c in 1:3) for (i in seq_len(out)) {
        w <- windows[[i]]
        avg_ref[n, c, i] <- mean(x[n, c, w])
        max_ref[n, c, i] <- max(x[n, c, w])
        idx_ref[n, c, i] <- w[which.max(x[n, c, w])]
      }
      info <- paste(dev, "L", L, "out", out)
      t <- torch_tensor(x, dtype = torch_double(), device = dev, requires_grad = TRUE)
      a <- nnf_adaptive_avg_pool1d(t, out)
      expect_equal(as.array(a$cpu()), avg_ref, tolerance = 1e-12, info = info)
      a$sum()$backward()
      # Each position gets 1 / |window| from every window holding it.
      grad_ref <- array(0, c(2, 3, L))
      for (w in windows) grad_ref[, , w] <- grad_ref[, , w] + 1 / length(w)
      expect_equal(as.array(t$grad$cpu()), grad_ref, tolerance = 1e-12, info = info)
      m <- nnf_adaptive_max_pool1d(t, out, return_indices = TRUE)
      expect_equal(as.array(m[[1]]$cpu()), max_ref, tolerance = 0, info = info)
      expect_equal(as.array(m[[2]]$cpu()), idx_ref, info = info)
      expect_equal(as.array(nn_adaptive_max_pool1d(out)(t)$cpu()), max_ref, tolerance = 0)
      expect_equal(as.array(nn_adaptive_avg_pool1d(out)(t[1, , ])$cpu()), array(avg_ref[1, , ], c(3, out)),
                   tolerance = 1e-12, info = info)  # unbatched (C, L)
    }
  }
  x <- torch_randn(2, 3, 4)
  expect_error(nnf_adaptive_avg_pool1d(torch_randn(2, 3, 4, 5), 2),
               "nnf_adaptive_avg_pool1d: expected 2-d \\(C, L\\) or 3-d \\(N, C, L\\) input, got shape \\[2, 3, 4, 5\\]",
               class = "rcuda_shape_error")
  expect_error(nnf_adaptive_max_pool1d(x, 0), "output_size must be one whole number >= 1, got 0",
               class = "rcuda_value_error")
  expect_error(nnf_adaptive_max_pool1d(x, c(2, 3)), "output_size must be one whole number",
               class = "rcuda_value_error")
})
