# dataloader(), dataloader_make_iter(), dataloader_next(), loop() and the coro protocol; batches
# checked against base R indexing of the same values.

collect <- function(dl) {
  out <- list()
  loop(for (b in dl) out[[length(out) + 1]] <- b)
  out
}

test_that("batches of a tensor_dataset hold the samples in order, the last one smaller", {
  xa <- random_array(10, 3)
  ya <- sample(100L, 10)
  dl <- dataloader(tensor_dataset(x = torch_tensor(xa), y = torch_tensor(ya)), batch_size = 4)
  expect_identical(length(dl), 3L)
  batches <- collect(dl)
  expect_length(batches, 3)
  starts <- c(1, 5, 9)
  for (k in 1:3) {
    rows <- starts[k]:min(starts[k] + 3, 10)
    expect_equal(as_array(batches[[k]]$x), xa[rows, , drop = FALSE], tolerance = 1e-6)
    expect_identical(as_array(batches[[k]]$y), ya[rows])
  }
  dl_drop <- dataloader(tensor_dataset(torch_tensor(xa)), batch_size = 4, drop_last = TRUE)
  expect_identical(length(dl_drop), 2L)
  expect_length(collect(dl_drop), 2)
})

test_that("a dataset with .getbatch is asked for whole batches, never for samples", {
  ds <- tensor_dataset(x = torch_arange(1, 7))
  asked <- list()
  getbatch <- ds$.getbatch
  ds$.getbatch <- function(index) {
    asked[[length(asked) + 1]] <<- index
    getbatch(index)
  }
  getitem <- ds$.getitem
  ds$.getitem <- function(index, ...) {
    if (length(index) == 1 && !identical(list(...), list(drop = FALSE))) stop(".getitem for a sample")
    getitem(index, ...)
  }
  batches <- collect(dataloader(ds, batch_size = 3))
  expect_identical(asked, list(1:3, 4:6, 7L))  # one call per batch
  expect_identical(as_array(batches[[3]]$x), 7)
})

test_that("the default collate stacks tensors and joins R values, as torch for R", {
  samples <- dataset(
    initialize = function() self$m <- array(rnorm(5 * 2 * 3), c(5, 2, 3)),
    .getitem = function(i) {
      list(img = torch_tensor(self$m[i, , ]), arr = self$m[i, , ], int = i, dbl = i / 2,
           lgl = i %% 2 == 0, chr = letters[i], nested = list(a = torch_tensor(c(i, -i)), i))
    },
    .length = function() 5
  )
  ds <- samples()
  b <- dataloader(ds, batch_size = 3)$.iter()$.next()
  expect_named(b, c("img", "arr", "int", "dbl", "lgl", "chr", "nested"))
  expect_equal(as_array(b$img), ds$m[1:3, , ], tolerance = 1e-6)
  expect_equal(as_array(b$arr), ds$m[1:3, , ], tolerance = 1e-6)
  expect_true(b$int$dtype == torch_long())
  expect_identical(as_array(b$int), 1:3)
  expect_true(b$dbl$dtype == torch_float())
  expect_equal(as_array(b$dbl), (1:3) / 2)
  expect_identical(as_array(b$lgl), c(FALSE, TRUE, FALSE))
  expect_identical(b$chr, c("a", "b", "c"))
  expect_named(b$nested, c("a", ""))
  expect_identical(as_array(b$nested$a), rbind(c(1L, -1L), c(2L, -2L), c(3L, -3L)))
  expect_identical(as_array(b$nested[[2]]), 1:3)
})

test_that("collate_fn and batch_size = NULL", {
  ds <- dataset(.getitem = function(i) list(v = i), .length = function() 5)()
  sums <- collect(dataloader(ds, batch_size = 2, collate_fn = function(s) sum(sapply(s, `[[`, "v"))))
  expect_identical(unlist(sums), c(3L, 7L, 5L))
  singles <- collect(dataloader(ds, batch_size = NULL))
  expect_length(singles, 5)
  expect_identical(as_array(singles[[4]]$v), 4L)
  expect_equal(length(dataloader(ds, batch_size = NULL)), 5)
})

