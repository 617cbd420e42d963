# Samplers (R/data-sampler.R) and dataloader(sampler =, batch_sampler =), against the indices
# drawn by hand.

test_that("samplers give their indices and lengths as torch for R's", {
  data <- tensor_dataset(torch_randn(10, 2), torch_arange(1, 10))
  s <- SequentialSampler(data)
  expect_length(s, 10)
  expect_identical(unlist(rcuda:::sampler_values(s)), 1:10)
  r <- RandomSampler(data)
  expect_length(r, 10)
  expect_setequal(unlist(rcuda:::sampler_values(r)), 1:10)
  torch_manual_seed(3)
  first <- unlist(rcuda:::sampler_values(r))
  torch_manual_seed(3)
  expect_identical(unlist(rcuda:::sampler_values(r)), first)
  with_replacement <- RandomSampler(data, replacement = TRUE, num_samples = 25)
  draws <- unlist(rcuda:::sampler_values(with_replacement))
  expect_length(draws, 25)
  expect_true(all(draws >= 1 & draws <= 10))
  more <- unlist(rcuda:::sampler_values(RandomSampler(data, num_samples = 15)))
  expect_setequal(more[1:10], 1:10)  # a whole permutation first
  b <- BatchSampler(s, 4, drop_last = FALSE)
  expect_length(b, 3)
  expect_identical(rcuda:::sampler_values(b), list(1:4, 5:8, 9:10))
  expect_length(BatchSampler(s, 4, drop_last = TRUE), 2)
  it <- BatchSampler(s, 4, TRUE)$.iter()
  expect_identical(it(), 1:4)
  expect_identical(it(), 5:8)
  expect_true(rcuda:::is_exhausted_value(it()))
  expect_error(BatchSampler(s, 0, FALSE), "batch_size", class = "rcuda_value_error")
  expect_error(RandomSampler(data, num_samples = 0), "num_samples", class = "rcuda_value_error")
})

test_that("dataloader batches a sampler's indices, or takes a batch sampler's batches", {
  x <- torch_arange(1, 10)
  data <- tensor_dataset(x)
  fixed <- list(.iter = function() values_of(c(10, 3, 7, 1, 2)), .length = function() 5)
  values_of <- function(v) {
    i <- 0
    function() if (i >= length(v)) rcuda:::exhausted_value() else { i <<- i + 1; v[[i]] }
  }
  dl <- dataloader(data, batch_size = 2, sampler = fixed)
  expect_length(dl, 3)
  batches <- list()
  loop(for (b in dl) batches[[length(batches) + 1]] <- as_array(b[[1]]))
  expect_identical(batches, list(c(10, 3), c(7, 1), 2))
  expect_length(dataloader(data, batch_size = 2, sampler = fixed, drop_last = TRUE), 2)
  batch_sampler <- list(.iter = function() values_of(list(c(2, 4, 6), c(1, 9))), .length = function() 2)
  dl <- dataloader(data, batch_sampler = batch_sampler)
  expect_length(dl, 2)
  it <- dataloader_make_iter(dl)
  expect_identical(as_array(dataloader_next(it)[[1]]), c(2, 4, 6))
  expect_identical(as_array(dataloader_next(it)[[1]]), c(1, 9))
  expect_null(dataloader_next(it))
  # Built-in samplers, and a dataset of single samples collated.
  items <- dataset(initialize = function() {}, .getitem = function(i) list(v = i * 10), .length = function() 6)()
  dl <- dataloader(items, batch_sampler = BatchSampler(SequentialSampler(items), 4, FALSE))
  it <- dataloader_make_iter(dl)
  expect_identical(as_array(dataloader_next(it)$v), c(10, 20, 30, 40))
  expect_error(dataloader(data, sampler = fixed, shuffle = TRUE), "mutually exclusive with shuffle",
               class = "rcuda_value_error")
  expect_error(dataloader(data, batch_size = 4, batch_sampler = batch_sampler), "mutually exclusive",
               class = "rcuda_value_error")
  expect_error(dataloader(data, sampler = mean), "must have an .iter", class = "rcuda_value_error")
  # Plain R values, as PyTorch takes any iterable: indices, or a list of batches.
  it <- dataloader_make_iter(dataloader(data, batch_size = 3, sampler = c(5, 4, 9, 1)))
  expect_identical(as_array(dataloader_next(it)[[1]]), c(5, 4, 9))
  it <- dataloader_make_iter(dataloader(data, batch_sampler = list(c(8, 2), 6)))
  expect_identical(as_array(dataloader_next(it)[[1]]), c(8, 2))
  expect_identical(as_array(dataloader_next(it)[[1]]), 6)
})
