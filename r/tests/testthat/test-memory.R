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

# The peak of new CPU bytes while a loop rebinds `x` to a fresh 64 MB tensor 40 times (2.5 GB in
# all without collections). Empty tensors: the allocator counts their bytes as any others', and
# the loop does not spend seconds writing 2.5 GB.
rebinding_loop_peak <- function() {
  gc()
  before <- .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes
  peak <- 0
  for (i in 1:40) {
    x <- torch_empty(4000, 4000)
    peak <- max(peak, .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes - before)
  }
  peak
}

test_that("a loop creating large CPU tensors stays within a bound", {
  # The CPU threshold (1 GiB of new bytes between collections) bounds what unreachable
  # tensors can hold.
  expect_lt(rebinding_loop_peak(), 1.2 * 2^30)
})

test_that("the time rule for full collections does not let a rebinding loop's garbage pile up", {
  # Each handle survives the minor collection made while it is created, so only full collections
  # free the loop's dead tensors, and the first one finds the tensors still bound alive and frees
  # nothing. With the time rule never allowing another (Note [GC pressure] 2), the growth past
  # twice what that one found alive must.
  on.exit(.Call(rcuda:::rc_init, rcuda:::gc_options()))
  .Call(rcuda:::rc_init, utils::modifyList(rcuda:::gc_options(), list(time_fraction = 1e-12)))
  before <- .Call(rcuda:::rc_gc_state)$cpu_full_collections
  expect_lt(rebinding_loop_peak(), 0.75 * 2^30)
  expect_gt(.Call(rcuda:::rc_gc_state)$cpu_full_collections, before)
})

test_that("a loop over small CPU tensors does not run a full collection every few steps", {
  # Note [GC pressure] 2: each result is promoted by the minor collection that finds it bound, so
  # the older generation fills with dead 800 KB tensors. Without the time rule on the garbage
  # allowed, a full collection (tens of milliseconds) followed every second minor one: 95 of
  # them in this loop. With it the older generation may hold up to 64 MiB more.
  gc()
  before <- .Call(rcuda:::rc_gc_state)
  .Call(rcuda:::rc_gc_reset_cpu_peak)
  x <- torch_zeros(1e5, dtype = "float64")
  for (i in 1:400) x <- x + 1
  after <- .Call(rcuda:::rc_gc_state)
  expect_equal(as_array(x[1:3]), rep(400, 3))
  expect_lt(after$cpu_full_collections - before$cpu_full_collections, 30)
  expect_lt(after$cpu_peak_bytes - before$cpu_allocated_bytes, 80 * 2^20)
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
  # With the thresholds out of the way, only the OOM hook can free memory.
  .Call(rcuda:::rc_init, list(threshold = 100, live_fraction = Inf))
  on.exit(.Call(rcuda:::rc_init, rcuda:::gc_options()))
  for (i in 1:300) x <- torch_empty(1e9 / 4, device = "cuda:0")
  expect_gt(cuda_memory_stats("cuda:0")[["num_alloc_retries"]], 0)
})

test_that("small tensors, which share finalizers in batches, are freed and keep their values", {
  # Note [Small tensors share a finalizer] (src/handles.cpp): batches of 64 handles.
  gc()
  before <- .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes
  kept <- list()
  for (i in 1:5000) {
    x <- torch_tensor(c(i, -i), dtype = torch_double())  # 16 bytes of storage
    y <- x * 2
    if (i %% 97 == 0) kept[[length(kept) + 1]] <- y
  }
  rm(x, y)
  gc()
  # What stays: the kept tensors and the other members of their batches, plus the batch being
  # filled: at most 64 handles of at most 256 bytes each per kept tensor, and one batch more.
  held <- .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes - before
  expect_lte(held, (length(kept) + 1) * 64 * 256)
  for (k in seq_along(kept)) {
    i <- 97 * k
    expect_identical(as.array(kept[[k]]), c(2 * i, -2 * i))
  }
  rm(kept)
  # Once the kept tensors are gone too, only the batch being filled may hold anything.
  for (i in 1:200) z <- torch_tensor(1)  # fills and replaces the current batches
  rm(z)
  gc()
  expect_lte(.Call(rcuda:::rc_gc_state)$cpu_allocated_bytes - before, 64 * 256)
})

test_that("a small view of a large tensor does not keep the large memory in a batch", {
  gc()
  before <- .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes
  local({
    x <- torch_ones(1000, 1000)  # 4 MB
    v <- x[1, 1:2]  # two elements, viewing the 4 MB storage
    rm(x)
    gc()
    expect_gte(.Call(rcuda:::rc_gc_state)$cpu_allocated_bytes, before + 4e6)  # v holds it
    expect_identical(as.array(v), c(1, 1))
  })
  gc()
  expect_lt(.Call(rcuda:::rc_gc_state)$cpu_allocated_bytes, before + 4e6)
})

test_that("the collection threshold follows the live bytes, within its floor and cap", {
  # Note [GC pressure]: after a collection the threshold is at least rcuda.gc_min_bytes (1 MiB)
  # and a tenth of what is allocated, and at most the cap (1 GiB on the CPU).
  live <- torch_ones(16e6)  # 64 MB held throughout
  for (i in 1:40) x <- torch_ones(1e6)  # 4 MB each: 160 MB, several collections
  state <- .Call(rcuda:::rc_gc_state)
  expect_gte(state$cpu_threshold_bytes, max(2^20, 0.1 * 64e6))
  expect_lte(state$cpu_threshold_bytes, 2^30)
  # What the loop left unreachable stays below the threshold reached.
  expect_lt(state$cpu_allocated_bytes - 64e6, state$cpu_threshold_bytes + 8e6 + 64e6)
  rm(live, x)
})

test_that("a training loop's garbage stays within a tenth of its live bytes, plus a step", {
  # Note [GC pressure]: the threshold is a tenth of the live bytes and a step's new ones (at
  # least 1 MiB), and the collection waits at most for the optimizer's next call. The earlier
  # rule's 16 MiB floor (up to 64 MiB with its time rule) let this loop hold 16 MiB or more of
  # garbage, twice what is live. The garbage at the peak is the loop's peak against that of the
  # same loop collecting before every step (which holds none from earlier steps; both include
  # the step's own gradients and temporaries).
  # The release at step boundaries would leave the collector nothing to do: off here.
  .Call(rcuda:::rc_init, modifyList(rcuda:::gc_options(), list(release_unreferenced = 0)))
  on.exit(.Call(rcuda:::rc_init, rcuda:::gc_options()))
  step <- mlp_training_loop(inputs = 512, batch = 64, seed = 1)$step
  peak_of <- function(steps, collect) {
    gc()
    .Call(rcuda:::rc_gc_reset_cpu_peak)
    for (i in seq_len(steps)) {
      if (collect) gc(full = FALSE)
      step()
    }
    .Call(rcuda:::rc_gc_state)$cpu_peak_bytes
  }
  for (i in 1:5) step()
  reference <- peak_of(10, collect = TRUE)
  peak <- peak_of(80, collect = FALSE)  # 0.26 MB new a step: 21 MB without collections
  gc()
  live <- .Call(rcuda:::rc_gc_state)$cpu_allocated_bytes  # parameters, gradients, Adam's state
  expect_gt(live, 8e6)
  expect_lt(peak - reference, 0.1 * live + 2 * 2^20)
})
