# fit(): the loop against the hand-written one (parameters compared with identical()), its
# batches and loaders, and its metrics against base R computations on the same predictions
# (forward passes in base R from the parameters' values). Helpers: helper-fit.R.

# ---- a stand-in dataloader for the iteration protocol (Note [Iteration protocol] in fit.R) ----

fake_loader <- function(batches) structure(list(batches = batches), class = "fit_test_loader")
fake_make_iter <- function(dataloader) {
  it <- new.env()
  it$batches <- dataloader$batches
  it$i <- 0L
  class(it) <- "fit_test_iter"
  it
}
fake_next <- function(iter, completed = NULL) {
  if (iter$i >= length(iter$batches)) return(completed)
  iter$i <- iter$i + 1L
  iter$batches[[iter$i]]
}
registerS3method("dataloader_make_iter", "fit_test_loader", fake_make_iter, envir = ns)
registerS3method("dataloader_next", "fit_test_iter", fake_next, envir = ns)

# ---- the loop ---------------------------------------------------------------------------------

test_that("fit on a regression MLP gives the hand-written loop's parameters and losses", {
  d <- regression_data(130)
  v <- regression_data(50)
  train <- batches_of(d$X, d$Y, 32)  # 32, 32, 32, 32, 2
  valid <- batches_of(v$X, v$Y, 20)
  m1 <- regression_mlp(5)
  opt1 <- optim_adam(m1$parameters, lr = 0.05)
  h <- quiet_fit(m1, train, nnf_mse_loss, opt1, epochs = 6, valid_dl = valid,
                 metrics = list(metric_mae(), metric_mse()))
  m2 <- regression_mlp(5)
  opt2 <- optim_adam(m2$parameters, lr = 0.05)
  ref <- hand_loop(m2, opt2, train, nnf_mse_loss, 6)

  expect_identical(param_arrays(m1), ref[[6]]$params)
  r <- as.data.frame(h)
  n <- batch_rows(train)
  Ytrain <- do.call(rbind, lapply(train, function(b) as.array(b$y)))
  for (e in 1:6) {
    expect_equal(r$train_loss[e], sum(ref[[e]]$losses * n) / sum(n), tolerance = 1e-10)
    P <- do.call(rbind, ref[[e]]$preds)
    expect_equal(r$train_mae[e], mean(abs(P - Ytrain)), tolerance = 1e-6)
    expect_equal(r$train_mse[e], mean((P - Ytrain)^2), tolerance = 1e-6)
    Pv <- mlp_forward(ref[[e]]$params, v$X)
    expect_equal(r$valid_loss[e], mean((Pv - v$Y)^2), tolerance = 1e-5)
    expect_equal(r$valid_mae[e], mean(abs(Pv - v$Y)), tolerance = 1e-5)
    expect_equal(r$valid_mse[e], r$valid_loss[e], tolerance = 1e-6)
  }
  expect_lt(r$train_loss[6], r$train_loss[1] / 2)
  expect_lt(r$valid_loss[6], r$valid_loss[1] / 2)
  expect_identical(r$epoch, 1:6)
  expect_true(all(r$seconds > 0 & r$samples_per_s > 0))
  expect_identical(r$lr, rep(0.05, 6))
})

