# cuda_graph(), with_cuda_graph(), cuda_graph_step(): replays against eager steps of the same
# code (bitwise: the same kernels, the same random draws, the same optimizer steps), and the
# errors a capture raises.

test_that("cuda_graph_step replays give the parameters of eager steps, bitwise", {
  skip_if_cuda_not_available()
  make <- function() {
    torch_manual_seed(4)
    nn_sequential(nn_linear(12, 32), nn_relu(), nn_dropout(0.3), nn_linear(32, 3))$cuda()
  }
  eager <- make()
  graphed <- make()
  xs <- lapply(1:4, function(i) torch_randn(16, 12, device = "cuda"))
  ys <- lapply(1:4, function(i) torch_randint(1, 4, 16, device = "cuda"))
  step_of <- function(model, opt) {
    function(x, y) {
      opt$zero_grad()
      loss <- nnf_cross_entropy(model(x), y)
      loss$backward()
      opt$step()
      loss
    }
  }
  eager_opt <- optim_adam(eager$parameters, lr = 0.01)
  graphed_opt <- optim_adam(graphed$parameters, lr = 0.01)
  eager_step <- step_of(eager, eager_opt)
  torch_manual_seed(9)
  # Three warm-up steps on the first batch (what cuda_graph_step runs), then 20 steps.
  for (i in 1:3) eager_step(xs[[1]], ys[[1]])
  eager_losses <- vapply(1:20, function(i) eager_step(xs[[i %% 4 + 1]], ys[[i %% 4 + 1]])$item(), 0)
  torch_manual_seed(9)
  train <- cuda_graph_step(step_of(graphed, graphed_opt), xs[[1]], ys[[1]])
  expect_true(attr(train, "graph")$is_captured())
  losses <- vapply(1:20, function(i) train(xs[[i %% 4 + 1]], ys[[i %% 4 + 1]])$item(), 0)
  expect_identical(losses, eager_losses)
  for (i in seq_along(eager$parameters)) {
    expect_identical(as_array(graphed$parameters[[i]]$cpu()), as_array(eager$parameters[[i]]$cpu()))
  }
  expect_error(train(xs[[1]]), "takes 2 tensors, got 1", class = "rcuda_value_error")
})

test_that("with_cuda_graph replays its code on new inputs", {
  skip_if_cuda_not_available()
  x <- torch_randn(8, 5, device = "cuda")
  g <- cuda_graph()
  expect_false(g$is_captured())
  y <- with_cuda_graph(g, torch_relu(x * 2 + 1))
  expect_true(g$is_captured())
  for (i in 1:3) {
    fresh <- torch_randn(8, 5)
    x$copy_(fresh$cuda())
    g$replay()
    expect_equal(as_array(y$cpu()), as_array(torch_relu(fresh * 2 + 1)), tolerance = 1e-6)
  }
  g$reset()
  expect_false(g$is_captured())
  expect_output(print(g), "<cuda_graph> on cuda:0, empty")
})

test_that("reading a value inside a capture is an error and the session goes on", {
  skip_if_cuda_not_available()
  x <- torch_randn(4, device = "cuda")
  g <- cuda_graph()
  expect_error(with_cuda_graph(g, as_array(x + 1)), "captures a CUDA graph",
               class = "rcuda_cuda_error")
  expect_error(with_cuda_graph(g, cuda_synchronize()), "captures a CUDA graph",
               class = "rcuda_cuda_error")
  expect_error(with_cuda_graph(g, stop("inside")), "inside")
  expect_false(g$is_captured())
  y <- with_cuda_graph(g, x * 3)
  g$replay()
  expect_equal(as_array(y$cpu()), as_array(x$cpu()) * 3, tolerance = 1e-6)
})

test_that("cuda_graph_step checks its arguments", {
  skip_if_cuda_not_available()
  f <- function(x) x
  expect_error(cuda_graph_step(1), "step must be a function", class = "rcuda_value_error")
  expect_error(cuda_graph_step(f), "give example batches", class = "rcuda_value_error")
  expect_error(cuda_graph_step(f, torch_randn(2)), "example 1 must be a tensor on a CUDA device, got cpu",
               class = "rcuda_value_error")
  expect_error(cuda_graph_step(f, torch_randn(2, device = "cuda"), warmup = 0), "warmup must be",
               class = "rcuda_value_error")
  expect_error(cuda_graph(pool = 3), "pool must be another cuda_graph", class = "rcuda_value_error")
})

test_that("cuda_graph without a GPU says so", {
  skip_if(cuda_is_available())
  expect_error(cuda_graph(), "CUDA graphs need a GPU", class = "rcuda_device_error")
})
