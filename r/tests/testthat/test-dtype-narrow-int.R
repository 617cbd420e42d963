# int8 and int16 from R (torch_int8(), torch_int16() / torch_short(), $char(), $short()), against
# base R integer arithmetic: a value v stored in b bits is ((v + 2^(b-1)) mod 2^b) - 2^(b-1).

wrap_bits <- function(v, bits) {
  half <- 2^(bits - 1)
  as.integer(((v + half) %% 2^bits) - half)
}

test_that("the int8 and int16 dtypes are torch's", {
  expect_true(torch_short() == torch_int16())
  expect_false(torch_int8() == torch_uint8())
  expect_equal(as.character(torch_int8()), "Char")
  expect_equal(as.character(torch_int16()), "Short")
  expect_output(print(torch_int16()), "torch_Short")
  expect_output(print(torch_int8()), "torch_Char")
  expect_false(torch_int8()$is_floating_point)
  x <- torch_tensor(1:3, dtype = torch_int8())
  expect_true(x$dtype == torch_int8())
  expect_equal(x$element_size(), 1L)
  expect_equal(torch_tensor(1:3, dtype = torch_short())$element_size(), 2L)
  expect_true(x$short()$dtype == torch_int16())
  expect_true(x$short()$char()$dtype == torch_int8())
  expect_true(torch_tensor(c(1.7, -2.7))$char()$dtype == torch_int8())
})

test_that("R integers and doubles convert to int8 and int16 and back", {
  v <- c(-128L, -1L, 0L, 1L, 127L)
  expect_identical(as_array(torch_tensor(v, dtype = torch_int8())), v)
  w <- c(-32768L, -300L, 0L, 300L, 32767L)
  expect_identical(as_array(torch_tensor(w, dtype = torch_int16())), w)
  m <- matrix(c(-5L, 6L, 7L, -8L, 9L, 10L), 2)
  back <- as_array(torch_tensor(m, dtype = torch_int16()))
  expect_identical(back, m)
  # Out of range: wrapped, as a conversion in torch.
  big <- c(128L, 200L, -129L, 1000L, 70000L)
  expect_identical(as_array(torch_tensor(big, dtype = torch_int8())), wrap_bits(big, 8))
  expect_identical(as_array(torch_tensor(big, dtype = torch_int16())), wrap_bits(big, 16))
  # Doubles truncate toward zero first.
  d <- c(1.9, -1.9, 127.5, -128.5, 300.25)
  expect_identical(as_array(torch_tensor(d, dtype = torch_int8())), wrap_bits(trunc(d), 8))
  expect_identical(as_array(torch_tensor(d, dtype = torch_int16())), wrap_bits(trunc(d), 16))
  expect_identical(torch_tensor(-7L, dtype = torch_int8())$item(), -7L)
  expect_error(torch_tensor(c(1L, NA), dtype = torch_int8()), class = "rcuda_value_error")
  # Through other dtypes and back.
  x <- torch_tensor(v, dtype = torch_int8())
  expect_identical(as_array(x$to(dtype = torch_float64())), as.numeric(v))
  expect_identical(as_array(x$long()), v)
  expect_identical(as_array(x$to(dtype = torch_uint8())), as.raw(v %% 256L))  # bytes, as torch for R
})

test_that("int8 and int16 arithmetic wraps as base R modular arithmetic predicts", {
  a <- c(100L, -100L, 127L, -128L, 50L)
  b <- c(100L, -100L, 1L, -1L, -3L)
  x <- torch_tensor(a, dtype = torch_int8())
  y <- torch_tensor(b, dtype = torch_int8())
  expect_identical(as_array(x + y), wrap_bits(a + b, 8))
  expect_identical(as_array(x - y), wrap_bits(a - b, 8))
  expect_identical(as_array(x * y), wrap_bits(a * b, 8))
  expect_identical(as_array(-x), wrap_bits(-a, 8))
  expect_true((x + y)$dtype == torch_int8())
  s <- torch_tensor(a * 300L, dtype = torch_int16())
  expect_identical(as_array(s * 3L), wrap_bits(wrap_bits(a * 300L, 16) * 3L, 16))
  # %/% and %% follow base R (floor division), in the tensor's dtype.
  p <- c(-7L, 7L, 100L, -100L)
  q <- c(2L, -3L, 7L, 7L)
  xp <- torch_tensor(p, dtype = torch_int8())
  xq <- torch_tensor(q, dtype = torch_int8())
  expect_identical(as_array(xp %/% xq), p %/% q)
  expect_identical(as_array(xp %% xq), p %% q)
  expect_true((xp %/% xq)$dtype == torch_int8())
  # True division and doubles give the default floating dtype.
  expect_true((xp / xq)$dtype == torch_float32())
  expect_equal(as_array(xp / xq), p / q, tolerance = 1e-6)
  expect_true((xp + 0.5)$dtype == torch_float32())
})