test_that("fit on a classifier with dropout matches the hand loop; accuracy against base R", {
  d <- classification_data(120)
  v <- classification_data(60)
  train <- batches_of(d$X, d$y, 25, named = FALSE)
  valid <- batches_of(v$X, v$y, 25)
  m1 <- classifier(9)
  opt1 <- optim_sgd(m1$parameters, lr = 0.1, momentum = 0.9)
  # Validation between epochs (in eval mode) draws no random numbers: the dropout masks of the
  # training batches stay those of the hand loop, which validates nothing.
  h <- quiet_fit(m1, train, nnf_cross_entropy, opt1, epochs = 5, valid_dl = valid,
                 metrics = list(metric_accuracy()))
  m2 <- classifier(9)
  opt2 <- optim_sgd(m2$parameters, lr = 0.1, momentum = 0.9)
  ref <- hand_loop(m2, opt2, train, nnf_cross_entropy, 5)

  expect_identical(param_arrays(m1), ref[[5]]$params)
  r <- as.data.frame(h)
  n <- batch_rows(train)
  for (e in 1:5) {
    P <- do.call(rbind, ref[[e]]$preds)
    expect_equal(r$train_loss[e], sum(ref[[e]]$losses * n) / sum(n), tolerance = 1e-10)
    expect_equal(r$train_acc[e], mean(max.col(P, ties.method = "first") == d$y))
    Pv <- mlp_forward(ref[[e]]$params, v$X)
    expect_equal(r$valid_acc[e], mean(max.col(Pv, ties.method = "first") == v$y))
    expect_equal(r$valid_loss[e], cross_entropy(Pv, v$y), tolerance = 1e-5)
  }
  expect_lt(r$train_loss[5], r$train_loss[1])
  expect_gt(r$valid_acc[5], 0.6)
})

test_that("a stand-in dataloader and a plain list of batches train alike", {
  d <- regression_data(64)
  train <- batches_of(d$X, d$Y, 16)
  m1 <- regression_mlp(2)
  h1 <- quiet_fit(m1, train, nnf_mse_loss, optim_sgd(m1$parameters, lr = 0.05), epochs = 2)
  m2 <- regression_mlp(2)
  h2 <- quiet_fit(m2, fake_loader(train), nnf_mse_loss, optim_sgd(m2$parameters, lr = 0.05),
                  epochs = 2, valid_dl = fake_loader(train[1:2]))
  expect_identical(param_arrays(m1), param_arrays(m2))
  expect_identical(h1$records$train_loss, h2$records$train_loss)
  # Validation on the first two batches with the final parameters, in base R.
  Pv <- mlp_forward(param_arrays(m2), d$X[1:32, ])
  expect_equal(h2$records$valid_loss[2], mean((Pv - d$Y[1:32])^2), tolerance = 1e-5)
})

test_that("fit trains from rcuda's dataloader() as the hand loop over the same batches", {
  d <- regression_data(70)
  dl <- dataloader(tensor_dataset(torch_tensor(d$X), torch_tensor(d$Y)), batch_size = 16)
  m1 <- regression_mlp(7)
  h <- quiet_fit(m1, dl, nnf_mse_loss, optim_adam(m1$parameters, lr = 0.01), epochs = 2,
                 valid_dl = dl)
  m2 <- regression_mlp(7)
  ref <- hand_loop(m2, optim_adam(m2$parameters, lr = 0.01), batches_of(d$X, d$Y, 16),
                   nnf_mse_loss, 2)
  expect_identical(param_arrays(m1), ref[[2]]$params)
  n <- c(16, 16, 16, 16, 6)
  expect_equal(h$records$train_loss, vapply(ref, function(e) sum(e$losses * n) / 70, 0),
               tolerance = 1e-10)
  Pv <- mlp_forward(ref[[2]]$params, d$X)
  expect_equal(h$records$valid_loss[2], mean((Pv - d$Y)^2), tolerance = 1e-5)
  expect_identical(ns$batch_count(dl), 5L)
  expect_identical(ns$batch_count(fake_loader(list(1, 2))), NA_integer_)  # no length() method
})

test_that("batch_to prepares each batch and receives the device", {
  d <- regression_data(40)
  raw <- lapply(split(seq_len(40), rep(1:2, each = 20)), function(i) {
    list(input = d$X[i, ], target = d$Y[i, , drop = FALSE])
  })
  devices <- character()
  to <- function(batch, device) {
    devices <<- c(devices, device)
    list(torch_tensor(batch$input, device = device), torch_tensor(batch$target, device = device))
  }
  m1 <- regression_mlp(4)
  quiet_fit(m1, unname(raw), nnf_mse_loss, optim_sgd(m1$parameters, lr = 0.05), batch_to = to)
  m2 <- regression_mlp(4)
  hand_loop(m2, optim_sgd(m2$parameters, lr = 0.05), batches_of(d$X, d$Y, 20), nnf_mse_loss, 1)
  expect_identical(devices, c("cpu", "cpu"))
  expect_identical(param_arrays(m1), param_arrays(m2))
})

