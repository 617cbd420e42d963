# torch_get_rng_state(), torch_set_rng_state(), local_torch_manual_seed() and
# with_torch_manual_seed() (R/random-state.R): the references are the draws themselves, taken
# again from the saved state, and the state's byte layout (seed, then Philox steps taken).

test_that("the state is the seed and the steps taken, little-endian", {
  torch_manual_seed(258 + 65536 * 7)
  s <- torch_get_rng_state()
  expect_equal(s$dtype$.type(), "Byte")
  expect_equal(as.integer(s), c(2, 1, 7, rep(0, 5), rep(0, 8)))
  torch_randn(3)
  torch_rand(2)
  expect_equal(as.integer(torch_get_rng_state())[9:16], c(2, rep(0, 7)))
})

test_that("restoring the state repeats the draws, on every device", {
  for (device in test_devices()) {
    torch_manual_seed(sample.int(1e6, 1))
    torch_randn(4)
    s <- torch_get_rng_state()
    a <- as_array(torch_randn(3, 2, device = device))
    b <- as_array(torch_rand(5, device = device))
    torch_randn(7)
    torch_set_rng_state(s)
    expect_identical(as_array(torch_randn(3, 2, device = device)), a)
    expect_identical(as_array(torch_rand(5, device = device)), b)
    torch_set_rng_state(s)
    expect_identical(as_array(cuda_get_rng_state()), as_array(s))
  }
})

test_that("with_torch_manual_seed seeds the code and leaves the stream where it was", {
  torch_manual_seed(1)
  x <- as_array(torch_randn(1))
  y <- as_array(torch_randn(1))
  inside <- with_torch_manual_seed(seed = 1, {
    list(as_array(torch_randn(1)), as_array(torch_randn(1)), as_array(torch_randn(1)))
  })
  z <- as_array(torch_randn(1))
  expect_identical(inside, list(x, y, z))
  # local_torch_manual_seed lasts until the calling function returns.
  torch_manual_seed(5)
  before <- as_array(torch_get_rng_state())
  f <- function() {
    local_torch_manual_seed(9)
    as_array(torch_randn(2))
  }
  drawn <- f()
  expect_identical(as_array(torch_get_rng_state()), before)
  torch_manual_seed(9)
  expect_identical(as_array(torch_randn(2)), drawn)
})

test_that("a state that is not 16 uint8 values is refused by name", {
  expect_error(torch_set_rng_state(torch_zeros(16)), "torch_set_rng_state: state", class = "rcuda_value_error")
  expect_error(torch_set_rng_state(torch_zeros(4, dtype = torch_uint8())), "16", class = "rcuda_value_error")
  expect_error(torch_set_rng_state(1:16), "torch_set_rng_state", class = "rcuda_value_error")
  expect_error(with_torch_manual_seed(1, 2, seed = 1), "only code and seed", class = "rcuda_value_error")
})
