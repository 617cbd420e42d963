# with_device() / local_device(): the default device of creation functions given no device.

test_that("with_device() sets the default device for its code and restores the previous one", {
  expect_null(rcuda:::default_device_state$device)
  inside <- with_device(device = "cpu", {
    list(rcuda:::default_device_state$device, torch_randn(2)$device$type, torch_zeros(1)$device$type)
  })
  expect_equal(inside, list("cpu", "cpu", "cpu"))
  expect_null(rcuda:::default_device_state$device)
  # Nested, and through an error.
  with_device(device = torch_device("cpu"), {
    expect_error(with_device(device = "cpu", stop("inner")), "inner")
    expect_equal(rcuda:::default_device_state$device, "cpu")
  })
  expect_null(rcuda:::default_device_state$device)
  f <- function() {
    local_device("cpu")
    rcuda:::default_device_state$device
  }
  expect_equal(f(), "cpu")
  expect_null(rcuda:::default_device_state$device)
})

test_that("with_device() refuses a device rcuda does not have, and leaves the default as it was", {
  expect_error(with_device(device = "mps", torch_randn(2)), "cannot place tensors on device \"mps\"")
  # (meta tensors come only from some creators: test-meta-tensors.R)
  expect_error(with_device(device = "meta", torch_tensor(1)), "makes tensors on device \"meta\" only with")
  expect_error(with_device(device = "tpu", torch_randn(2)), "unknown device type \"tpu\"")
  expect_error(with_device(device = 3, torch_randn(2)), "with_device: device must be a torch_device\\(\\) or a string",
               class = "value_error")
  expect_error(local_device(c("cpu", "cuda")), "local_device: device must be")
  expect_error(with_device(torch_randn(2)), "with_device: device is required")
  expect_null(rcuda:::default_device_state$device)
})

test_that("creation functions, modules and torch_tensor() follow with_device() on the GPU", {
  skip_if(!cuda_is_available(), "no CUDA device")
  cpu <- torch_tensor(c(1, 2))
  with_device(device = "cuda", {
    expect_true(torch_randn(2, 2)$is_cuda)
    expect_true(torch_tensor(1:3)$is_cuda)
    expect_true(torch_arange(1, 4)$is_cuda)
    expect_true(torch_randperm(4)$is_cuda)
    expect_true(nn_linear(2, 3)$weight$is_cuda)
    expect_false(torch_zeros(2, device = "cpu")$is_cuda)  # a device given wins
    expect_false((cpu + 1)$is_cuda)                        # ops stay where their inputs are
    expect_equal(as_array(torch_ones(2)$cpu()), c(1, 1))
  })
  expect_false(torch_randn(2)$is_cuda)
})