test_that("a batch's input and target are its elements x and y, else its first two", {
  expect_identical(ns$split_batch(list(y = 1, x = 2)), list(2, 1))
  expect_identical(ns$split_batch(list(1, 2, x = 3)), list(1, 2))
  expect_identical(ns$split_batch(list(x = NULL, 1, y = 2)), list(NULL, 1))
  expect_identical(ns$split_batch(structure(list(a = 1, y = 2, x = 3), class = "my_batch")),
                   list(3, 2))
  expect_error(ns$split_batch(1), "a batch must be list(x, y)", fixed = TRUE)
  expect_error(ns$split_batch(list(1)), "got a list of length 1")
  # The one-call path for tensors takes the same elements, and counts y's first dim.
  x <- torch_randn(3, 2)
  y <- torch_randn(3)
  b <- ns$prepare_batch(list(z = torch_randn(1), y = y, x = x), "cpu", NULL)
  expect_identical(as_array(b[[1]]), as_array(x))
  expect_identical(as_array(b[[2]]), as_array(y))
  expect_identical(b[[3]], 3)
  b <- ns$prepare_batch(list(x, torch_randn(3)$sum()), "cpu", NULL)  # a 0-d target: 1 sample
  expect_identical(b[[3]], 1)
})

test_that("fit refuses bad arguments and batches, naming them", {
  d <- regression_data(8)
  train <- batches_of(d$X, d$Y, 4)
  m <- regression_mlp(1)
  opt <- optim_sgd(m$parameters, lr = 0.1)
  expect_error(quiet_fit(function(x) x, train, nnf_mse_loss, opt), "model must be an nn_module",
               class = "rcuda_value_error")
  expect_error(quiet_fit(m, train, nnf_mse_loss, opt, epochs = 0), "epochs must be a whole number")
  expect_error(quiet_fit(m, train, nnf_mse_loss, list()), "optimizer must be an optimizer")
  expect_error(quiet_fit(m, train, "mse", opt), "loss_fn must be a function")
  expect_error(quiet_fit(m, list(list(train[[1]]$x)), nnf_mse_loss, opt),
               "a batch must hold an input and a target")
  expect_error(quiet_fit(m, list(), nnf_mse_loss, opt), "train_dl gave no batches in epoch 1")
  expect_error(quiet_fit(m, structure(list(), class = "not_a_loader"), nnf_mse_loss, opt),
               "train_dl must be a list of batches or a dataloader, got an R not_a_loader")
  expect_error(quiet_fit(m, train, nnf_mse_loss, opt, valid_dl = torch_randn(3)),
               "valid_dl must be a list of batches or a dataloader, got a tensor")
  expect_error(fit(m, train, nnf_mse_loss, opt, verbose = NA), "verbose must be")
  expect_error(quiet_fit(m, train, nnf_mse_loss, opt, metrics = list(list(name = "x"))),
               "metric 1 must be a list with a name, update")
  expect_error(quiet_fit(m, train, nnf_mse_loss, opt, metrics = list(metric_mae(), metric_mae())),
               "two metrics are named 'mae'")
  expect_error(quiet_fit(m, train, nnf_mse_loss, opt, callbacks = list(function(ctx) 1)),
               "callbacks must be a list of callbacks")
  per_sample <- function(input, target) nnf_mse_loss(input, target, reduction = "none")
  expect_error(quiet_fit(m, train, per_sample, opt),
               "only for one-element outputs; output 0 has shape \\[4, 1\\]")
})

