test_that("CUDA queries work with and without a GPU", {
  expect_type(cuda_is_available(), "logical")
  expect_gte(cuda_device_count(), 0)
  expect_equal(cuda_is_available(), cuda_device_count() > 0)
  expect_null(cuda_empty_cache())
})

test_that("cuda_doctor returns one row per check, with the machine described", {
  d <- cuda_doctor(gpu_checks = cuda_is_available())
  expect_s3_class(d, "data.frame")
  expect_equal(names(d), c("id", "title", "status", "detail", "fix", "device"))
  expect_true(all(d$status %in% c("PASS", "WARN", "FAIL", "SKIP")))
  expect_false(any(d$status == "FAIL"))
  expect_true(all(c("cpu_gemm", "devices", "kernel") %in% d$id))
  expect_true(all(nzchar(d$fix[d$status %in% c("WARN", "FAIL")])))
  s <- attr(d, "system")
  expect_equal(s$cuda_available, cuda_is_available())
  expect_equal(s$usable_cores >= 1, TRUE)
  expect_equal(nrow(attr(d, "devices")), cuda_device_count())
  expect_equal(attr(d, "libraries")$name, c("cuBLAS", "cuDNN", "NCCL"))
  if (!cuda_is_available()) expect_true(all(d$status[d$id == "kernel"] == "SKIP"))
  out <- capture.output(print(d))
  expect_match(out[length(out)], "^[0-9]+ passed, [0-9]+ warnings, 0 failed, [0-9]+ skipped$")
  expect_error(cuda_doctor(NA), class = "rcuda_value_error")
})

test_that("backends_cudnn_version follows torch for R", {
  expect_type(backends_cudnn_is_available(), "logical")
  if (backends_cudnn_is_available()) {
    v <- backends_cudnn_version()
    expect_s3_class(v, "numeric_version")
    expect_true(v >= "8.0.0")
  } else {
    expect_error(backends_cudnn_version(), "CuDNN is not available", class = "rcuda_device_error")
  }
})

test_that("CUDA device functions", {
  skip_if_cuda_not_available()
  expect_equal(cuda_current_device(), 0L)
  expect_type(cuda_get_device_name(), "character")
  cap <- cuda_get_device_capability()
  expect_equal(names(cap), c("Major", "Minor"))
  expect_true(cap[["Major"]] >= 5)
  expect_s3_class(cuda_runtime_version(), "numeric_version")
  expect_null(cuda_synchronize())
  stats <- cuda_memory_stats()
  expect_true(all(c("allocated_bytes.all.current", "reserved_bytes.all.peak") %in% names(stats)))
  # Device indices are 0-based, as in torch for R: the count itself is one too many.
  expect_error(cuda_get_device_name(cuda_device_count()), "does not exist", class = "rcuda_device_error")
})

test_that("CUDA ops agree with the CPU", {
  skip_if_cuda_not_available()
  x <- random_array(64, 32)
  g <- torch_tensor(x, dtype = torch_double(), device = "cuda")
  expect_equal(as.array((g %*% g$t())$cpu()), x %*% t(x))
  expect_equal(sum(g)$item(), sum(x))
  expect_error(g + torch_tensor(x, dtype = torch_double()), class = "rcuda_device_error")
})
