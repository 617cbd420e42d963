# Reference: base R's which(arr.ind = TRUE), reordered row-major (last index fastest), as torch.
row_major_which <- function(x) {
  idx <- which(x != 0, arr.ind = TRUE)
  if (is.null(dim(idx))) idx <- matrix(idx, ncol = 1)
  unname(idx[do.call(order, as.data.frame(idx)), , drop = FALSE])
}

test_that("torch_nonzero gives 1-based row-major indices, one row per nonzero element", {
  for (device in test_devices()) {
    x <- random_array(3, 4, 5) * (runif(60) > 0.6)  # negatives count as nonzero
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    out <- torch_nonzero(a)
    expect_true(out$dtype == torch_long())
    expect_equal(out$shape, c(sum(x != 0), 3L))
    expect_identical(as.array(out), row_major_which(x))
    expect_identical(as.array(a$nonzero()), row_major_which(x))
    v <- random_array(9) * (runif(9) > 0.5)
    expect_identical(as.array(torch_nonzero(torch_tensor(v, device = device))), row_major_which(v))
    m <- matrix(runif(12) > 0.5, 3)
    expect_identical(as.array(torch_nonzero(torch_tensor(m, device = device))), row_major_which(m))
  }
})

test_that("torch_nonzero(as_list = TRUE) and torch_where(condition) give one index tensor per dim", {
  for (device in test_devices()) {
    a <- torch_tensor(random_array(4, 6), device = device)
    x <- as.array(a)  # float32 values, so the reference compares the same numbers
    expected <- row_major_which(x > 0.3)
    for (out in list(torch_nonzero(a > 0.3, as_list = TRUE), torch_where(a > 0.3),
                     (a > 0.3)$nonzero(as_list = TRUE))) {
      expect_length(out, 2)
      expect_true(out[[1]]$dtype == torch_long())
      expect_identical(as.array(out[[1]]), expected[, 1])
      expect_identical(as.array(out[[2]]), expected[, 2])
    }
    # the indices pick the elements the mask selects, in the same (row-major) order
    w <- torch_where(a > 0.3)
    expect_identical(x[cbind(as.array(w[[1]]), as.array(w[[2]]))], as.array(a[a > 0.3]))
  }
})

test_that("torch_nonzero on empty, all-zero and 0-d tensors", {
  expect_equal(torch_nonzero(torch_zeros(3, 2))$shape, c(0L, 2L))
  expect_equal(torch_nonzero(torch_zeros(0, 4))$shape, c(0L, 2L))
  z <- torch_nonzero(torch_zeros(3), as_list = TRUE)
  expect_length(z, 1)
  expect_equal(z[[1]]$shape, 0L)
  expect_length(torch_where(torch_zeros(2, 3, 4) > 1), 3)
  # a 0-d input is a one-element 1-D tensor in the list form, as torch
  expect_equal(torch_nonzero(torch_scalar_tensor(5))$shape, c(1L, 0L))
  expect_identical(as.array(torch_nonzero(torch_scalar_tensor(5), as_list = TRUE)[[1]]), 1L)
  expect_equal(torch_nonzero(torch_scalar_tensor(0), as_list = TRUE)[[1]]$shape, 0L)
})

test_that("torch_where with one value, or a condition that is no tensor or R vector, is an rcuda_value_error", {
  a <- torch_randn(3)
  expect_error(torch_where(a > 0, a), "torch_where: give both self and other, or neither; got only self",
               class = "rcuda_value_error")
  expect_error(torch_where(a > 0, other = a), "got only other", class = "rcuda_value_error")
  expect_error(torch_where("a"), "torch_where: condition must be a tensor, got character",
               class = "rcuda_value_error")
  expect_error(torch_nonzero(a, as_list = NA), "torch_nonzero: as_list must be TRUE or FALSE, got NA",
               class = "rcuda_value_error")
  expect_error(torch_nonzero("a"), "torch_nonzero: self must be a tensor, got character",
               class = "rcuda_value_error")
  # R vectors are converted with torch_tensor(), as torch for R does.
  lg <- runif(7) > 0.5
  expect_equal(as_array(torch_where(lg)[[1]]), which(lg))
  expect_equal(as_array(torch_nonzero(c(0, 3, 0, 1))), matrix(c(2L, 4L), ncol = 1))
})
