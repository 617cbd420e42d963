# torch_generator() (R/generator.R, Note [Generator objects]): its draws are the default
# stream's for the same seed, it keeps its own place, and the default stream is left as it was.

test_that("a generator draws what the default stream draws from the same seed, and keeps its place", {
  g <- torch_generator()
  expect_s3_class(g, "torch_generator")
  g$set_current_seed(123L)
  expect_equal(as.numeric(g$current_seed()), 123)
  torch_manual_seed(7)
  before <- torch_get_rng_state()
  a1 <- torch_randint(0, 100, 6, generator = g)
  a2 <- torch_randint(0, 100, 6, generator = g)
  # The default stream did not move.
  expect_identical(as_array(torch_get_rng_state()), as_array(before))
  torch_manual_seed(123)
  expect_identical(as_array(a1), as_array(torch_randint(0, 100, 6)))
  expect_identical(as_array(a2), as_array(torch_randint(0, 100, 6)))
  # Setting the seed starts over.
  g$set_current_seed(123)
  expect_identical(as_array(torch_randint(0, 100, 6, generator = g)), as_array(a1))
  expect_output(print(g), "torch_generator()", fixed = TRUE)
})

test_that("every function that takes generator = draws from it", {
  draws <- function(gen) {
    x <- torch_zeros(5, dtype = torch_float64())
    list(
      bernoulli = as_array(torch_bernoulli(torch_full(8, 0.5), generator = gen)),
      multinomial = as_array(torch_multinomial(torch_tensor(c(1, 2, 3, 4)), 3, generator = gen)),
      poisson = as_array(torch_poisson(torch_full(4, 3), generator = gen)),
      normal = as_array(torch_normal(0, 1, size = 4, generator = gen)),
      exponential = as_array(x$exponential_(generator = gen)),
      log_normal = as_array(x$log_normal_(generator = gen)),
      geometric = as_array(x$geometric_(0.3, generator = gen)),
      random = as_array(x$random_(1, 10, generator = gen)),
      bernoulli_ = as_array(x$bernoulli_(0.4, generator = gen))
    )
  }
  g1 <- torch_generator()
  g1$set_current_seed(99)
  g2 <- torch_generator()
  g2$set_current_seed(99)
  torch_manual_seed(1)
  from_g1 <- draws(g1)
  torch_manual_seed(2)  # another default state: the generator's draws do not depend on it
  expect_identical(draws(g2), from_g1)
  torch_manual_seed(99)
  expect_identical(draws(NULL), from_g1)
})

test_that("dataloader takes a generator for its shuffling seed, and bad generators are refused", {
  ds <- tensor_dataset(torch_arange(1, 20))
  order_of <- function(gen) {
    dl <- dataloader(ds, batch_size = 20, shuffle = TRUE, generator = gen)
    as_array(dataloader_next(dataloader_make_iter(dl))[[1]])
  }
  g <- torch_generator()
  g$set_current_seed(5)
  expect_identical(order_of(g), order_of(5))
  expect_error(torch_randint(0, 3, 2, generator = "a"), "must be NULL or a torch_generator", class = "rcuda_value_error")
  expect_error(g$set_current_seed(-1), "whole number", class = "rcuda_value_error")
  expect_error(dataloader(ds, generator = "x"), "torch_generator", class = "rcuda_value_error")
})
