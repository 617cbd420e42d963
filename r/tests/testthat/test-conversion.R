test_that("double, integer and logical arrays of any rank round-trip exactly", {
  for (device in test_devices()) {
    for (dims in list(5L, c(2L, 3L), c(2L, 3L, 4L), c(3L, 1L, 2L, 2L))) {
      shaped <- function(v) if (length(dims) > 1) array(v, dims) else v
      x <- shaped(rnorm(prod(dims)))
      expect_identical(as.array(torch_tensor(x, dtype = torch_double(), device = device)), x)
      i <- shaped(sample.int(1000L, prod(dims)))
      expect_identical(as.array(torch_tensor(i, device = device)), i)
      l <- shaped(runif(prod(dims)) > 0.5)
      expect_identical(as.array(torch_tensor(l, device = device)), l)
    }
  }
})

test_that("default dtypes follow torch for R", {
  expect_true(torch_tensor(c(1, 2))$dtype == torch_float())
  expect_true(torch_tensor(1L)$dtype == torch_long())
  expect_true(torch_tensor(TRUE)$dtype == torch_bool())
  expect_equal(torch_tensor(c(1, 2))$shape, 2L)
  expect_equal(torch_tensor(matrix(1:6, 2))$shape, c(2L, 3L))
})

test_that("float32 conversion rounds to single precision", {
  x <- rnorm(10)
  expect_equal(as.array(torch_tensor(x)), x, tolerance = 1e-6)
})

test_that("NA becomes NaN in floating dtypes and an error elsewhere", {
  expect_true(is.nan(as.array(torch_tensor(c(1, NA)))[2]))
  expect_true(is.nan(as.array(torch_tensor(c(1L, NA), dtype = torch_float()))[2]))
  expect_error(torch_tensor(c(1L, NA)), class = "rcuda_value_error")
  expect_error(torch_tensor(c(TRUE, NA)), class = "rcuda_value_error")
  expect_error(torch_tensor(c(1, NaN), dtype = torch_int()), class = "rcuda_value_error")
})

test_that("unsupported R types are refused", {
  expect_error(torch_tensor("a"), class = "rcuda_dtype_error")
  expect_error(torch_tensor(1, dtype = "float8"), "dtype \"float8\" is not one rcuda knows",
               class = "rcuda_dtype_error")
  expect_error(torch_tensor(1, dtype = list()), class = "rcuda_dtype_error")
})

test_that("as_* conversions and item()", {
  x <- torch_tensor(matrix(c(1, 2, 3, 4), 2))
  expect_identical(as.matrix(x), matrix(c(1, 2, 3, 4), 2))
  expect_identical(as.integer(torch_tensor(1:3)), 1:3)
  expect_identical(as.logical(torch_tensor(c(TRUE, FALSE))), c(TRUE, FALSE))
  expect_identical(as_array(torch_tensor(1:3)), 1:3)
  expect_identical(torch_tensor(3L)$item(), 3L)
  expect_identical(torch_tensor(2.5)$item(), 2.5)
  expect_identical(torch_tensor(TRUE)$item(), TRUE)
  expect_error(torch_tensor(1:2)$item(), class = "rcuda_value_error")
})

test_that("dtype conversions with $to()", {
  x <- torch_tensor(c(1.7, -2.2))
  expect_true(x$to(dtype = torch_double())$dtype == torch_double())
  expect_identical(as.array(x$to(dtype = torch_int())), c(1L, -2L))
  expect_true(x$to(torch_float16())$dtype == torch_half())
})

test_that("CUDA round trips keep values exactly", {
  skip_if_cuda_not_available()
  x <- random_array(3, 4, 5)
  g <- torch_tensor(x, dtype = torch_double(), device = "cuda")
  expect_true(g$is_cuda)
  expect_identical(as.array(g$cpu()), x)
  expect_identical(as.array(as.gpu(matrix(1:6, 2))$cpu()), matrix(1:6, 2))
  expect_identical(as.array(torch_tensor(1:4)$cuda()$cpu()), 1:4)
})

test_that("uint8 tensors convert to R's raw bytes and back, as torch for R's Byte tensors", {
  for (device in test_devices()) {
    x <- charToRaw("hello world")
    ten <- torch_tensor(x, device = device)
    expect_true(ten$dtype == torch_uint8())
    expect_identical(as_array(ten), x)
    expect_identical(rawToChar(as.array(ten)), "hello world")
    m <- matrix(as.raw(sample.int(256, 12) - 1L), 3, 4)
    expect_identical(as_array(torch_tensor(m, device = device)$t()), t(m))
    expect_identical(as.integer(torch_tensor(m)), as.integer(m))
    expect_identical(as_array(torch_tensor(c(1, 255, 3), dtype = torch_uint8())), as.raw(c(1, 255, 3)))
  }
})
