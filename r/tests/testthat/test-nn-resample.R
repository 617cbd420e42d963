# Padding and interpolation from R against base R loops written from the documented formulas.

# The input index each output position of one dim reads (0: the constant), 1-based, built as
# torch's documentation draws the modes (circular crops its negative part before wrapping).
pad_index <- function(mode, size, before, after) {
  if (mode == "circular") {
    kept <- seq(1 + max(-before, 0), size - max(-after, 0))
    return(c(utils::tail(kept, max(before, 0)), kept, utils::head(kept, max(after, 0))))
  }
  left <- if (before > 0) switch(mode,
    reflect = seq(before + 1, 2), replicate = rep(1, before),
    circular = seq(size - before + 1, size), constant = rep(0, before)) else integer()
  right <- if (after > 0) switch(mode,
    reflect = seq(size - 1, size - after), replicate = rep(size, after),
    circular = seq_len(after), constant = rep(0, after)) else integer()
  all <- c(left, seq_len(size), right)
  all[seq(1 + max(-before, 0), length(all) - max(-after, 0))]
}

# x padded in its last two dims by pad = c(left, right, top, bottom).
pad2d <- function(x, pad, mode, value = 0) {
  d <- dim(x)
  rows <- pad_index(mode, d[3], pad[3], pad[4])
  cols <- pad_index(mode, d[4], pad[1], pad[2])
  out <- array(value, c(d[1], d[2], length(rows), length(cols)))
  for (i in seq_along(rows)) for (j in seq_along(cols)) {
    if (rows[i] > 0 && cols[j] > 0) out[, , i, j] <- x[, , rows[i], cols[j]]
  }
  out
}

test_that("nnf_pad matches the documented index rules in every mode", {
  x <- array(rnorm(2 * 3 * 4 * 5), c(2, 3, 4, 5))
  t <- torch_tensor(x, dtype = torch_double())
  for (mode in c("reflect", "replicate", "circular")) {
    expect_equal(as_array(nnf_pad(t, c(2, 1, 3, 2), mode = mode)), pad2d(x, c(2, 1, 3, 2), mode))
    expect_equal(as_array(nnf_pad(t, c(-1, 2, 0, 3), mode = mode)), pad2d(x, c(-1, 2, 0, 3), mode))
  }
  expect_equal(as_array(nnf_pad(t, c(1, 2, 2, 0), value = 1.5)), pad2d(x, c(1, 2, 2, 0), "constant", 1.5))
  expect_equal(as_array(nnf_pad(t, c(1, -2))), pad2d(x, c(1, -2, 0, 0), "constant"))
  # Only the last dim: pad = c(left, right); 1-d reflect of (N, C, L).
  v <- array(rnorm(2 * 2 * 6), c(2, 2, 6))
  got <- as_array(nnf_pad(torch_tensor(v, dtype = torch_double()), c(3, 2), mode = "reflect"))
  expect_equal(got[2, 1, ], v[2, 1, c(4, 3, 2, 1:6, 5, 4)])
  # Constant padding of any dim: the third-last by the third pair.
  expect_equal(dim(as_array(nnf_pad(t, c(0, 0, 0, 0, 1, 2)))), c(2, 6, 4, 5))
})

test_that("nnf_pad's gradient sums over the outputs that read each input", {
  x <- torch_randn(1, 1, 3, 4, dtype = torch_double(), requires_grad = TRUE)
  y <- nnf_pad(x, c(2, 1, 1, 2), mode = "replicate")
  g <- array(runif(1 * 1 * 6 * 7), c(1, 1, 6, 7))
  y$backward(torch_tensor(g, dtype = torch_double()))
  rows <- pad_index("replicate", 3, 1, 2)
  cols <- pad_index("replicate", 4, 2, 1)
  expected <- matrix(0, 3, 4)
  for (i in seq_along(rows)) for (j in seq_along(cols))
    expected[rows[i], cols[j]] <- expected[rows[i], cols[j]] + g[1, 1, i, j]
  expect_equal(as_array(x$grad)[1, 1, , ], expected)
})

test_that("nnf_pad refuses bad arguments with torch's rules", {
  t <- torch_randn(2, 3, 4, 5)
  expect_error(nnf_pad(t, c(1, 2, 3)), "nnf_pad: padding must hold \\(before, after\\) pairs")
  expect_error(nnf_pad(t, c(5, 0, 0, 0), mode = "reflect"), "reflect padding must be less than")
  expect_error(nnf_pad(t, c(1, 1, 0, 0), mode = "reflect", value = 2), "takes no value")
  expect_error(nnf_pad(t, c(1, 1), mode = "mirror"), "'mirror'")
  expect_error(nnf_pad(t, "a"), "nnf_pad: pad must be a vector of whole numbers")
})

# One dim's taps from PyTorch's formulas: list(index (1-based), weight) per output.
linear_taps <- function(n_in, n_out, align_corners) {
  lapply(seq_len(n_out) - 1, function(o) {
    if (n_in == n_out) return(list(i = o + 1, w = 1))
    x <- if (align_corners) {
      if (n_out > 1) o * (n_in - 1) / (n_out - 1) else 0
    } else max(0, (o + 0.5) * n_in / n_out - 0.5)
    i0 <- min(floor(x), n_in - 1)
    l1 <- min(max(x - i0, 0), 1)
    list(i = c(i0, min(i0 + 1, n_in - 1)) + 1, w = c(1 - l1, l1))
  })
}

