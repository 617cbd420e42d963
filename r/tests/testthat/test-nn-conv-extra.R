# nnf_conv_transpose1d / nn_conv_transpose1d, output_size for the transposed modules, and the
# power-average pools (R/nn-conv.R, R/nn-pool-norm.R), against plain loops in R.

conv_transpose1d_ref <- function(x, w, b, stride, padding, output_padding, dilation, groups) {
  n <- dim(x)[1]; cin <- dim(x)[2]; len <- dim(x)[3]
  per_in <- cin / groups; per_out <- dim(w)[2]; k <- dim(w)[3]
  out_len <- (len - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
  out <- array(0, c(n, per_out * groups, out_len))
  for (g in seq_len(groups)) for (ci in seq_len(per_in)) for (co in seq_len(per_out)) {
    c <- (g - 1) * per_in + ci
    o <- (g - 1) * per_out + co
    for (i in seq_len(len)) for (j in seq_len(k)) {
      t <- (i - 1) * stride - padding + (j - 1) * dilation + 1
      if (t >= 1 && t <= out_len) out[, o, t] <- out[, o, t] + x[, c, i] * w[c, co, j]
    }
  }
  for (o in seq_len(dim(out)[2])) out[, o, ] <- out[, o, ] + b[o]
  out
}

test_that("nnf_conv_transpose1d matches loops, with strides, padding, dilation and groups", {
  for (device in test_devices()) {
    for (case in list(list(s = 1, p = 0, op = 0, d = 1, g = 1), list(s = 2, p = 1, op = 1, d = 1, g = 2),
                      list(s = 3, p = 2, op = 0, d = 2, g = 1))) {
      x <- array(rnorm(2 * 4 * 5), c(2, 4, 5))
      w <- array(rnorm(4 * 3 * 3), c(4, 3, 3))
      b <- rnorm(3 * case$g)
      # (cuDNN has no float64 convolutions: float32 on CUDA)
      dtype <- if (device == "cpu") torch_float64() else torch_float32()
      as_t <- function(a) torch_tensor(a, dtype = dtype, device = device)
      out <- nnf_conv_transpose1d(as_t(x), as_t(w), as_t(b), case$s, case$p, case$op, case$g, case$d)
      expect_equal(as_array(out), conv_transpose1d_ref(x, w, b, case$s, case$p, case$op, case$d, case$g),
                   tolerance = if (device == "cpu") 1e-10 else 1e-3)  # TF32 on CUDA, as PyTorch's default
    }
  }
  m <- nn_conv_transpose1d(32, 16, 2)
  expect_equal(m(torch_randn(10, 32, 2))$shape, c(10, 16, 3))
  expect_equal(m$weight$shape, c(32, 16, 2))
  expect_error(nnf_conv_transpose1d(torch_randn(2, 3, 4, 5), torch_randn(3, 2, 2)), "input must be",
               class = "rcuda_value_error")
  expect_error(nnf_conv_transpose1d(torch_randn(2, 3, 4), torch_randn(3, 2, 2), stride = 0.5),
               "nnf_conv_transpose1d: stride must be one whole number", class = "rcuda_value_error")
})

test_that("transposed convolutions take output_size, as torch for R's", {
  input <- torch_randn(1, 16, 12, 12)
  downsample <- nn_conv2d(16, 16, 3, stride = 2, padding = 1)
  upsample <- nn_conv_transpose2d(16, 16, 3, stride = 2, padding = 1)
  h <- downsample(input)
  out <- upsample(h, output_size = input$size())
  expect_equal(out$size(), input$size())
  expect_equal(as_array(out), as_array(nnf_conv_transpose2d(h, upsample$weight, upsample$bias, 2, 1,
                                                            output_padding = 1)))
  expect_equal(upsample(h, output_size = c(11, 11))$size(), c(1, 16, 11, 11))
  expect_error(upsample(h, output_size = c(14, 14)), "valid sizes range from 11 x 11 to 12 x 12",
               class = "rcuda_value_error")
  m1 <- nn_conv_transpose1d(4, 2, 3, stride = 3)
  x1 <- torch_randn(2, 4, 5)
  expect_equal(m1(x1, output_size = 17)$shape, c(2, 2, 17))
})

lp_pool_ref <- function(x, p, k, stride) {
  d <- dim(x)
  out_len <- (d[3] - k) %/% stride + 1
  out <- array(0, c(d[1], d[2], out_len))
  for (j in seq_len(out_len)) {
    window <- x[, , (j - 1) * stride + seq_len(k), drop = FALSE]
    out[, , j] <- apply(window, c(1, 2), function(v) sum(v^p)^(1 / p))
  }
  out
}

test_that("nnf_lp_pool1d and nnf_lp_pool2d are power means over the windows", {
  for (device in test_devices()) {
    x <- array(runif(2 * 3 * 9, 0.1, 2), c(2, 3, 9))
    X <- torch_tensor(x, dtype = torch_float64(), device = device)
    for (p in c(1, 2, 3.5)) {
      expect_equal(as_array(nnf_lp_pool1d(X, p, 3)), lp_pool_ref(x, p, 3, 3), tolerance = 1e-10)
      expect_equal(as_array(nnf_lp_pool1d(X, p, 4, stride = 2)), lp_pool_ref(x, p, 4, 2), tolerance = 1e-10)
    }
    # 2-d: the same as 1-d over rows, then over columns, for p = 2 (sums of squares add).
    y <- array(runif(2 * 2 * 4 * 6, 0.1, 2), c(2, 2, 4, 6))
    Y <- torch_tensor(y, dtype = torch_float64(), device = device)
    out <- as_array(nnf_lp_pool2d(Y, 2, c(2, 3)))
    ref <- array(0, c(2, 2, 2, 2))
    for (i in 1:2) for (j in 1:2) ref[, , i, j] <- sqrt(apply(y[, , (i - 1) * 2 + 1:2, (j - 1) * 3 + 1:3, drop = FALSE]^2, c(1, 2), sum))
    expect_equal(out, ref, tolerance = 1e-10)
    expect_equal(as_array(nn_lp_pool2d(2, c(2, 3))(Y)), out)
  }
  expect_equal(nnf_lp_pool1d(torch_randn(100, 10, 5), norm_type = 2, kernel_size = 3)$shape, c(100, 10, 1))
  expect_error(nnf_lp_pool2d(torch_randn(1, 1, 4, 4), 0, 2), "norm_type must be nonzero", class = "rcuda_value_error")
  expect_error(nnf_lp_pool2d(torch_randn(1, 1, 4, 4), 2, 1.5), "nnf_lp_pool2d: kernel_size must be one whole number",
               class = "rcuda_value_error")
})
