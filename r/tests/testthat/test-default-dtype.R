# torch_get_default_dtype() / torch_set_default_dtype(): every creation without a dtype and the
# floating results of integer tensors follow it; each test puts float32 back, even on failure.

with_default_dtype <- function(dtype, code) {
  old <- torch_get_default_dtype()
  on.exit(torch_set_default_dtype(old))
  torch_set_default_dtype(dtype)
  force(code)
}

test_that("the default is float32 until changed", {
  expect_true(torch_get_default_dtype() == torch_float32())
  expect_true(torch_tensor(1.5)$dtype == torch_float32())
  expect_true(torch_randn(2)$dtype == torch_float32())
})

test_that("float64 as the default changes every creation that has no dtype", {
  with_default_dtype(torch_float64(), {
    expect_true(torch_get_default_dtype() == torch_float64())
    x <- torch_tensor(1.5)
    expect_true(x$dtype == torch_float64())
    # float64 keeps what float32 would round: 0.1 comes back exactly.
    expect_identical(as_array(torch_tensor(0.1)), 0.1)
    expect_true(torch_randn(2)$dtype == torch_float64())
    expect_true(torch_rand(2)$dtype == torch_float64())
    expect_true(torch_zeros(2)$dtype == torch_float64())
    expect_true(torch_ones(2, 3)$dtype == torch_float64())
    expect_true(torch_empty(2)$dtype == torch_float64())
    expect_true(torch_full(2, 0.5)$dtype == torch_float64())
    expect_true(torch_eye(2)$dtype == torch_float64())
    expect_true(torch_linspace(0, 1, 5)$dtype == torch_float64())
    expect_true(torch_logspace(0, 1, 3)$dtype == torch_float64())
    a <- torch_arange(0, 1, 0.1)
    expect_true(a$dtype == torch_float64())
    expect_equal(as_array(a), seq(0, 1, by = 0.1), tolerance = 1e-15)
    expect_length(as_array(torch_arange(0, 0.3, 0.1)), 4)  # the end on the grid is included
    # Integer data and explicit dtypes are not floating defaults.
    expect_true(torch_tensor(1:2)$dtype == torch_long())
    expect_true(torch_arange(1L, 3L)$dtype == torch_long())
    expect_true(torch_zeros(2, dtype = torch_float32())$dtype == torch_float32())
    # Integer tensors meeting doubles, and true division.
    i <- torch_tensor(1:3, dtype = torch_int8())
    expect_true((i + 0.5)$dtype == torch_float64())
    expect_true((i / i)$dtype == torch_float64())
    expect_identical(as_array(i + 0.1), c(1.1, 2.1, 3.1))
    # Existing float32 tensors stay float32.
    f <- torch_ones(2, dtype = torch_float32())
    expect_true((f + 0.5)$dtype == torch_float32())
  })
  expect_true(torch_get_default_dtype() == torch_float32())
  expect_true(torch_tensor(1.5)$dtype == torch_float32())
  expect_true(torch_zeros(2)$dtype == torch_float32())
})

test_that("only float32 and float64 can be the default", {
  for (d in list(torch_int32(), torch_int8(), torch_long(), torch_bool(), torch_float16())) {
    expect_error(torch_set_default_dtype(d),
                 "torch_set_default_dtype: only floating-point types are supported as the default type",
                 class = "rcuda_dtype_error")
    expect_error(torch_set_default_dtype(d), as.character(d), fixed = TRUE)
  }
  expect_error(torch_set_default_dtype("double"), class = "rcuda_dtype_error")
  expect_true(torch_get_default_dtype() == torch_float32())  # the refusals changed nothing
  expect_invisible(torch_set_default_dtype(torch_float32()))
})

test_that("a module built under float64 has float64 parameters", {
  with_default_dtype(torch_float64(), {
    layer <- nn_linear(3, 2)
    expect_true(layer$weight$dtype == torch_float64())
    expect_true(layer(torch_randn(4, 3))$dtype == torch_float64())
  })
})
