# nnf_unfold / nnf_fold (R/nn-fold.R) against plain loops over a zero-padded R array, fold as
# unfold's adjoint, and unfold's gradient (which is fold).

unfold_ref <- function(a, kernel, dilation, padding, stride) {
  d <- dim(a)
  padded <- array(0, c(d[1], d[2], d[3] + 2 * padding[1], d[4] + 2 * padding[2]))
  padded[, , padding[1] + seq_len(d[3]), padding[2] + seq_len(d[4])] <- a
  blocks <- (dim(padded)[3:4] - dilation * (kernel - 1) - 1) %/% stride + 1
  out <- array(0, c(d[1], d[2] * prod(kernel), prod(blocks)))
  for (n in seq_len(d[1])) for (c in seq_len(d[2])) for (ki in seq_len(kernel[1])) {
    for (kj in seq_len(kernel[2])) for (oh in seq_len(blocks[1])) for (ow in seq_len(blocks[2])) {
      row <- ((c - 1) * kernel[1] + (ki - 1)) * kernel[2] + kj
      out[n, row, (oh - 1) * blocks[2] + ow] <-
        padded[n, c, (oh - 1) * stride[1] + (ki - 1) * dilation[1] + 1, (ow - 1) * stride[2] + (kj - 1) * dilation[2] + 1]
    }
  }
  out
}

# Each column entry added at the padded position it was read from, then the padding cut off.
fold_ref <- function(cols, shape, kernel, dilation, padding, stride) {
  padded <- array(0, c(shape[1], shape[2], shape[3] + 2 * padding[1], shape[4] + 2 * padding[2]))
  blocks <- (dim(padded)[3:4] - dilation * (kernel - 1) - 1) %/% stride + 1
  for (n in seq_len(shape[1])) for (c in seq_len(shape[2])) for (ki in seq_len(kernel[1])) {
    for (kj in seq_len(kernel[2])) for (oh in seq_len(blocks[1])) for (ow in seq_len(blocks[2])) {
      row <- ((c - 1) * kernel[1] + (ki - 1)) * kernel[2] + kj
      r <- (oh - 1) * stride[1] + (ki - 1) * dilation[1] + 1
      q <- (ow - 1) * stride[2] + (kj - 1) * dilation[2] + 1
      padded[n, c, r, q] <- padded[n, c, r, q] + cols[n, row, (oh - 1) * blocks[2] + ow]
    }
  }
  padded[, , padding[1] + seq_len(shape[3]), padding[2] + seq_len(shape[4]), drop = FALSE]
}

fold_cases <- list(
  list(shape = c(2, 3, 5, 6), kernel = c(2, 3), dilation = c(1, 1), padding = c(0, 0), stride = c(1, 1)),
  list(shape = c(1, 2, 7, 5), kernel = c(3, 2), dilation = c(2, 1), padding = c(1, 2), stride = c(2, 1)),
  list(shape = c(3, 1, 4, 4), kernel = c(2, 2), dilation = c(1, 1), padding = c(1, 1), stride = c(2, 2))
)

test_that("nnf_unfold matches loops over the padded input, on every device", {
  for (device in test_devices()) for (case in fold_cases) {
    a <- array(rnorm(prod(case$shape)), case$shape)
    x <- torch_tensor(a, dtype = torch_float64(), device = device)
    out <- nnf_unfold(x, case$kernel, case$dilation, case$padding, case$stride)
    expect_equal(as_array(out), unfold_ref(a, case$kernel, case$dilation, case$padding, case$stride))
    # Unbatched input: the same without the batch dim; the module form agrees.
    expect_equal(as_array(nnf_unfold(x[1, , , ], case$kernel, case$dilation, case$padding, case$stride)),
                 as_array(out[1, , ]))
    m <- nn_unfold(case$kernel, case$dilation, case$padding, case$stride)
    expect_equal(as_array(m(x)), as_array(out))
  }
  expect_equal(nnf_unfold(torch_randn(2, 5, 3, 4), kernel_size = c(2, 3))$size(), c(2, 30, 4))
})

test_that("nnf_fold is unfold's adjoint and sums overlapping patches", {
  for (device in test_devices()) for (case in fold_cases) {
    x <- torch_randn(case$shape, dtype = torch_float64(), device = device)
    u <- nnf_unfold(x, case$kernel, case$dilation, case$padding, case$stride)
    y <- torch_randn(u$shape, dtype = torch_float64(), device = device)
    folded <- nnf_fold(y, case$shape[3:4], case$kernel, case$dilation, case$padding, case$stride)
    expect_equal(folded$shape, case$shape)
    # <unfold(x), y> == <x, fold(y)> for every x, y.
    expect_equal((u * y)$sum()$item(), (x * folded)$sum()$item(), tolerance = 1e-12)
    expect_equal(as_array(folded), fold_ref(as_array(y), case$shape, case$kernel, case$dilation,
                                            case$padding, case$stride))
    # The gradient of sum(unfold(x) * w) with respect to x is fold(w).
    xr <- x$clone()$requires_grad_(TRUE)
    (nnf_unfold(xr, case$kernel, case$dilation, case$padding, case$stride) * y)$sum()$backward()
    expect_equal(as_array(xr$grad), as_array(folded), tolerance = 1e-12)
    m <- nn_fold(case$shape[3:4], case$kernel, case$dilation, case$padding, case$stride)
    expect_equal(as_array(m(y)), as_array(folded))
  }
})

test_that("unfold and fold refuse bad shapes and arguments by name", {
  expect_error(nnf_unfold(torch_randn(2, 5, 3, 4, 5), kernel_size = c(2, 3)), "nnf_unfold: Expected 3D or 4D",
               class = "rcuda_value_error")
  expect_error(nnf_unfold(torch_randn(1, 1, 2, 2), kernel_size = 3), "extent", class = "rcuda_value_error")
  expect_error(nnf_unfold(torch_randn(1, 1, 4, 4), kernel_size = 0), "kernel_size", class = "rcuda_value_error")
  expect_error(nnf_fold(torch_randn(1, 5, 4), c(3, 3), 2), "divisible", class = "rcuda_value_error")
  expect_error(nnf_fold(torch_randn(4), c(3, 3), 2), "nnf_fold: Expected 2D or 3D", class = "rcuda_value_error")
  expect_error(nnf_fold(torch_randn(1, 4, 3), c(3, 3), 2), "blocks", class = "rcuda_value_error")
})
