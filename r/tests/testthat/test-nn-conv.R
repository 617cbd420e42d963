# Convolutions from R against plain R loops (double precision), gradients against central
# differences, and the modules' parameters and errors.

conv2d_reference <- function(x, w, b, stride = c(1, 1), padding = c(0, 0), dilation = c(1, 1),
                             groups = 1) {
  n <- dim(x)[1]; cin <- dim(x)[2]; h <- dim(x)[3]; wd <- dim(x)[4]
  cout <- dim(w)[1]; kh <- dim(w)[3]; kw <- dim(w)[4]
  oh <- (h + 2 * padding[1] - dilation[1] * (kh - 1) - 1) %/% stride[1] + 1
  ow <- (wd + 2 * padding[2] - dilation[2] * (kw - 1) - 1) %/% stride[2] + 1
  per_group_in <- cin / groups; per_group_out <- cout / groups
  out <- array(0, c(n, cout, oh, ow))
  for (i in 1:n) for (o in 1:cout) {
    g <- (o - 1) %/% per_group_out
    for (p in 1:oh) for (q in 1:ow) {
      s <- if (is.null(b)) 0 else b[o]
      for (ci in 1:per_group_in) for (u in 1:kh) for (v in 1:kw) {
        r <- (p - 1) * stride[1] - padding[1] + (u - 1) * dilation[1] + 1
        c <- (q - 1) * stride[2] - padding[2] + (v - 1) * dilation[2] + 1
        if (r >= 1 && r <= h && c >= 1 && c <= wd) s <- s + x[i, g * per_group_in + ci, r, c] * w[o, ci, u, v]
      }
      out[i, o, p, q] <- s
    }
  }
  out
}

test_that("nnf_conv2d matches a loop for strides, padding, dilation and groups", {
  configs <- list(
    list(stride = 1, padding = 0, dilation = 1, groups = 1),
    list(stride = c(2, 1), padding = c(1, 2), dilation = 1, groups = 1),
    list(stride = 1, padding = 2, dilation = 2, groups = 2),
    list(stride = 2, padding = 1, dilation = 1, groups = 4)  # depthwise
  )
  for (cfg in configs) {
    x <- array(rnorm(2 * 4 * 7 * 6), c(2, 4, 7, 6))
    w <- array(rnorm(4 * (4 / cfg$groups) * 3 * 3), c(4, 4 / cfg$groups, 3, 3))
    b <- rnorm(4)
    got <- nnf_conv2d(torch_tensor(x, dtype = torch_double()), torch_tensor(w, dtype = torch_double()),
                      torch_tensor(b, dtype = torch_double()), stride = cfg$stride,
                      padding = cfg$padding, dilation = cfg$dilation, groups = cfg$groups)
    want <- conv2d_reference(x, w, b, rep_len(cfg$stride, 2), rep_len(cfg$padding, 2),
                             rep_len(cfg$dilation, 2), cfg$groups)
    expect_equal(as_array(got), want, tolerance = 1e-12, info = deparse(cfg))
  }
})

test_that("padding 'same' keeps the size and 'valid' is no padding", {
  x <- torch_randn(1, 2, 9, 8, dtype = torch_double())
  w <- torch_randn(3, 2, 3, 3, dtype = torch_double())
  expect_equal(nnf_conv2d(x, w, padding = "same")$shape, c(1, 3, 9, 8))
  expect_equal(as_array(nnf_conv2d(x, w, padding = "valid")), as_array(nnf_conv2d(x, w)))
  expect_error(nnf_conv2d(x, w, stride = 2, padding = "same"), "same")
})

test_that("nnf_conv1d is the 2-d convolution of one row", {
  x <- array(rnorm(2 * 3 * 11), c(2, 3, 11))
  w <- array(rnorm(5 * 3 * 4), c(5, 3, 4))
  got <- nnf_conv1d(torch_tensor(x, dtype = torch_double()), torch_tensor(w, dtype = torch_double()),
                    stride = 2, padding = 1)
  want <- conv2d_reference(array(x, c(2, 3, 1, 11)), array(w, c(5, 3, 1, 4)), NULL,
                           c(1, 2), c(0, 1))
  expect_equal(as_array(got), array(want, c(2, 5, dim(want)[4])), tolerance = 1e-12)
})

