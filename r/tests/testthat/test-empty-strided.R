# torch_empty_strided() and torch_as_strided() (R/empty-strided.R, src/strided.cpp): strides
# read back, and writes that land where the strides say, checked against positions computed
# in plain R.

# The 0-based storage position of every element of a tensor of `size` and `stride`, in R's
# column-major order of as_array's result.
storage_positions <- function(size, stride, offset = 0) {
  grid <- as.matrix(expand.grid(lapply(size, function(s) seq_len(s) - 1)))
  array(offset + as.vector(grid %*% stride), dim = size)
}

test_that("torch for R's 'empty_strided'", {
  x <- torch_empty_strided(c(2, 2), stride = c(1, 2))
  expect_equal(x$stride(1), 1)
  expect_equal(x$stride(2), 2)
})

test_that("torch_empty_strided gives the shape, strides, dtype and device asked for", {
  for (device in test_devices()) {
    x <- torch_empty_strided(c(3, 4, 2), c(1, 6, 3), dtype = torch_float64(), device = device)
    expect_equal(x$shape, c(3, 4, 2))
    expect_equal(x$stride(), c(1, 6, 3))
    expect_equal(x$stride(-1), 3)
    expect_equal(x$storage_offset(), 0)
    expect_equal(x$dtype, torch_float64())
    expect_equal(x$device$type, device)
    expect_false(x$is_contiguous())
    expect_equal(torch_empty_strided(c(2, 3), c(3, 1))$is_contiguous(), TRUE)
    expect_equal(torch_empty_strided(c(2, 3), c(1, 2), dtype = torch_int32())$dtype, torch_int32())
    expect_true(torch_empty_strided(2, 1, requires_grad = TRUE)$requires_grad)
  }
})

test_that("writes through an empty_strided tensor land where its strides say", {
  for (device in test_devices()) {
    size <- c(3, 4, 2)
    stride <- c(1, 6, 3)  # a permuted layout: the storage holds 24 elements, all used
    x <- torch_empty_strided(size, stride, dtype = torch_float64(), device = device)
    values <- array(rnorm(prod(size)), dim = size)
    x$copy_(torch_tensor(values, dtype = torch_float64()))
    expect_equal(as_array(x$cpu()), values)
    # The storage, read flat from position 0, holds each value at its strided position.
    flat <- as_array(torch_as_strided(x, 24, 1, 0)$cpu())
    expect_equal(flat[as.vector(storage_positions(size, stride)) + 1], as.vector(values))
    # Index assignment writes through the strides too.
    x[2, 3, 1] <- 100
    expect_equal(as_array(torch_as_strided(x, 24, 1, 0)$cpu())[1 + sum(c(1, 2, 0) * stride)], 100)
  }
})

test_that("empty_strided's storage is its extent: 1 + sum((size - 1) * stride)", {
  # Strides with gaps: [2, 3] at stride (7, 2) reaches 1 + 7 + 4 = 12 elements, and a view of
  # 12 is allowed where one of 13 is refused.
  x <- torch_empty_strided(c(2, 3), c(7, 2))
  expect_equal(torch_as_strided(x, 12, 1, 0)$shape, 12)
  expect_error(torch_as_strided(x, 13, 1, 0), "torch_as_strided: .*reaches 13 storage elements, but input's storage holds 12")
})

test_that("empty_strided with a size 0 is empty; stride 0 overlaps for reading", {
  z <- torch_empty_strided(c(3, 0, 2), c(0, 5, 1))
  expect_equal(z$shape, c(3, 0, 2))
  expect_equal(z$numel(), 0)
  expect_equal(z$stride(), c(0, 5, 1))
  # Every row shares the same 4 elements: written once, read three times.
  o <- torch_empty_strided(c(3, 4), c(0, 1), dtype = torch_float64())
  expect_equal(o$stride(), c(0, 1))
  torch_as_strided(o, 4, 1, 0)$copy_(torch_tensor(c(1, 2, 3, 4), dtype = torch_float64()))
  expect_equal(as_array(o), matrix(1:4, 3, 4, byrow = TRUE))
  expect_equal(as_array(o$sum(1)), 3 * (1:4))
})

test_that("empty_strided refuses negative, non-whole or mismatched strides by name", {
  expect_error(torch_empty_strided(c(2, 2), c(1, -1)), "torch_empty_strided: stride must be at least 0", class = "value_error")
  expect_error(torch_empty_strided(c(2, 2), c(1, 2, 3)), "torch_empty_strided: stride must have one entry per dim of size \\(2\\), got 3", class = "value_error")
  expect_error(torch_empty_strided(c(2, 2), 1), "torch_empty_strided: stride must have one entry", class = "value_error")
  expect_error(torch_empty_strided(c(2, 2), c(1, 1.5)), "torch_empty_strided: stride must be whole numbers", class = "value_error")
  expect_error(torch_empty_strided(c(2, -2), c(1, 1)), "torch_empty_strided: size must be at least 0", class = "value_error")
  expect_error(torch_empty_strided(2, 1, layout = torch_sparse_coo()), "torch_empty_strided: layout")
})

test_that("torch_as_strided views input's storage, from storage_offset", {
  b <- as.numeric(1:20)
  t <- torch_tensor_from_buffer(b, 20, "float64")
  v <- torch_as_strided(t, c(3, 4), c(5, 1), 2)
  expect_equal(as_array(v), array(b[storage_positions(c(3, 4), c(5, 1), 2) + 1], c(3, 4)))
  v$copy_(torch_zeros(3, 4, dtype = torch_float64()))  # lands in the R vector itself
  expected <- as.numeric(1:20)
  expected[as.vector(storage_positions(c(3, 4), c(5, 1), 2)) + 1] <- 0
  expect_equal(b, expected)
  # storage_offset = NULL keeps input's own; the offset counts from the storage's start.
  s <- torch_tensor(as.numeric(1:20), dtype = torch_float64())[5:20]
  expect_equal(as_array(torch_as_strided(s, 2, 3)), c(5, 8))
  expect_equal(as_array(s$as_strided(2, 3, 0)), c(1, 4))
  expect_error(torch_as_strided(t, 5, 5, 0), "reaches 21 storage elements, but input's storage holds 20")
  expect_error(torch_as_strided(t, 2, 1, -1), "torch_as_strided: storage_offset must be", class = "value_error")
})

test_that("torch_as_strided refuses an input that requires grad, while grad mode is on", {
  x <- torch_randn(6, requires_grad = TRUE)
  expect_error(torch_as_strided(x, c(2, 2), c(1, 1)), "torch_as_strided: input requires grad", class = "value_error")
  v <- with_no_grad(torch_as_strided(x, c(2, 2), c(1, 1)))
  expect_false(v$requires_grad)
  expect_equal(as_array(v), matrix(as_array(x)[c(1, 2, 2, 3)], 2, 2, byrow = TRUE))
  expect_equal(as_array(torch_as_strided(x$detach(), 3, 2)), as_array(x)[c(1, 3, 5)])
})
