# A WGAN-GP training run (the critic's gradient penalty through create_graph = TRUE, Adam on both
# networks) from R, against PyTorch's same steps from the same weights and inputs
# (wgan_gp_reference.py, through reticulate): float64 on the CPU, and float32 on the GPU beside
# PyTorch's CUDA tensors where both have a GPU. Skips without Python, NumPy and PyTorch.

wgan_gp_models <- function() {
  generator <- nn_sequential(nn_linear(2, 8), nn_relu(), nn_linear(8, 4))
  critic <- nn_sequential(nn_linear(4, 16), nn_layer_norm(16), nn_leaky_relu(0.2),
                          nn_linear(16, 1))
  list(generator = generator, critic = critic)
}

# rcuda's run of the steps wgan_gp_reference.py's train() takes: the losses [steps, 3] and the
# final weights (generator's, then critic's) as R arrays.
wgan_gp_rcuda <- function(models, real, z, eps, device, dtype, lr, lam) {
  as_t <- function(a) torch_tensor(a, dtype = dtype, device = device)
  real <- as_t(real)
  z <- as_t(z)
  eps <- as_t(eps)
  generator <- models$generator
  critic <- models$critic
  opt_c <- optim_adam(critic$parameters, lr = lr, betas = c(0.5, 0.9))
  opt_g <- optim_adam(generator$parameters, lr = lr, betas = c(0.5, 0.9))
  losses <- matrix(0, dim(real)[1], 3)
  for (s in seq_len(dim(real)[1])) {
    fake <- generator(z[s, , ])$detach()
    mixed <- (eps[s, , ] * real[s, , ] + (1 - eps[s, , ]) * fake)$requires_grad_(TRUE)
    g <- autograd_grad(critic(mixed)$sum(), mixed, create_graph = TRUE)[[1]]
    penalty <- ((g$pow(2)$sum(dim = 2)$sqrt() - 1)$pow(2))$mean()
    loss_c <- critic(fake)$mean() - critic(real[s, , ])$mean() + lam * penalty
    opt_c$zero_grad()
    loss_c$backward()
    opt_c$step()
    loss_g <- -critic(generator(z[s, , ]))$mean()
    opt_g$zero_grad()
    loss_g$backward()
    opt_g$step()
    losses[s, ] <- c(loss_c$item(), penalty$item(), loss_g$item())
  }
  weights <- lapply(c(generator$parameters, critic$parameters),
                    function(p) as_array(p$detach()$to(dtype = torch_double(), device = "cpu")))
  list(losses = losses, weights = unname(weights))
}

expect_wgan_gp_matches_pytorch <- function(device, dtype_name, tolerance) {
  dtype <- if (dtype_name == "float64") torch_double() else torch_float()
  steps <- 6
  n <- 32
  torch_manual_seed(sample.int(1e6, 1))
  models <- wgan_gp_models()
  initial <- lapply(list(models$generator, models$critic), function(m)
    unname(lapply(m$parameters, function(p) as_array(p$detach()))))
  real <- array(rnorm(steps * n * 4, mean = 1.5, sd = 0.7), c(steps, n, 4))
  z <- array(rnorm(steps * n * 2), c(steps, n, 2))
  eps <- array(runif(steps * n), c(steps, n, 1))
  lr <- 1e-2
  lam <- 10

  models$generator$to(device = device, dtype = dtype)
  models$critic$to(device = device, dtype = dtype)
  ours <- wgan_gp_rcuda(models, real, z, eps, device, dtype, lr, lam)

  reference <- reticulate::import_from_path("wgan_gp_reference", path = test_path(), convert = FALSE)
  # Arrays cross as (values, dims) in column-major order (wgan_gp_reference.py).
  flat <- function(a) list(as.list(as.vector(a)), as.list(dim(as.array(a))))
  theirs <- reticulate::py_to_r(reference$train(
    lapply(initial[[1]], flat), lapply(initial[[2]], flat), flat(real), flat(z), flat(eps),
    device, dtype_name, lr, lam))
  theirs[[1]] <- do.call(rbind, lapply(theirs[[1]], unlist))
  theirs[[2]] <- lapply(theirs[[2]], unlist)

  # The run trains: the penalty is not zero and the critic's loss moves.
  expect_gt(min(theirs[[1]][, 2]), 0)
  expect_gt(diff(range(theirs[[1]][, 1])), 1e-3)
  expect_equal(ours$losses, theirs[[1]], tolerance = tolerance)
  expect_equal(length(ours$weights), length(theirs[[2]]))
  for (i in seq_along(ours$weights)) {
    expect_equal(as.vector(ours$weights[[i]]), theirs[[2]][[i]], tolerance = tolerance,
                 label = sprintf("parameter %d after %d steps", i, steps))
  }
  # The weights moved away from where they started.
  start <- unlist(c(initial[[1]], initial[[2]]))
  expect_gt(max(abs(unlist(ours$weights) - start)), 2 * lr)
}

test_that("WGAN-GP training steps match PyTorch's in float64 on the CPU", {
  skip_if_no_torch()
  expect_wgan_gp_matches_pytorch("cpu", "float64", 1e-9)
})

test_that("WGAN-GP training steps match PyTorch's CUDA steps in float32 on the GPU", {
  skip_if_cuda_not_available()
  skip_if_no_torch()
  if (!reticulate::py_to_r(pytorch()$cuda$is_available())) skip("PyTorch has no CUDA device")
  expect_wgan_gp_matches_pytorch("cuda", "float32", 1e-4)
})