bilinear <- function(x, oh, ow, align_corners) {
  d <- dim(x)
  th <- linear_taps(d[3], oh, align_corners)
  tw <- linear_taps(d[4], ow, align_corners)
  out <- array(0, c(d[1], d[2], oh, ow))
  for (i in seq_len(oh)) for (j in seq_len(ow))
    for (a in seq_along(th[[i]]$i)) for (b in seq_along(tw[[j]]$i))
      out[, , i, j] <- out[, , i, j] +
        th[[i]]$w[a] * tw[[j]]$w[b] * x[, , th[[i]]$i[a], tw[[j]]$i[b]]
  out
}

test_that("nnf_interpolate matches PyTorch's formulas", {
  x <- array(rnorm(2 * 3 * 4 * 5), c(2, 3, 4, 5))
  t <- torch_tensor(x, dtype = torch_double())
  for (align in c(TRUE, FALSE)) {
    expect_equal(as_array(nnf_interpolate(t, size = c(7, 3), mode = "bilinear", align_corners = align)),
                 bilinear(x, 7, 3, align), tolerance = 1e-12)
  }
  # Nearest: floor(o * in / out); doubling repeats each element.
  near <- as_array(nnf_interpolate(t, size = c(3, 9)))
  rows <- floor((0:2) * 4 / 3) + 1
  cols <- floor((0:8) * 5 / 9) + 1
  expect_equal(near, x[, , rows, cols])
  expect_equal(as_array(nnf_interpolate(t, scale_factor = 2))[, , c(1, 2, 7, 8), 3],
               x[, , c(1, 1, 4, 4), 2])
  # Hand-derived: [0, 10] to 5 points.
  line <- torch_tensor(array(c(0, 10), c(1, 1, 2)), dtype = torch_double())
  expect_equal(as.vector(as_array(nnf_interpolate(line, size = 5, mode = "linear", align_corners = TRUE))),
               c(0, 2.5, 5, 7.5, 10))
  expect_equal(as.vector(as_array(nnf_interpolate(line, size = 5, mode = "linear"))), c(0, 1, 5, 9, 10))
  # area is adaptive average pooling.
  expect_equal(as_array(nnf_interpolate(t, size = c(2, 1), mode = "area")),
               as_array(nnf_adaptive_avg_pool2d(t, c(2, 1))))
  # align_corners is ignored by nearest, as torch for R documents.
  expect_equal(as_array(nnf_interpolate(t, size = 6, align_corners = TRUE)),
               as_array(nnf_interpolate(t, size = 6)))
})

test_that("nn_upsample and gradients of interpolation", {
  x <- torch_randn(1, 2, 3, 3, dtype = torch_double(), requires_grad = TRUE)
  up <- nn_upsample(scale_factor = 2, mode = "bilinear", align_corners = TRUE)
  y <- up(x)
  expect_equal(dim(as_array(y)), c(1, 2, 6, 6))
  expect_equal(as_array(y), bilinear(as_array(x), 6, 6, TRUE), tolerance = 1e-12)
  y$sum()$backward()
  # d sum / d x[h, w] = (sum of the row weights of h) * (sum of the column weights of w).
  th <- linear_taps(3, 6, TRUE)
  wsum <- sapply(1:3, function(k) sum(sapply(th, function(t) sum(t$w[t$i == k]))))
  expect_equal(as_array(x$grad)[1, 1, , ], outer(wsum, wsum), tolerance = 1e-12)
})

test_that("nnf_interpolate refuses bad arguments", {
  t <- torch_randn(2, 3, 4, 5)
  expect_error(nnf_interpolate(t), "nnf_interpolate: either size or scale_factor")
  expect_error(nnf_interpolate(t, size = 3, scale_factor = 2), "only one of size and scale_factor")
  expect_error(nnf_interpolate(t, size = 3, mode = "bicubic"), "'bicubic'")
  expect_error(nnf_interpolate(t, size = 3, mode = "linear"), "mode 'linear' expects a 3-D")
  expect_error(nnf_interpolate(t, scale_factor = -1), "positive and finite")
  expect_error(nnf_interpolate(t, size = 3, recompute_scale_factor = TRUE), "not meaningful")
})

test_that("CUDA padding and interpolation agree with the CPU's", {
  skip_if_cuda_not_available()
  x <- torch_randn(2, 3, 5, 6)
  for (mode in c("reflect", "replicate", "circular", "constant")) {
    expect_equal(as_array(nnf_pad(x$cuda(), c(2, 1, 1, 3), mode = mode)),
                 as_array(nnf_pad(x, c(2, 1, 1, 3), mode = mode)))
  }
  expect_equal(as_array(nnf_interpolate(x$cuda(), size = c(9, 4), mode = "bilinear")),
               as_array(nnf_interpolate(x, size = c(9, 4), mode = "bilinear")), tolerance = 1e-5)
})
