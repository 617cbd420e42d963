test_that("finalizers free tensors when R collects them", {
  gc()
  before <- .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes
  local({
    x <- torch_ones(1000, 1000)  # 4 MB
    expect_gte(.Call(rcuda:::rc_gc_state)$cpu_allocated_bytes, before + 4e6)
  })
  gc()
  expect_lt(.Call(rcuda:::rc_gc_state)$cpu_allocated_bytes, before + 4e6)
})

test_that("a loop creating large CPU tensors stays within a bound", {
  gc()
  before <- .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes
  peak <- 0
  for (i in 1:40) {
    x <- torch_ones(4000, 4000)  # 64 MB each: 2.5 GB in all without collections
    peak <- max(peak, .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes - before)
  }
  rm(x)
  # The CPU threshold (1 GiB of new bytes between collections) bounds what unreachable
  # tensors can hold.
  expect_lt(peak, 1.2 * 2^30)
})

test_that("a loop creating and dropping large GPU tensors does not run out of memory", {
  skip_if_cuda_not_available()
  n <- 1e9 / 4  # 1 GB of float32
  for (i in 1:200) {  # 200 GB in all, far beyond any device
    x <- torch_empty(n, device = "cuda")
  }
  rm(x)
  gc()
  expect_lt(cuda_memory_stats()[["allocated_bytes.all.current"]], 2e9)
})

test_that("the OOM hook collects unreachable tensors before failing", {
  skip_if_cuda_not_available()
  old <- .Call(rcuda:::rc_gc_state)
  # With the threshold out of the way, only the OOM hook can free memory.
  .Call(rcuda:::rc_init, 100)
  on.exit(.Call(rcuda:::rc_init, getOption("rcuda.gc_threshold", 0.25)))
  for (i in 1:300) x <- torch_empty(1e9 / 4, device = "cuda:0")
  expect_gt(cuda_memory_stats("cuda:0")[["num_alloc_retries"]], 0)
})
