# cuda_amp_grad_scaler(): gradients unscaled to those of the unscaled loss, steps with inf or NaN
# skipped, the scale sequence of torch's rule (written out here), state_dict round trip, a
# disabled scaler, errors; on CUDA, a float16 autocast training loop that learns.

test_that("unscaled gradients equal those of the unscaled loss", {
  model <- nn_linear(3, 2)
  x <- torch_randn(5, 3)
  nnf_mse_loss(model(x), torch_zeros(5, 2))$backward()
  want <- as_array(model$weight$grad)
  model$zero_grad()
  opt <- optim_sgd(model$parameters, lr = 0.1)
  scaler <- cuda_amp_grad_scaler(init_scale = 512)
  loss <- nnf_mse_loss(model(x), torch_zeros(5, 2))
  scaled <- scaler$scale(loss)
  expect_equal(as.numeric(scaled), as.numeric(loss) * 512)
  scaled$backward()
  scaler$unscale_(opt)
  expect_equal(as_array(model$weight$grad), want)  # a power of two: exact
})

test_that("steps with inf or NaN are skipped and the scale follows torch's rule", {
  w <- torch_randn(4, requires_grad = TRUE)
  opt <- optim_sgd(list(w), lr = 0.1)
  scaler <- cuda_amp_grad_scaler(init_scale = 8, growth_interval = 2)
  bad <- c(0, 0, Inf, NaN, 0, 0, 0)
  scale <- 8
  clean <- 0
  for (k in seq_along(bad)) {
    coef <- rnorm(4)
    if (bad[k] != 0 || is.nan(bad[k])) coef[2] <- bad[k]
    opt$zero_grad()
    before <- as_array(w)
    scaler$scale((w * torch_tensor(coef))$sum())$backward()
    scaler$step(opt)
    scaler$update()
    skipped <- !is.finite(coef[2])
    if (skipped) {
      expect_equal(as_array(w), before)
      scale <- scale / 2
      clean <- 0
    } else {
      expect_equal(as_array(w), before - 0.1 * coef, tolerance = 1e-6)
      clean <- clean + 1
      if (clean == 2) {
        scale <- scale * 2
        clean <- 0
      }
    }
    expect_equal(scaler$get_scale(), scale, info = paste("step", k))
    expect_equal(scaler$state_dict()$`_growth_tracker`, clean)
  }
})

test_that("state_dict round trip, a disabled scaler and errors", {
  w <- torch_randn(2, requires_grad = TRUE)
  opt <- optim_sgd(list(w), lr = 0.1)
  scaler <- cuda_amp_grad_scaler(init_scale = 64, growth_interval = 5)
  for (k in 1:3) {
    opt$zero_grad()
    scaler$scale(w$sum())$backward()
    scaler$step(opt)
    scaler$update()
  }
  state <- scaler$state_dict()
  expect_equal(state$scale, 64)
  expect_equal(state$`_growth_tracker`, 3)
  other <- cuda_amp_grad_scaler()
  other$load_state_dict(state)
  expect_equal(other$get_scale(), 64)
  expect_equal(other$state_dict(), state)
  expect_error(other$load_state_dict(list()), "state dict is empty")

  off <- cuda_amp_grad_scaler(enabled = FALSE)
  loss <- w$sum()
  expect_identical(off$scale(loss), loss)
  expect_false(off$is_enabled())
  expect_equal(off$get_scale(), 1)
  expect_equal(off$state_dict(), list())

  expect_error(cuda_amp_grad_scaler(init_scale = 0), "init_scale must be positive")
  expect_error(cuda_amp_grad_scaler(backoff_factor = 2), "backoff_factor must be in \\(0, 1\\)")
  expect_error(cuda_amp_grad_scaler(enabled = NA), "enabled must be TRUE or FALSE")
  fresh <- cuda_amp_grad_scaler()
  expect_error(fresh$unscale_(opt), "no scale yet")
  expect_error(fresh$step("sgd"), "optimizer must be an optimizer")
  opt$zero_grad()
  fresh$scale(w$sum())$backward()
  expect_error(fresh$update(), "no gradients were unscaled")
  fresh$step(opt)
  expect_error(fresh$step(opt), "already called")
})

test_that("a float16 autocast loop with the scaler learns on CUDA", {
  skip_if_cuda_not_available()
  torch_manual_seed(1)
  model <- nn_sequential(nn_linear(10, 32), nn_relu(), nn_linear(32, 1))
  model$to(device = "cuda")
  opt <- optim_adam(model$parameters, lr = 1e-2)
  scaler <- cuda_amp_grad_scaler()
  x <- torch_randn(256, 10, device = "cuda")
  y <- x$sum(dim = 2, keepdim = TRUE)
  losses <- numeric()
  for (step in 1:200) {
    opt$zero_grad()
    loss <- with_autocast(device_type = "cuda", {
      out <- model(x)
      expect_equal(out$dtype, torch_float16())
      nnf_mse_loss(out, y)
    })
    expect_equal(loss$dtype, torch_float32())
    scaler$scale(loss)$backward()
    expect_equal(model$parameters[[1]]$grad$dtype, torch_float32())
    scaler$step(opt)
    scaler$update()
    losses[step] <- as.numeric(loss)
  }
  expect_lt(losses[200], losses[1] / 20)
})
