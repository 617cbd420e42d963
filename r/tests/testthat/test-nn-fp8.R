# nn_fp8_linear against base R: the scaling state follows the delayed-scaling rule, and the
# output and gradients equal base R's products of the float8 values (read back from the
# engine's own casts of the same tensors, whose bits the C++ tests check) within float32
# accumulation. On CUDA it runs on GPUs of compute capability 8.9 or newer.

fp8_devices <- function() {
  d <- "cpu"
  if (cuda_is_available() && sum(cuda_get_device_capability() * c(10, 1)) >= 89) d <- c(d, "cuda")
  d
}

# Base R's round to the nearest float8_e4m3fn value (ties to even), saturating at 448.
e4m3 <- function(v) {
  v <- pmin(pmax(v, -448), 448)
  e <- pmax(floor(log2(abs(v))), -6)  # below 2^-6 the spacing is that of the subnormals
  step <- 2^(e - 3)
  q <- v / step
  r <- round(q)  # R's round() rounds halves to even
  ifelse(v == 0, 0, r * step)
}

test_that("nn_fp8_linear's output and gradients are base R's products of the float8 values", {
  for (device in fp8_devices()) {
    torch_manual_seed(3)
    layer <- nn_fp8_linear(32, 16, amax_history_len = 4)$to(device = device)
    x_r <- matrix(runif(16 * 32, -2, 2), 16, 32)
    x <- torch_tensor(x_r, device = device, requires_grad = TRUE)
    y <- layer(x)  # first step: scales 1
    expect_equal(as.numeric(as_array(layer$scale$cpu())), c(1, 1, 1))
    w_r <- as_array(layer$weight$cpu())
    b_r <- as_array(layer$bias$cpu())
    x8 <- e4m3(x_r)
    w8 <- e4m3(w_r)
    expected <- x8 %*% t(w8) + matrix(b_r, 16, 16, byrow = TRUE)
    tol <- if (device == "cpu") 1e-5 else 2e-3
    expect_equal(as_array(y$cpu()), expected, tolerance = tol)

    # Second step: scales from the first step's amaxes.
    y2 <- layer(x)
    s <- as.numeric(as_array(layer$scale$cpu()))
    expect_equal(s[1:2], 448 / c(max(abs(x_r)), max(abs(w_r))), tolerance = 1e-6)
    expect_equal(s[3], 1)  # no gradient was cast yet
    g_r <- matrix(runif(16 * 16, -1, 1), 16, 16)
    y2$backward(torch_tensor(g_r, device = device))
    expect_equal(as_array(layer$bias$grad$cpu()), colSums(g_r), tolerance = 1e-5)
    # e5m2 has 2 mantissa bits: the gradients are within a few percent of the exact products.
    expect_equal(as_array(x$grad$cpu()), g_r %*% w_r, tolerance = 0.1)
    expect_equal(as_array(layer$weight$grad$cpu()), t(g_r) %*% x_r, tolerance = 0.1)
    hist <- as_array(layer$amax_history$cpu())
    expect_equal(hist[, 1], c(max(abs(x_r)), max(abs(w_r)), max(abs(g_r))), tolerance = 1e-6)
  }
})

test_that("nn_fp8_linear keeps its state as buffers and checks its arguments", {
  layer <- nn_fp8_linear(16, 32, bias = FALSE, amax_history_len = 8)
  expect_null(layer$bias)
  expect_equal(names(layer$state_dict()), c("weight", "amax_history", "scale"))
  expect_equal(layer$amax_history$shape, c(3, 8))
  out <- layer(torch_randn(4, 2, 16))
  expect_equal(out$shape, c(4, 2, 32))
  # A float64 model is refused by the layer (fp8 products take float32 or half inputs).
  expect_error(layer(torch_randn(4, 16, dtype = torch_float64())), "float32, float16 or bfloat16")
  expect_error(nn_fp8_linear(24, 16), "in_features must be a positive multiple of 16")
  expect_error(nn_fp8_linear(16, 16, amax_history_len = 0), "amax_history_len must be at least 1")
  expect_error(nn_fp8_linear(16, 16, margin = -1), "margin must be a non-negative integer")
  expect_error(layer(torch_randn(4, 24)), "nn_fp8_linear: input of shape")
})

test_that("an fp8 MLP learns a regression as its float32 twin does", {
  for (device in fp8_devices()) {
    torch_manual_seed(1)
    x <- torch_randn(256, 32, device = device)
    y <- torch_sin(x[, 1:16]) * 2
    make <- function(layer) nn_sequential(layer(32, 64), nn_relu(), layer(64, 16))$to(device = device)
    losses <- sapply(list(nn_linear, nn_fp8_linear), function(layer) {
      torch_manual_seed(2)
      model <- make(layer)
      opt <- optim_adam(model$parameters, lr = 1e-2)
      for (i in 1:150) {
        opt$zero_grad()
        loss <- nnf_mse_loss(model(x), y)
        loss$backward()
        opt$step()
      }
      loss$item()
    })
    start <- nnf_mse_loss(torch_zeros_like(y), y)$item()
    expect_lt(losses[2], start / 5)
    expect_lt(losses[2], losses[1] * 3 + 0.05)
  }
})
