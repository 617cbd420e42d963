# torch_finfo() / torch_iinfo(): each limit checked by the engine's own rounding (1 + eps is the
# next number after 1, 1 + eps / 2 rounds back, max is finite and the next step is inf, tiny is
# normal and halving it leaves the normal range) and against base R's .Machine for float64.

test_that("torch_finfo's eps, max and tiny are what each dtype rounds to", {
  for (dtype in list(torch_float16(), torch_bfloat16(), torch_float32(), torch_float64())) {
    info <- torch_finfo(dtype)
    one <- torch_tensor(1, dtype = dtype)
    expect_equal(as.numeric((one + info$eps)$to(dtype = torch_float64())), 1 + info$eps)
    expect_equal(as.numeric((one + info$eps / 4)$to(dtype = torch_float64())), 1)
    big <- torch_tensor(info$max, dtype = dtype)
    expect_equal(as.numeric(big$to(dtype = torch_float64())), info$max)
    expect_true(is.infinite(as.numeric((big * 2)$to(dtype = torch_float64()))))
    expect_equal(info$min, -info$max)
    tiny <- torch_tensor(info$tiny, dtype = dtype)
    expect_equal(as.numeric(tiny$to(dtype = torch_float64())), info$tiny)
    expect_equal(info$smallest_normal, info$tiny)
  }
  expect_equal(torch_finfo(torch_float64())$eps, .Machine$double.eps)
  expect_equal(torch_finfo()$bits, 32)
  expect_equal(torch_finfo(torch_float16())$max, 65504)
  expect_output(print(torch_finfo()), "finfo\\(resolution=1e-06")
})

test_that("torch_iinfo's limits hold in the integer dtypes", {
  i32 <- torch_iinfo(torch_int32())
  expect_equal(c(i32$bits, i32$max, i32$min), c(32, .Machine$integer.max, -.Machine$integer.max - 1))
  expect_equal(as.numeric(torch_tensor(i32$max, dtype = torch_int32())), i32$max)
  u8 <- torch_iinfo(torch_uint8())
  expect_equal(c(u8$min, u8$max), c(0, 255))
  expect_equal(as.numeric(torch_tensor(255, dtype = torch_uint8())), 255)
  expect_equal(torch_iinfo(torch_int64())$bits, 64)
  expect_output(print(i32), "iinfo\\(min=-2147483648, max=2147483647, dtype=int32\\)")
})

test_that("the wrong kind of dtype is refused", {
  expect_error(torch_finfo(torch_int32()), "torch_finfo: dtype must be a floating dtype")
  expect_error(torch_iinfo(torch_float32()), "torch_iinfo: dtype must be an integer dtype")
  expect_error(torch_finfo("float32"), "torch_finfo: dtype")
})
