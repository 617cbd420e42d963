# Memory formats from R: $contiguous(memory_format =), $is_contiguous(memory_format =),
# $to(memory_format =), values unchanged, layers keeping a channels-last input's format.

test_that("a tensor converts to channels-last and back with its values", {
  x <- torch_randn(2, 3, 4, 5)
  cl <- x$contiguous(memory_format = torch_channels_last_format())
  expect_true(cl$is_contiguous(memory_format = torch_channels_last_format()))
  expect_false(cl$is_contiguous())
  expect_false(x$is_contiguous(memory_format = torch_channels_last_format()))
  expect_equal(as_array(cl), as_array(x))
  back <- cl$contiguous()
  expect_true(back$is_contiguous())
  expect_equal(as_array(back), as_array(x))
  moved <- x$to(dtype = torch_double(), memory_format = torch_channels_last_format())
  expect_true(moved$is_contiguous(memory_format = torch_channels_last_format()))
  expect_equal(as_array(moved), as_array(x), tolerance = 1e-7)
  expect_error(torch_randn(2, 3, 4)$contiguous(memory_format = torch_channels_last_format()), "4-D")
  expect_error(x$contiguous(memory_format = "channels_last"), "memory_format")
})

test_that("relu, residual adds and convolutions keep a channels-last input's format", {
  x <- torch_randn(2, 4, 6, 6)$contiguous(memory_format = torch_channels_last_format())
  conv <- nn_conv2d(4, 4, 3, padding = 1)
  y <- torch_relu(conv(x)) + x
  expect_true(y$is_contiguous(memory_format = torch_channels_last_format()))
  want <- torch_relu(conv(x$contiguous())) + x$contiguous()
  expect_equal(as_array(y), as_array(want), tolerance = 1e-5)
})
