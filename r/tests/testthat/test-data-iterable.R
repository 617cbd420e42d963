# iterable_dataset() and dataloader() over a stream (R/data-iterable.R, Note [Batches from a
# stream] in R/data-loader.R). The reference: the stream's own values, in order.

exhausted <- function() as.symbol(".__exhausted__.")  # what coro::exhausted() returns

counting <- iterable_dataset(
  "counting",
  initialize = function(n = 320, with_length = TRUE) {
    self$n <- n
    if (!with_length) self$.length <- NULL
  },
  .iter = function() {
    i <- 0
    function() {
      i <<- i + 1
      if (i <= self$n) i else exhausted()
    }
  },
  .length = function() self$n
)

collect_batches <- function(dl) {
  out <- list()
  loop(for (b in dl) out[[length(out) + 1]] <- b)
  out
}

test_that("coro's sentinel is the one rcuda reads", {
  skip_if_not_installed("coro")
  expect_identical(coro::exhausted(), exhausted())
})

test_that("a dataloader takes batch_size samples from the stream, in order", {
  n <- sample(300:340, 1)
  ds <- counting(n)
  expect_s3_class(ds, "iterable_dataset")
  expect_s3_class(ds, "dataset")
  expect_equal(length(ds), n)
  dl <- dataloader(ds, batch_size = 32)
  expect_equal(length(dl), ceiling(n / 32))
  batches <- collect_batches(dl)
  expect_length(batches, ceiling(n / 32))
  expect_equal(unlist(lapply(batches, as_array)), seq_len(n))
  expect_equal(batches[[length(batches)]]$shape, n - 32 * (ceiling(n / 32) - 1))
  # drop_last drops the short batch; each epoch starts the stream again.
  dl <- dataloader(ds, batch_size = 32, drop_last = TRUE)
  expect_equal(length(dl), n %/% 32)
  for (epoch in 1:2) {
    batches <- collect_batches(dl)
    expect_length(batches, n %/% 32)
    expect_equal(unlist(lapply(batches, as_array)), seq_len(32 * (n %/% 32)))
  }
  # batch_size = NULL gives each sample as it comes, converted.
  singles <- collect_batches(dataloader(counting(5), batch_size = NULL))
  expect_equal(vapply(singles, function(t) t$item(), numeric(1)), 1:5)
})

test_that("a stream without .length() has no length, and fit() still trains on it", {
  ds <- counting(33, with_length = FALSE)
  expect_true(is.na(length(ds)))
  dl <- dataloader(ds, batch_size = 8)
  expect_true(is.na(length(dl)))
  expect_length(collect_batches(dl), 5)

  pairs <- iterable_dataset(
    initialize = function(x, y) {
      self$x <- x
      self$y <- y
    },
    .iter = function() {
      i <- 0
      function() {
        i <<- i + 1
        if (i > self$x$shape[1]) return(exhausted())
        list(x = self$x[i, ], y = self$y[i, ])
      }
    }
  )
  torch_manual_seed(3)
  x <- torch_randn(20, 3)
  y <- torch_randn(20, 1)
  batches <- collect_batches(dataloader(pairs(x, y), batch_size = 6))
  expect_length(batches, 4)
  expect_equal(as_array(torch_cat(lapply(batches, function(b) b$x))), as_array(x))
  expect_equal(as_array(torch_cat(lapply(batches, function(b) b$y))), as_array(y))
  # fit() over the stream is the hand-written loop over the same batches.
  model <- nn_linear(3, 1)
  init <- lapply(model$state_dict(), function(t) t$clone())
  fit(model, dataloader(pairs(x, y), batch_size = 6), nnf_mse_loss,
      optim_sgd(model$parameters, lr = 0.1), epochs = 2, verbose = FALSE)
  fitted <- lapply(model$parameters, as_array)
  model$load_state_dict(init)
  opt <- optim_sgd(model$parameters, lr = 0.1)
  for (epoch in 1:2) for (b in batches) {
    opt$zero_grad()
    loss <- nnf_mse_loss(model(b$x), b$y)
    loss$backward()
    opt$step()
  }
  expect_identical(lapply(model$parameters, as_array), fitted)
})

test_that("iterable datasets refuse shuffling, indexing and a bad .iter", {
  ds <- counting(10)
  expect_error(dataloader(ds, batch_size = 2, shuffle = TRUE), "shuffle", class = "rcuda_value_error")
  expect_error(ds$.getitem(1), "through .iter", class = "rcuda_value_error")
  broken <- iterable_dataset("broken", .iter = function() 1:3)
  expect_error(collect_batches(dataloader(broken(), batch_size = 2)), "iterator function",
               class = "rcuda_value_error")
  plain <- dataset("plain", .getitem = function(i) i, .length = function() 3)
  expect_error(iterable_dataset("x", inherit = plain), "inherit", class = "rcuda_value_error")
  child <- iterable_dataset("child", inherit = counting)
  expect_equal(unlist(lapply(collect_batches(dataloader(child(7), batch_size = 3)), as_array)), 1:7)
  expect_s3_class(child(7), c("child", "counting", "iterable_dataset", "dataset"), exact = TRUE)
})