test_that("nnf_conv_transpose2d is the adjoint of nnf_conv2d", {
  # <conv(x, w), y> == <x, conv_transpose(y, w)> for every x and y.
  x <- torch_randn(2, 3, 7, 6, dtype = torch_double())
  w <- torch_randn(4, 3, 3, 2, dtype = torch_double())
  y_shape <- nnf_conv2d(x, w, stride = 2, padding = 1)$shape
  y <- torch_randn(y_shape, dtype = torch_double())
  back <- nnf_conv_transpose2d(y, w, stride = 2, padding = 1)
  expect_equal(back$shape, x$shape)
  lhs <- sum(as_array(nnf_conv2d(x, w, stride = 2, padding = 1)) * as_array(y))
  rhs <- sum(as_array(x) * as_array(back))
  expect_equal(lhs, rhs, tolerance = 1e-10)
})

test_that("gradients of a conv2d module match central differences", {
  torch_manual_seed(3)
  conv <- nn_conv2d(2, 3, kernel_size = 3, padding = 1, stride = 2)
  conv$to(dtype = torch_double())
  x <- torch_randn(1, 2, 5, 5, dtype = torch_double(), requires_grad = TRUE)
  loss <- function() sum(as_array(conv(x))^2)
  out <- conv(x)
  (out * out)$sum()$backward()
  gx <- as_array(x$grad)
  gw <- as_array(conv$weight$grad)
  gb <- as_array(conv$bias$grad)
  eps <- 1e-6
  numeric_grad <- function(t, idx) {
    with_no_grad({
      v <- as_array(t)
      bump <- function(delta) {
        v2 <- v
        v2[idx] <- v2[idx] + delta
        t$copy_(torch_tensor(v2, dtype = torch_double()))
        loss()
      }
      g <- (bump(eps) - bump(-eps)) / (2 * eps)
      t$copy_(torch_tensor(v, dtype = torch_double()))
    })
    g
  }
  for (idx in list(c(1, 1, 2, 3), c(1, 2, 5, 5))) {
    expect_equal(gx[matrix(idx, 1)], numeric_grad(x, matrix(idx, 1)), tolerance = 1e-6)
  }
  for (idx in list(c(1, 1, 1, 1), c(3, 2, 3, 2))) {
    expect_equal(gw[matrix(idx, 1)], numeric_grad(conv$weight, matrix(idx, 1)), tolerance = 1e-6)
  }
  expect_equal(gb[2], numeric_grad(conv$bias, 2), tolerance = 1e-6)
})

test_that("conv modules have PyTorch's parameter shapes and initial ranges", {
  conv <- nn_conv2d(4, 6, kernel_size = c(3, 5), groups = 2)
  expect_equal(conv$weight$shape, c(6, 2, 3, 5))
  bound <- 1 / sqrt(2 * 3 * 5)
  expect_true(all(abs(as_array(conv$bias)) <= bound))
  expect_true(all(abs(as_array(conv$weight)) <= bound))  # kaiming_uniform(a = sqrt(5)) bound
  expect_equal(length(conv$parameters), 2)
  expect_null(nn_conv1d(2, 2, 3, bias = FALSE)$bias)
  tconv <- nn_conv_transpose2d(4, 6, kernel_size = 3, stride = 2, output_padding = 1)
  expect_equal(tconv$weight$shape, c(4, 6, 3, 3))
  expect_equal(tconv(torch_randn(1, 4, 5, 5))$shape, c(1, 6, 12, 12))
})

test_that("bad arguments are errors naming the layer", {
  expect_error(nn_conv2d(3, 4, 3, groups = 2), "divisible by groups")
  expect_error(nn_conv2d(3, 4, c(3, 3, 3)), "kernel_size")
  expect_error(nn_conv2d(3, 4, 3, padding_mode = "reflect"), "padding_mode")
  x <- torch_randn(1, 3, 4, 4)
  w <- torch_randn(2, 3, 5, 5)
  expect_error(nnf_conv2d(x, w), "nnf_conv2d")
  expect_error(nnf_conv2d(x, torch_randn(2, 2, 3, 3)), "nnf_conv2d")
})

test_that("CUDA convolutions agree with the CPU's", {
  skip_if_not(cuda_is_available())
  x <- torch_randn(2, 4, 9, 9)
  conv <- nn_conv2d(4, 8, 3, padding = 1)
  cpu <- as_array(conv(x))
  conv$to(device = "cuda")
  gpu <- as_array(conv(x$cuda()))
  expect_equal(gpu, cpu, tolerance = 1e-3)  # TF32 is on for convolutions, as PyTorch's default
})
