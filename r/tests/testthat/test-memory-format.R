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

test_that("a module's $to(memory_format =) lays its 4-D parameters out channels-last", {
  model <- nn_sequential(nn_conv2d(3, 8, 3), nn_batch_norm2d(8), nn_relu(), nn_conv2d(8, 2, 1))
  x <- torch_randn(2, 3, 7, 7)
  want <- as_array(model(x))
  weight_before <- as_array(model[[1]]$weight)
  model$to(memory_format = torch_channels_last_format())
  cl <- torch_channels_last_format()
  expect_true(model[[1]]$weight$is_contiguous(memory_format = cl))
  expect_true(model[[4]]$weight$is_contiguous(memory_format = cl))
  expect_true(model[[1]]$bias$is_contiguous())  # 1-D: kept
  expect_equal(as_array(model[[1]]$weight), weight_before)
  got <- model(x$contiguous(memory_format = cl))
  expect_true(got$is_contiguous(memory_format = cl))
  expect_equal(as_array(got), want, tolerance = 1e-5)
  # The parameters stay the optimizer's leaves: a step trains them in their new layout.
  opt <- optim_sgd(model$parameters, lr = 0.1)
  model(x)$sum()$backward()
  opt$step()
  expect_true(model[[1]]$weight$is_contiguous(memory_format = cl))
  model$to(memory_format = torch_contiguous_format())
  expect_true(model[[1]]$weight$is_contiguous())
  expect_error(model$to(memory_format = "channels_last"), "nn_module\\$to: memory_format")
})

test_that("a module moves to CUDA and channels-last in one $to()", {
  skip_if_cuda_not_available()
  model <- nn_conv2d(3, 4, 3)
  model$to(device = "cuda", memory_format = torch_channels_last_format())
  expect_true(model$weight$is_cuda)
  expect_true(model$weight$is_contiguous(memory_format = torch_channels_last_format()))
})

test_that("memory formats compare with == and !=, and with nothing else", {
  expect_true(torch_contiguous_format() == torch_contiguous_format())
  expect_false(torch_preserve_format() == torch_contiguous_format())
  expect_true(torch_channels_last_format() != torch_contiguous_format())
  expect_false(torch_channels_last_format() != torch_channels_last_format())
  expect_error(torch_contiguous_format() == "contiguous", "not a memory format \\(character\\)",
               class = "rcuda_value_error")
})
