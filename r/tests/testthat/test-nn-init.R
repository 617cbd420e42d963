# Initialisers: ranges and moments against their formulas (large samples, tolerances a few
# standard errors wide), exact values for the deterministic ones, and seeding.

big <- function(...) torch_empty(..., dtype = torch_double())

test_that("uniform_ and normal_ draw from their distributions", {
  t <- big(200, 500)
  nn_init_uniform_(t, -2, 3)
  v <- as.vector(as_array(t))
  expect_gte(min(v), -2)
  expect_lte(max(v), 3)
  expect_lt(abs(mean(v) - 0.5), 5 * sqrt(25 / 12) / sqrt(1e5))  # five standard errors
  expect_equal(var(v), 25 / 12, tolerance = 0.02)
  nn_init_normal_(t, mean = 1.5, std = 0.5)
  v <- as.vector(as_array(t))
  expect_lt(abs(mean(v) - 1.5), 5 * 0.5 / sqrt(1e5))
  expect_equal(sd(v), 0.5, tolerance = 0.01)
  expect_error(nn_init_uniform_(t, 2, 1), "nn_init_uniform_: expects a <= b", class = "rcuda_value_error")
  expect_error(nn_init_normal_(t, std = -1), "nn_init_normal_", class = "rcuda_value_error")
})

test_that("constant_, zeros_, ones_ and eye_ fill exactly", {
  t <- big(3, 4)
  nn_init_constant_(t, 2.5)
  expect_identical(as_array(t), matrix(2.5, 3, 4))
  nn_init_zeros_(t)
  expect_identical(as_array(t), matrix(0, 3, 4))
  nn_init_ones_(t)
  expect_identical(as_array(t), matrix(1, 3, 4))
  nn_init_eye_(t)
  expect_identical(as_array(t), diag(1, 3, 4))
  expect_error(nn_init_eye_(big(2, 2, 2)), "nn_init_eye_: only 2-D", class = "rcuda_value_error")
  expect_error(nn_init_zeros_(matrix(0, 2, 2)), "must be a tensor", class = "rcuda_value_error")
})

test_that("kaiming and xavier initialisers use PyTorch's bounds and standard deviations", {
  fan_out <- 300
  fan_in <- 400
  t <- big(fan_out, fan_in)
  gain <- sqrt(2 / (1 + 0.3^2))
  nn_init_kaiming_uniform_(t, a = 0.3)
  v <- as.vector(as_array(t))
  bound <- gain * sqrt(3 / fan_in)
  expect_lte(max(abs(v)), bound)
  expect_equal(var(v), bound^2 / 3, tolerance = 0.02)
  nn_init_kaiming_uniform_(t, mode = "fan_out", nonlinearity = "relu")
  expect_lte(max(abs(as_array(t))), sqrt(2) * sqrt(3 / fan_out))
  expect_gt(max(abs(as_array(t))), 0.99 * sqrt(2) * sqrt(3 / fan_out))
  nn_init_kaiming_normal_(t, nonlinearity = "relu")
  expect_equal(sd(as.vector(as_array(t))), sqrt(2) / sqrt(fan_in), tolerance = 0.01)
  nn_init_xavier_uniform_(t, gain = 2)
  xb <- 2 * sqrt(6 / (fan_in + fan_out))
  expect_lte(max(abs(as_array(t))), xb)
  expect_equal(var(as.vector(as_array(t))), xb^2 / 3, tolerance = 0.02)
  nn_init_xavier_normal_(t)
  expect_equal(sd(as.vector(as_array(t))), sqrt(2 / (fan_in + fan_out)), tolerance = 0.01)
  expect_error(nn_init_kaiming_uniform_(t, mode = "fan_both"), "nn_init_kaiming_uniform_", class = "rcuda_value_error")
  expect_error(nn_init_xavier_uniform_(big(5)), "nn_init_xavier_uniform_", class = "rcuda_value_error")
})

test_that("trunc_normal_ stays inside [a, b] with the truncated normal's mean", {
  t <- big(400, 250)
  nn_init_trunc_normal_(t, mean = 0.5, std = 1, a = 0, b = 2)
  v <- as.vector(as_array(t))
  expect_gte(min(v), 0)
  expect_lte(max(v), 2)
  alpha <- -0.5
  beta <- 1.5
  expected_mean <- 0.5 + (dnorm(alpha) - dnorm(beta)) / (pnorm(beta) - pnorm(alpha))
  expect_equal(mean(v), expected_mean, tolerance = 0.01)
})

test_that("calculate_gain follows torch's table", {
  expect_equal(nn_init_calculate_gain("linear"), 1)
  expect_equal(nn_init_calculate_gain("tanh"), 5 / 3)
  expect_equal(nn_init_calculate_gain("relu"), sqrt(2))
  expect_equal(nn_init_calculate_gain("leaky_relu"), sqrt(2 / (1 + 0.01^2)))
  expect_equal(nn_init_calculate_gain("leaky_relu", 0.2), sqrt(2 / (1 + 0.2^2)))
  expect_error(nn_init_calculate_gain("swish"), "swish", class = "rcuda_value_error")
})

test_that("torch_manual_seed() makes initialisation repeatable", {
  a <- torch_empty(50)
  b <- torch_empty(50)
  torch_manual_seed(123)
  nn_init_normal_(a)
  torch_manual_seed(123)
  nn_init_normal_(b)
  expect_identical(as_array(a), as_array(b))
  nn_init_normal_(b)
  expect_false(identical(as_array(a), as_array(b)))
})

test_that("initialisers fill parameters that require grad and keep them leaves", {
  p <- nn_parameter(torch_empty(4, 5))
  nn_init_xavier_uniform_(p)
  expect_true(p$requires_grad && p$is_leaf)
  expect_lte(max(abs(as_array(p))), sqrt(6 / 9))
  out <- nn_init_zeros_(p)
  expect_identical(as_array(out), matrix(0, 4, 5))
})

test_that("a seed gives the same initial values on CUDA as on the CPU", {
  skip_if_cuda_not_available()
  cpu <- torch_empty(64, 32)
  gpu <- torch_empty(64, 32, device = "cuda")
  torch_manual_seed(9)
  nn_init_kaiming_uniform_(cpu)
  torch_manual_seed(9)
  nn_init_kaiming_uniform_(gpu)
  expect_equal(as_array(gpu), as_array(cpu), tolerance = 1e-6)
})