test_that("losses and metrics are read back once per phase, not per batch", {
  d <- regression_data(64)
  train <- batches_of(d$X, d$Y, 8)  # 8 batches
  read_backs <- 0
  count <- function() read_backs <<- read_backs + 1
  suppressMessages(trace("read_back", tracer = as.call(list(count)), where = ns, print = FALSE))
  on.exit(suppressMessages(untrace("read_back", where = ns)))
  m <- regression_mlp(3)
  quiet_fit(m, train, nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01), epochs = 3,
            valid_dl = train[1:3], metrics = list(metric_mae()))
  expect_identical(read_backs, 6)  # 3 epochs x (training + validation)
})

# ---- metrics ----------------------------------------------------------------------------------

test_that("metric_accuracy, metric_mae and metric_mse agree with base R over several updates", {
  acc <- metric_accuracy()
  mae <- metric_mae()
  mse <- metric_mse()
  P <- list(random_array(7, 4), random_array(5, 4))
  y <- list(sample(4, 7, replace = TRUE), sample(4, 5, replace = TRUE))
  Q <- list(random_array(7, 1), random_array(5, 1))
  z <- list(rnorm(7), rnorm(5))
  for (i in 1:2) {
    acc$update(torch_tensor(P[[i]]), torch_tensor(y[[i]]))
    mae$update(torch_tensor(Q[[i]]), torch_tensor(z[[i]]))  # [n, 1] beside [n]: no broadcast
    mse$update(torch_tensor(Q[[i]]), torch_tensor(matrix(z[[i]])))
  }
  Pall <- do.call(rbind, P)
  expect_equal(as.numeric(acc$compute()), mean(max.col(Pall, ties.method = "first") == unlist(y)))
  expect_equal(as.numeric(mae$compute()), mean(abs(unlist(Q) - unlist(z))), tolerance = 1e-6)
  expect_equal(as.numeric(mse$compute()), mean((unlist(Q) - unlist(z))^2), tolerance = 1e-6)
  acc$reset()
  expect_true(is.na(acc$compute()))
  acc$update(torch_tensor(P[[2]]), torch_tensor(matrix(y[[2]])))  # [n, 1] targets
  expect_equal(as.numeric(acc$compute()), mean(max.col(P[[2]], ties.method = "first") == y[[2]]))
  expect_error(acc$update(torch_randn(6), torch_tensor(1:6)), "pred must be \\[samples, classes\\]",
               class = "rcuda_shape_error")
  expect_error(acc$update(torch_randn(6, 2), torch_tensor(1:5)), "one 1-based class per sample")
  expect_error(mae$update(torch_randn(6, 2), torch_randn(6)), "must hold as many elements",
               class = "rcuda_shape_error")
})

test_that("a custom metric, given as a function making it, gets a fresh state per phase", {
  d <- regression_data(30)
  train <- batches_of(d$X, d$Y, 10)
  made <- 0
  max_error <- function() {
    made <<- made + 1
    worst <- 0
    list(name = "max_err",
         update = function(pred, target) worst <<- max(worst, max(abs(as.array(pred - target)))),
         compute = function() worst,
         reset = function() worst <<- 0)
  }
  m <- regression_mlp(6)
  opt <- optim_sgd(m$parameters, lr = 0.01)
  preds <- list()
  keep <- callback(on_batch_end = function(ctx) preds[[length(preds) + 1]] <<- as.array(ctx$pred))
  h <- quiet_fit(m, train, nnf_mse_loss, opt, epochs = 2, valid_dl = train,
                 metrics = list(max_error), callbacks = list(keep))
  expect_equal(made, 1 + 2 * 2)  # checked once, then one per phase and epoch
  for (e in 1:2) {
    P <- do.call(rbind, preds[(3 * e - 2):(3 * e)])
    expect_equal(h$records$train_max_err[e], max(abs(P - d$Y)), tolerance = 1e-6)
  }
  Pv <- mlp_forward(param_arrays(m), d$X)
  expect_equal(h$records$valid_max_err[2], max(abs(Pv - d$Y)), tolerance = 1e-5)
})

# ---- progress -------------------------------------------------------------------------------

