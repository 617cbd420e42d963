# torch_set_num_threads() and friends: the number set is the number read back and the CPU ops'
# results do not depend on it; bad numbers are refused naming the function.

test_that("the CPU backend's thread count is set and read back, and results do not change", {
  old <- torch_get_num_threads()
  on.exit(torch_set_num_threads(old))
  expect_true(is.integer(old) && old >= 1)
  x <- torch_randn(300, 200, dtype = torch_float64())
  w <- torch_randn(200, 50, dtype = torch_float64())
  # Base R's product and sums as the reference, under one thread and several.
  reference <- as_array(x) %*% as_array(w)
  for (n in c(1, 3, 2)) {
    torch_set_num_threads(n)
    expect_identical(torch_get_num_threads(), as.integer(n))
    expect_equal(as_array(torch_matmul(x, w)), reference, tolerance = 1e-12)
    expect_equal(as_array(x$sum(dim = 1)), colSums(as_array(x)), tolerance = 1e-12)
  }
})

test_that("bad thread counts are refused naming the function and the value", {
  for (bad in list(0, -1, 2.5, NA, "2", c(1, 2), NULL)) {
    expect_error(torch_set_num_threads(bad), class = "value_error",
                 regexp = "torch_set_num_threads: num_threads must be a whole number >= 1")
    expect_error(torch_set_num_interop_threads(bad), class = "value_error",
                 regexp = "torch_set_num_interop_threads: num_threads")
  }
})

test_that("the inter-op count is recorded and given back", {
  old <- torch_get_num_interop_threads()
  on.exit(torch_set_num_interop_threads(old))
  expect_identical(old, 1L)
  torch_set_num_interop_threads(6)
  expect_identical(torch_get_num_interop_threads(), 6L)
})
