test_that("filled tensors", {
  for (device in test_devices()) {
    expect_identical(as.array(torch_zeros(2, 3, device = device)), matrix(0, 2, 3))
    expect_identical(as.array(torch_ones(c(2, 3), device = device)), matrix(1, 2, 3))
    expect_identical(as.array(torch_full(c(2, 2), 7, device = device)), matrix(7, 2, 2))
    expect_equal(torch_empty(4, 5, device = device)$shape, c(4L, 5L))
    expect_identical(as.array(torch_eye(3, device = device)), diag(3))
  }
  expect_true(torch_zeros(2, dtype = torch_int())$dtype == torch_int())
  expect_true(torch_full(c(2), 1L)$dtype == torch_long())
})

test_that("torch_arange includes its end, as torch for R", {
  expect_equal(as.array(torch_arange(1, 5)), c(1, 2, 3, 4, 5))
  expect_identical(as.array(torch_arange(1L, 5L)), 1:5)
  expect_true(torch_arange(1L, 5L)$dtype == torch_long())
  expect_true(torch_arange(1, 5)$dtype == torch_float())
  expect_equal(as.array(torch_arange(0, 1, 0.25)), c(0, 0.25, 0.5, 0.75, 1))
  expect_equal(as.array(torch_arange(5, 1, -2)), c(5, 3, 1))
  expect_error(torch_arange(1, 5, 0), class = "rcuda_value_error")
})

test_that("random tensors: ranges, moments and seeds", {
  for (device in test_devices()) {
    torch_manual_seed(1)
    u <- as.array(torch_rand(10000, device = device))
    expect_true(all(u >= 0 & u < 1))
    expect_equal(mean(u), 0.5, tolerance = 0.02)
    n <- as.array(torch_randn(10000, device = device))
    expect_equal(c(mean(n), sd(n)), c(0, 1), tolerance = 0.05)
    r <- as.array(torch_randint(3, 7, c(1000), device = device))
    expect_true(all(r >= 3 & r < 7))
    torch_manual_seed(42)
    a <- as.array(torch_randn(5, device = device))
    torch_manual_seed(42)
    expect_identical(as.array(torch_randn(5, device = device)), a)
  }
  expect_error(torch_randn(2, dtype = torch_int()), class = "rcuda_dtype_error")
})

test_that("*_like keeps shape, dtype and device", {
  x <- torch_ones(2, 3, dtype = torch_double())
  for (f in list(torch_zeros_like, torch_ones_like, torch_empty_like, torch_rand_like, torch_randn_like)) {
    y <- f(x)
    expect_equal(y$shape, c(2L, 3L))
    expect_true(y$dtype == torch_double())
  }
  expect_identical(as.array(torch_full_like(x, 3)), matrix(3, 2, 3))
  expect_true(torch_zeros_like(x, dtype = torch_int())$dtype == torch_int())
})

test_that("negative sizes, and requires_grad on integer dtypes, are refused clearly", {
  expect_error(torch_zeros(-1), class = "rcuda_shape_error")
  expect_error(torch_zeros(2, dtype = torch_long(), requires_grad = TRUE), class = "rcuda_dtype_error")
  expect_error(torch_randint(0, 3, 4, requires_grad = TRUE), "floating", class = "rcuda_dtype_error")
})

test_that("torch_tensor(NULL) is an empty bool tensor and raw vectors become uint8", {
  x <- torch_tensor(NULL)
  expect_true(x$dtype == torch_bool())
  expect_equal(x$shape, 0)
  bytes <- charToRaw("hello world")
  t <- torch_tensor(bytes)
  expect_true(t$dtype == torch_uint8())
  expect_identical(as_array(t), bytes)
  m <- matrix(as.raw(c(0, 7, 255, 128, 1, 2)), 2)
  expect_identical(as_array(torch_tensor(m)), m)
  expect_true(torch_tensor(bytes, dtype = torch_int32())$dtype == torch_int32())
})

test_that("torch_arange includes its end for every magnitude, and arange(n) counts from 1", {
  expect_equal(as_array(torch_arange(0, 4, dtype = torch_float64())), 0:4)
  expect_equal(as_array(torch_arange(0, 4)), 0:4)
  expect_equal(as_array(torch_arange(0, 1e9, 1e8, dtype = torch_float64())), seq(0, 1e9, 1e8))
  expect_equal(as_array(torch_arange(2, -2, -1, dtype = torch_float64())), 2:-2)
  expect_equal(length(torch_arange(0, 0.3, 0.1, dtype = torch_float64())), 4)
  expect_equal(length(torch_arange(0, 0.95, 0.1, dtype = torch_float64())), 10)
  expect_equal(as_array(torch_arange(5)), 1:5)
  expect_equal(as_array(torch_arange(1L, 3L)), 1:3)
})

test_that("torch_range includes end, warns that it is deprecated, and checks its numbers", {
  expect_warning(x <- torch_range(1, 9), "deprecated")
  expect_equal(as_array(x), 1:9)
  expect_equal(x$dtype$.type(), "Float")
  expect_warning(y <- torch_range(0, 1, 0.25, dtype = torch_float64()))
  expect_equal(as_array(y), seq(0, 1, by = 0.25))
  expect_warning(z <- torch_range(5, 1, -2))
  expect_equal(as_array(z), c(5, 3, 1))
  expect_error(torch_range(1, 5, 0), "step must be nonzero", class = "rcuda_value_error")
  expect_error(torch_range(5, 1), "wrong side", class = "rcuda_value_error")
  expect_error(torch_range("a", 1), "torch_range: start", class = "rcuda_value_error")
})

test_that("creation functions take torch for R's layout argument: strided, or an error", {
  expect_equal(torch_ones(2, 3, dtype = torch_float32(), layout = torch_strided())$shape, c(2, 3))
  expect_equal(torch_zeros(2, layout = torch_strided())$shape, 2)
  expect_equal(torch_full(c(2, 2), 3, layout = torch_strided())$sum()$item(), 12)
  expect_equal(torch_arange(1, 3, 1, NULL, torch_strided())$shape, 3)  # layout is 5th, as torch for R's
  expect_equal(torch_eye(2, layout = torch_strided())$shape, c(2, 2))
  expect_equal(torch_randn_like(torch_ones(3), layout = torch_strided())$shape, 3)
  expect_error(torch_zeros(2, layout = torch_sparse_coo()), "torch_zeros: layout must be NULL or torch_strided\\(\\).*torch_sparse_coo",
               class = "rcuda_value_error")
  expect_error(torch_randperm(3, layout = "x"), "torch_randperm: layout", class = "rcuda_value_error")
  expect_output(print(torch_strided()), "torch_strided")
})