test_that("int8 and int16 promote as torch.promote_types", {
  i8 <- torch_tensor(c(127L, -128L), dtype = torch_int8())
  u8 <- torch_tensor(c(255L, 0L), dtype = torch_uint8())
  i16 <- torch_tensor(c(1L, 2L), dtype = torch_int16())
  expect_true((i8 + u8)$dtype == torch_int16())
  expect_identical(as_array(i8 + u8), c(382L, -128L))
  expect_true((u8 + i16)$dtype == torch_int16())
  expect_true((i8 + i16)$dtype == torch_int16())
  expect_true((i16 + torch_tensor(1:2, dtype = torch_int32()))$dtype == torch_int32())
  expect_true((i8 + torch_tensor(c(1, 2), dtype = torch_float16()))$dtype == torch_float16())
  expect_true((i8 + 1L)$dtype == torch_int8())  # a number counts by its category only
})

test_that("sums of int8 and int16 are int64, as torch", {
  a <- c(127L, 127L, 127L, -128L)
  x <- torch_tensor(a, dtype = torch_int8())
  expect_true(torch_sum(x)$dtype == torch_long())
  expect_identical(as_array(torch_sum(x)), sum(a))
  expect_identical(as_array(torch_cumsum(x, 1)), cumsum(a))
  expect_identical(as_array(torch_max(x)), 127L)
  expect_true(torch_max(x)$dtype == torch_int8())
  m <- matrix(c(300L, -2L, 400L, 5L), 2)
  expect_identical(as_array(torch_sum(torch_tensor(m, dtype = torch_int16()), dim = 1)),
                   as.integer(colSums(m)))
})

test_that("sort orders int8 and int16 values as R's sort", {
  v <- c(5L, -128L, 127L, 0L, -1L, 5L)
  for (dtype in list(torch_int8(), torch_int16())) {
    s <- torch_sort(torch_tensor(v, dtype = dtype))
    expect_identical(as_array(s[[1]]), sort(v))
    expect_true(s[[1]]$dtype == dtype)
    d <- torch_sort(torch_tensor(v, dtype = dtype), descending = TRUE)
    expect_identical(as_array(d[[1]]), sort(v, decreasing = TRUE))
  }
})

test_that("torch_iinfo knows int8 and int16", {
  i8 <- torch_iinfo(torch_int8())
  expect_equal(c(i8$bits, i8$min, i8$max), c(8, -128, 127))
  i16 <- torch_iinfo(torch_short())
  expect_equal(c(i16$bits, i16$min, i16$max), c(16, -32768, 32767))
  expect_identical(as_array(torch_tensor(i16$max, dtype = torch_int16()) + 1L), -32768L)
  expect_output(print(i8), "iinfo(min=-128, max=127, dtype=int8)", fixed = TRUE)
})

test_that("int8 and int16 tensors print as torch for R", {
  expect_equal(format(torch_tensor(c(-1L, 2L), dtype = torch_int8())),
               c("torch_tensor", "-1", " 2", "[ CPUCharType{2} ]"))
  expect_equal(tail(format(torch_tensor(matrix(1:4, 2), dtype = torch_int16())), 1),
               "[ CPUShortType{2,2} ]")
})

test_that("random integers fit the dtype", {
  torch_manual_seed(3)
  r <- torch_randint(-128, 128, size = 500, dtype = torch_int8())
  expect_true(r$dtype == torch_int8())
  values <- as_array(r)
  expect_true(all(values >= -128L & values <= 127L))
  expect_error(torch_randint(0, 200, size = 2, dtype = torch_int8()), class = "rcuda_value_error")
})

test_that("int8 and int16 tensors save and load (as safetensors I8 and I16)", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  x <- torch_tensor(c(-128L, 127L, 5L), dtype = torch_int8())
  y <- torch_tensor(matrix(c(-32768L, 32767L, 0L, 9L), 2), dtype = torch_int16())
  torch_save(list(x = x, y = y), path)
  back <- torch_load(path)
  expect_true(back$x$dtype == torch_int8())
  expect_true(back$y$dtype == torch_int16())
  expect_identical(as_array(back$x), as_array(x))
  expect_identical(as_array(back$y), as_array(y))
})

test_that("int8 and int16 work on CUDA as on the CPU", {
  skip_if_cuda_not_available()
  a <- c(100L, -100L, 127L, -128L)
  for (dtype in list(torch_int8(), torch_int16())) {
    x <- torch_tensor(a, dtype = dtype, device = "cuda")
    expect_identical(as_array((x + x)$cpu()), as_array(torch_tensor(a, dtype = dtype) * 2L))
    expect_identical(as_array(torch_sum(x)$cpu()), sum(a))
  }
})