test_that("shuffling is a permutation, repeated under the same seed", {
  n <- 50
  ds <- tensor_dataset(torch_tensor(1:n))
  dl <- dataloader(ds, batch_size = 8, shuffle = TRUE)
  order_of <- function() unlist(lapply(collect(dl), function(b) as_array(b[[1]])))
  torch_manual_seed(123)
  a <- order_of()
  expect_setequal(a, 1:n)
  expect_length(a, n)
  expect_false(identical(a, 1:n))
  b <- order_of()  # the next epoch draws a new order
  expect_false(identical(a, b))
  torch_manual_seed(123)
  expect_identical(order_of(), a)
  torch_manual_seed(124)
  expect_false(identical(order_of(), a))

  # A loader's own seed: its epochs repeat whatever else draws from the global generator.
  own <- function() dataloader(ds, batch_size = 8, shuffle = TRUE, generator = 7)
  order_own <- function(d) unlist(lapply(collect(d), function(b) as_array(b[[1]])))
  d1 <- own()
  first <- order_own(d1)
  second <- order_own(d1)
  torch_randn(10)
  d2 <- own()
  expect_identical(order_own(d2), first)
  expect_identical(order_own(d2), second)
  expect_false(identical(first, second))
  expect_setequal(first, 1:n)
})

test_that("shuffled orders are uniform over positions", {
  # Each value's position over many epochs: a chi-squared test against uniform positions.
  n <- 6
  dl <- dataloader(tensor_dataset(torch_tensor(1:n)), batch_size = n, shuffle = TRUE)
  torch_manual_seed(99)
  counts <- matrix(0, n, n)
  for (epoch in 1:600) {
    o <- as_array(dataloader_next(dataloader_make_iter(dl))[[1]])
    counts[cbind(o, 1:n)] <- counts[cbind(o, 1:n)] + 1
  }
  expected <- 600 / n
  statistic <- sum((counts - expected)^2 / expected)
  expect_lt(statistic, qchisq(0.999, (n - 1)^2))
})

test_that("dataloader_next returns `completed` at the end; the iterator is torch for R's", {
  ds <- tensor_dataset(torch_tensor(1:5))
  it <- dataloader_make_iter(dataloader(ds, batch_size = 2))
  expect_identical(as_array(dataloader_next(it)[[1]]), 1:2)
  expect_identical(as_array(dataloader_next(it)[[1]]), 3:4)
  expect_identical(as_array(dataloader_next(it)[[1]]), 5L)
  expect_null(dataloader_next(it))
  expect_identical(dataloader_next(it, completed = "done"), "done")
  expect_identical(it$.next(), as.symbol(".__exhausted__."))  # coro's exhausted() sentinel
  expect_error(dataloader_next(list()), "dataloader_make_iter", class = "rcuda_value_error")
})

test_that("loop() runs for loops over dataloaders, iterators and vectors, with break and next", {
  dl <- dataloader(tensor_dataset(torch_tensor(1:10)), batch_size = 3)
  seen <- c()
  loop(for (b in dl) {
    v <- as_array(b[[1]])
    if (v[1] == 4) next
    if (v[1] == 10) break
    seen <- c(seen, v)
  })
  expect_identical(seen, c(1:3, 7:9))
  expect_identical(as_array(b[[1]]), 10L)  # the loop variable keeps the last batch, as for does
  total <- 0
  loop(for (i in c(5, 6, 7)) total <- total + i)
  expect_identical(total, 18)
  it <- dataloader_make_iter(dl)
  dataloader_next(it)
  count <- 0
  loop(for (b in it) count <- count + 1)  # the rest of an iterator
  expect_identical(count, 3)
  expect_error(loop(while (TRUE) 1), "for loop", class = "rcuda_value_error")
})