test_that("an interactive fit shows a bar per epoch and prints the epoch lines", {
  old <- options(cli.progress_show_after = 0)
  on.exit(options(old))
  interactive_now <- get("fit_is_interactive", envir = ns)
  unlockBinding("fit_is_interactive", ns)
  assign("fit_is_interactive", function() TRUE, envir = ns)
  on.exit({
    assign("fit_is_interactive", interactive_now, envir = ns)
    lockBinding("fit_is_interactive", ns)
  }, add = TRUE)
  d <- regression_data(40)
  train <- batches_of(d$X, d$Y, 10)
  m <- regression_mlp(2)
  # A loader of unknown length (the bar counts batches) and a list (a bar with a total).
  out <- capture_output_lines(suppressMessages(
    h <- fit(m, fake_loader(train), nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01),
             epochs = 2, valid_dl = train, metrics = metric_mae())))
  expect_length(out, 2)
  expect_match(out, "^epoch [12]/2  loss [0-9.]+  mae [0-9.]+  valid_loss [0-9.]+  valid_mae ")
  out <- capture_output_lines(suppressMessages(
    fit(m, train, nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01), verbose = TRUE)))
  expect_length(out, 1)
})

# ---- CUDA -------------------------------------------------------------------------------------

test_that("fit on CUDA gives the CPU's losses and metrics within float32 tolerance", {
  skip_if_not(cuda_is_available(), "A GPU is not available for testing.")
  d <- regression_data(96)
  v <- regression_data(40)
  train <- batches_of(d$X, d$Y, 32)
  valid <- batches_of(v$X, v$Y, 20)
  cpu <- regression_mlp(12)
  gpu <- regression_mlp(12)  # moved by fit(device =), after its optimizer was made
  sgd <- function(m) optim_sgd(m$parameters, lr = 0.05, momentum = 0.9)
  h_cpu <- quiet_fit(cpu, train, nnf_mse_loss, sgd(cpu), epochs = 3, valid_dl = valid,
                     metrics = list(metric_mae()))
  h_gpu <- quiet_fit(gpu, train, nnf_mse_loss, sgd(gpu), epochs = 3, valid_dl = valid,
                     metrics = list(metric_mae()), device = "cuda")
  expect_match(h_gpu$device, "^cuda")
  expect_true(all(vapply(gpu$parameters, function(p) p$is_cuda, logical(1))))
  for (col in c("train_loss", "train_mae", "valid_loss", "valid_mae")) {
    expect_equal(h_gpu$records[[col]], h_cpu$records[[col]], tolerance = 1e-4, label = col)
  }
  expect_equal(param_arrays(gpu), param_arrays(cpu), tolerance = 1e-4)

  # A classifier with the batches already on the device.
  dc <- classification_data(60)
  on_gpu <- lapply(batches_of(dc$X, dc$y, 20), function(b) lapply(b, function(t) t$cuda()))
  cpu <- classifier(3)
  gpu <- classifier(3)
  gpu$cuda()
  fit_eval <- function(model, batches, device) {
    # Dropout off (after model$train()): this compares arithmetic, not random masks.
    no_dropout <- callback(on_batch_begin = function(ctx) ctx$model[[3]]$eval())
    quiet_fit(model, batches, nnf_cross_entropy, optim_sgd(model$parameters, lr = 0.1),
              epochs = 2, valid_dl = batches, metrics = metric_accuracy(),
              callbacks = no_dropout, device = device)
  }
  h_cpu <- fit_eval(cpu, batches_of(dc$X, dc$y, 20), NULL)
  h_gpu <- fit_eval(gpu, on_gpu, NULL)
  expect_equal(h_gpu$records$train_loss, h_cpu$records$train_loss, tolerance = 1e-4)
  expect_equal(h_gpu$records$valid_loss, h_cpu$records$valid_loss, tolerance = 1e-4)
  # A near tie of two logits may fall either way: one sample at most.
  expect_lte(max(abs(h_gpu$records$valid_acc - h_cpu$records$valid_acc)), 1 / 60 + 1e-12)
})