test_that("the coro::as_iterator method yields the batches, then coro's exhausted()", {
  dl <- dataloader(tensor_dataset(torch_tensor(1:3)), batch_size = 2)
  next_batch <- rcuda:::as_iterator_dataloader(dl)
  expect_identical(as_array(next_batch()[[1]]), 1:2)
  expect_identical(as_array(next_batch()[[1]]), 3L)
  expect_identical(next_batch(), as.symbol(".__exhausted__."))
  # Registered for coro's namespace, when it loads (once, however often rcuda loads).
  rcuda:::register_coro_methods()
  rcuda:::register_coro_methods()
  hooks <- getHook(packageEvent("coro", "onLoad"))
  ours <- Filter(function(h) identical(attr(h, "rcuda_s3_hook"), "coro::as_iterator dataloader"), hooks)
  expect_length(ours, 1)
})

test_that("pin_memory without CUDA warns and leaves batches as they are", {
  if (cuda_is_available()) skip("CUDA is available: the pinned path is tested below")
  ds <- tensor_dataset(torch_ones(4, 2))
  expect_warning(dl <- dataloader(ds, batch_size = 2, pin_memory = TRUE), "CUDA is not available")
  expect_identical(as_array(dataloader_next(dataloader_make_iter(dl))[[1]]), matrix(1, 2, 2))
  expect_error(torch_ones(2)$pin_memory(), class = "rcuda_device_error")
  expect_false(torch_ones(2)$is_pinned())
})

test_that("pinned batches copy to the GPU with their values", {
  skip_if_cuda_not_available()
  xa <- random_array(64, 5)
  dl <- dataloader(tensor_dataset(x = torch_tensor(xa), y = torch_tensor(1:64)), batch_size = 16,
                   pin_memory = TRUE)
  on_gpu <- list()
  loop(for (b in dl) {
    expect_true(b$x$is_pinned())
    expect_true(b$y$is_pinned())
    on_gpu[[length(on_gpu) + 1]] <- b$x$to(device = "cuda")  # asynchronous from pinned memory
  })
  cuda_synchronize()
  for (k in 1:4) {
    expect_equal(as_array(on_gpu[[k]]$cpu()), xa[(16 * k - 15):(16 * k), ], tolerance = 1e-6)
  }
})

test_that("dataloader refuses what it cannot do", {
  ds <- tensor_dataset(torch_ones(4))
  expect_error(dataloader(list(1)), "dataset", class = "rcuda_value_error")
  expect_error(dataloader(ds, batch_size = 0), "batch_size", class = "rcuda_value_error")
  expect_error(dataloader(ds, sampler = "a"), "sampler must have an .iter", class = "rcuda_value_error")
  expect_error(dataloader(ds, generator = "x"), "generator", class = "rcuda_value_error")
  expect_output(print(dataloader(ds, batch_size = 3)), "2 batches of 3 samples")
  expect_true(is_dataloader(dataloader(ds)))
})

test_that("enumerate() gives each batch in order, once, with a deprecation warning", {
  x <- torch_randn(10, 3)
  y <- torch_arange(1, 10)
  dl <- dataloader(tensor_dataset(x, y), batch_size = 4)
  seen <- list()
  expect_warning(class = "deprecated", {
    for (b in enumerate(dl)) seen[[length(seen) + 1]] <- list(as_array(b[[1]]), as_array(b[[2]]))
  })
  expect_length(seen, 3)
  expect_equal(seen[[1]][[1]], as_array(x)[1:4, ])
  expect_equal(seen[[3]][[1]], as_array(x)[9:10, ])
  expect_equal(unlist(lapply(seen, `[[`, 2)), 1:10)
  # Reading an element twice does not advance the loader.
  els <- suppressWarnings(enumerate(dl))
  first <- as_array(els[[1]][[1]])
  expect_equal(as_array(els[[1]][[1]]), first)
  expect_equal(as_array(els[[2]][[1]]), as_array(x)[5:8, ])
})
