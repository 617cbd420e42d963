# fit(), its metrics, callbacks, progress lines and history. References: the hand-written loop
# (parameters compared with identical()), and base R computations on the same predictions
# (forward passes in base R from the parameters' values).

ns <- asNamespace("rcuda")

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
if (exists("dataloader_make_iter", envir = ns, inherits = FALSE)) {
  registerS3method("dataloader_make_iter", "fit_test_loader", fake_make_iter, envir = ns)
  registerS3method("dataloader_next", "fit_test_iter", fake_next, envir = ns)
} else {
  # Generics of this file whose methods table is rcuda's: UseMethod() called from fit() looks
  # for methods there (and in the table of the generic's environment), not in this file.
  dataloader_make_iter <- function(dataloader) UseMethod("dataloader_make_iter")
  dataloader_next <- function(iter, completed = NULL) UseMethod("dataloader_next")
  environment(dataloader_make_iter) <- ns
  environment(dataloader_next) <- ns
  registerS3method("dataloader_make_iter", "fit_test_loader", fake_make_iter)
  registerS3method("dataloader_next", "fit_test_iter", fake_next)
}

# ---- data, models and references --------------------------------------------------------------

# Batches of rows of X and Y (sizes may differ: the last batch is short).
batches_of <- function(X, Y, size, named = TRUE) {
  groups <- split(seq_len(nrow(X)), ceiling(seq_len(nrow(X)) / size))
  unname(lapply(groups, function(i) {
    x <- torch_tensor(X[i, , drop = FALSE])
    y <- if (is.matrix(Y)) torch_tensor(Y[i, , drop = FALSE]) else torch_tensor(Y[i])
    if (named) list(x = x, y = y) else list(x, y)
  }))
}

regression_data <- function(n) {
  X <- matrix(rnorm(n * 3), n)
  list(X = X, Y = X %*% c(1, -2, 0.5) + 0.5 * sin(3 * X[, 1]) + 0.05 * rnorm(n))
}

classification_data <- function(n) {
  X <- matrix(rnorm(n * 4), n)
  y <- 1L + (X[, 1] + X[, 2] > 0) + (X[, 3] > 0.5)
  list(X = X, y = as.integer(y))
}

regression_mlp <- function(seed) {
  torch_manual_seed(seed)
  nn_sequential(nn_linear(3, 8), nn_relu(), nn_linear(8, 1))
}

classifier <- function(seed) {
  torch_manual_seed(seed)
  nn_sequential(nn_linear(4, 16), nn_relu(), nn_dropout(0.3), nn_linear(16, 3))
}

param_arrays <- function(model) lapply(model$parameters, as.array)

# linear -> relu -> (dropout, the identity in eval mode) -> linear, in base R.
mlp_forward <- function(p, X) {
  h <- X %*% t(p[[1]]) + rep(p[[2]], each = nrow(X))
  h <- pmax(h, 0)
  h %*% t(p[[3]]) + rep(p[[4]], each = nrow(X))
}

cross_entropy <- function(P, y) {
  m <- apply(P, 1, max)
  lse <- m + log(rowSums(exp(P - m)))
  mean(lse - P[cbind(seq_along(y), y)])
}

# The loop fit() promises to be, written out: per epoch the parameters after it, and the
# predictions and losses of its batches.
hand_loop <- function(model, optimizer, batches, loss_fn, epochs) {
  out <- vector("list", epochs)
  for (epoch in seq_len(epochs)) {
    model$train()
    preds <- list()
    losses <- numeric()
    for (b in batches) {
      optimizer$zero_grad()
      pred <- model(b[[1]])
      loss <- loss_fn(pred, b[[2]])
      loss$backward()
      optimizer$step()
      preds[[length(preds) + 1]] <- as.array(pred)
      losses <- c(losses, as.numeric(loss))
    }
    out[[epoch]] <- list(params = param_arrays(model), preds = preds, losses = losses)
  }
  out
}

batch_rows <- function(batches) vapply(batches, function(b) dim(b[[1]])[1], numeric(1))

quiet_fit <- function(...) fit(..., verbose = FALSE)

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
  # Called from where no dataloader_make_iter() is visible (this file defines one).
  nowhere <- new.env(parent = baseenv())
  unknown <- structure(list(), class = "not_a_loader")
  call_fit <- function() do.call(ns$fit, list(m, unknown, nnf_mse_loss, opt, verbose = FALSE),
                                 envir = nowhere)
  if (exists("dataloader_make_iter", envir = ns, inherits = FALSE)) {
    expect_error(call_fit())  # rcuda's dataloader_make_iter() refuses it
  } else {
    expect_error(call_fit(), "train_dl must be a list of batches or a dataloader, got an R not_a_loader")
  }
  expect_error(fit(m, train, nnf_mse_loss, opt, verbose = NA), "verbose must be")
  expect_error(quiet_fit(m, train, nnf_mse_loss, opt, metrics = list(list(name = "x"))),
               "metric 1 must be a list with a name, update")
  expect_error(quiet_fit(m, train, nnf_mse_loss, opt, metrics = list(metric_mae(), metric_mae())),
               "two metrics are named 'mae'")
  expect_error(quiet_fit(m, train, nnf_mse_loss, opt, callbacks = list(function(ctx) 1)),
               "callbacks must be a list of callbacks")
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

# ---- callbacks --------------------------------------------------------------------------------

test_that("callback hooks run at their points with the context", {
  d <- regression_data(30)
  train <- batches_of(d$X, d$Y, 10)
  calls <- character()
  seen <- list()
  cb <- callback(
    on_epoch_begin = function(ctx) calls <<- c(calls, paste0("epoch_begin ", ctx$epoch)),
    on_epoch_end = function(ctx) {
      calls <<- c(calls, paste0("epoch_end ", ctx$epoch))
      seen[[ctx$epoch]] <<- ctx$logs
    },
    on_batch_end = function(ctx) {
      expect_true(is_torch_tensor(ctx$loss))
      calls <<- c(calls, paste0("batch ", ctx$batch, " step ", ctx$step))
    },
    on_fit_begin = function() calls <<- c(calls, "fit_begin"),  # no arguments: called without ctx
    on_valid_begin = function(ctx) calls <<- c(calls, "valid"),
    on_fit_end = function(ctx) calls <<- c(calls, paste0("fit_end ", length(ctx$records)))
  )
  m <- regression_mlp(1)
  h <- quiet_fit(m, train, nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01), epochs = 2,
                 valid_dl = train[1], callbacks = cb)
  expect_identical(calls, c(
    "fit_begin",
    "epoch_begin 1", "batch 1 step 1", "batch 2 step 2", "batch 3 step 3", "valid", "epoch_end 1",
    "epoch_begin 2", "batch 1 step 4", "batch 2 step 5", "batch 3 step 6", "valid", "epoch_end 2",
    "fit_end 2"))
  expect_identical(names(seen[[2]]), c("epoch", "train_loss", "valid_loss", "lr", "seconds",
                                       "samples_per_s"))
  expect_identical(seen[[2]]$train_loss, h$records$train_loss[2])
  expect_error(callback(on_epoch_ended = function(ctx) 1), "unknown hook 'on_epoch_ended'")
  expect_error(callback(on_epoch_end = 1), "on_epoch_end must be a function")
  expect_output(print(cb), "<callback callback: on_fit_begin, on_epoch_begin")
})

test_that("a callback stops training after a batch by setting stop_training", {
  d <- regression_data(40)
  train <- batches_of(d$X, d$Y, 10)
  stop_at_6 <- callback(on_batch_end = function(ctx) if (ctx$step == 6) ctx$stop_training <- TRUE)
  m1 <- regression_mlp(8)
  h <- quiet_fit(m1, train, nnf_mse_loss, optim_sgd(m1$parameters, lr = 0.05), epochs = 5,
                 callbacks = list(stop_at_6))
  expect_identical(nrow(h$records), 2L)
  expect_true(h$stopped_early)
  m2 <- regression_mlp(8)
  opt2 <- optim_sgd(m2$parameters, lr = 0.05)
  hand_loop(m2, opt2, train, nnf_mse_loss, 1)
  hand_loop(m2, opt2, train[1:2], nnf_mse_loss, 1)
  expect_identical(param_arrays(m1), param_arrays(m2))
})

# A validation loss scripted per epoch: the loss is the real one in training, script[epoch] in
# validation (where grad mode is off).
scripted_fit <- function(script, callbacks, epochs = length(script), metrics = list()) {
  d <- regression_data(20)
  train <- batches_of(d$X, d$Y, 10)
  epoch <- 0
  loss_fn <- function(pred, y) {
    if (autograd_is_grad_enabled()) nnf_mse_loss(pred, y) else torch_tensor(script[epoch])
  }
  track <- callback(on_epoch_begin = function(ctx) epoch <<- ctx$epoch)
  m <- regression_mlp(3)
  quiet_fit(m, train, loss_fn, optim_sgd(m$parameters, lr = 0.01), epochs = epochs,
            valid_dl = train, callbacks = c(list(track), callbacks), metrics = metrics)
}

test_that("early stopping stops after `patience` epochs without an improvement", {
  h <- scripted_fit(c(4, 2, 3, 2.5, 2, 1.5, 1), list(callback_early_stopping(patience = 3)))
  expect_identical(h$records$valid_loss, c(4, 2, 3, 2.5, 2))  # 2 at epoch 5 does not beat 2
  expect_true(h$stopped_early)
  expect_match(h$stop_reason, "early stopping at epoch 5 of 7: valid_loss has not improved")

  # min_delta: an improvement must exceed it (3.75 and 2.5 do not beat 4 and 3 by more than 0.5).
  h <- scripted_fit(c(4, 3.75, 3, 2.75, 2.5, 1, 0.5),
                    list(callback_early_stopping(patience = 2, min_delta = 0.5)))
  expect_identical(nrow(h$records), 5L)

  # patience not reached: every epoch runs.
  h <- scripted_fit(c(4, 3, 3.5, 2, 2.5, 1), list(callback_early_stopping(patience = 2)))
  expect_identical(nrow(h$records), 6L)
  expect_false(h$stopped_early)
  expect_null(h$stop_reason)
})

test_that("early stopping with mode = \"max\" on a metric", {
  score <- c(1, 2, 2, 1.5, 3, 3)
  epoch <- 0
  scripted <- function() list(name = "score", update = function(pred, target) NULL,
                              compute = function() score[epoch], reset = function() NULL)
  track <- callback(on_epoch_begin = function(ctx) epoch <<- ctx$epoch)
  h <- scripted_fit(rep(1, 6), list(track, callback_early_stopping("valid_score", patience = 2,
                                                                   mode = "max")),
                    metrics = list(scripted))
  expect_identical(h$records$valid_score, c(1, 2, 2, 1.5))
})

test_that("early stopping checks its monitor before the first epoch, and its arguments", {
  d <- regression_data(20)
  train <- batches_of(d$X, d$Y, 10)
  m <- regression_mlp(3)
  epochs_run <- 0
  count <- callback(on_epoch_begin = function(ctx) epochs_run <<- epochs_run + 1)
  expect_error(quiet_fit(m, train, nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01),
                         callbacks = list(count, callback_early_stopping())),
               "monitor 'valid_loss' is not recorded by this fit\\(\\).*give fit\\(\\) a valid_dl")
  expect_identical(epochs_run, 0)
  expect_error(callback_early_stopping(patience = 0), "patience must be a whole number >= 1")
  expect_error(callback_early_stopping(mode = "zero"), "mode must be \"min\"")
  expect_error(callback_early_stopping(min_delta = -1), "min_delta must be a number >= 0")
})

test_that("a checkpoint is written only when the monitor improves, and atomically", {
  dir <- tempfile("ckpt")
  saved <- list()
  snapshots <- list()
  save <- function(state_dict, file) {
    saved[[length(saved) + 1]] <<- file
    saveRDS(lapply(state_dict, as.array), file)
  }
  ckpt <- ns$checkpoint_callback(file.path(dir, "model-{epoch}.rds"), "valid_loss",
                                 save_best_only = TRUE, mode = "min", min_delta = 0, save = save)
  snap <- callback(on_epoch_end = function(ctx) snapshots[[ctx$epoch]] <<- param_arrays(ctx$model))
  h <- scripted_fit(c(3, 2, 2.5, 1, 1.5), list(ckpt, snap))
  expect_identical(sort(list.files(dir, all.files = TRUE, no.. = TRUE)),
                   c("model-1.rds", "model-2.rds", "model-4.rds"))  # no temporary files left
  expect_identical(readRDS(file.path(dir, "model-4.rds")), snapshots[[4]])
  # The temporary file is written beside the checkpoint, then renamed over it.
  expect_identical(dirname(saved[[1]]), dir)
  expect_false(any(file.exists(unlist(saved))))

  # Every epoch to one file: the last epoch's parameters.
  file <- file.path(dir, "last.rds")
  ckpt <- ns$checkpoint_callback(file, "valid_loss", save_best_only = FALSE, mode = "min",
                                 min_delta = 0, save = save)
  saved <- list()
  snapshots <- list()
  scripted_fit(c(3, 2, 2.5), list(ckpt, snap))
  expect_length(saved, 3)
  expect_identical(readRDS(file), snapshots[[3]])

  # A save that fails leaves the checkpoint already there as it was, and no temporary file.
  before <- readRDS(file)
  broken <- function(state_dict, tmp) {
    writeLines("partial", tmp)
    stop("disk full")
  }
  ckpt <- ns$checkpoint_callback(file, "valid_loss", FALSE, "min", 0, save = broken)
  expect_error(scripted_fit(c(1, 2), list(ckpt)), "disk full")
  expect_identical(readRDS(file), before)
  expect_identical(sort(list.files(dir, all.files = TRUE, no.. = TRUE)),
                   c("last.rds", "model-1.rds", "model-2.rds", "model-4.rds"))
})

test_that("callback_model_checkpoint says so when torch_save() is missing", {
  if (exists("torch_save", envir = ns, inherits = FALSE)) {
    skip("torch_save() exists in rcuda, so callback_model_checkpoint() has it")
  }
  expect_error(callback_model_checkpoint(tempfile()), "has no torch_save\\(\\)",
               class = "rcuda_value_error")
})

test_that("callback_model_checkpoint writes the model's state dict with torch_save()", {
  skip_if_not(exists("torch_save", envir = ns, inherits = FALSE), "torch_save() is not in rcuda yet")
  file <- tempfile(fileext = ".safetensors")
  snapshots <- list()
  snap <- callback(on_epoch_end = function(ctx) snapshots[[ctx$epoch]] <<- param_arrays(ctx$model))
  scripted_fit(c(3, 1, 2), list(callback_model_checkpoint(file, save_best_only = TRUE), snap))
  loaded <- ns$torch_load(file)
  expect_identical(lapply(loaded, as.array), snapshots[[2]])
})

test_that("callback_lr_scheduler steps per epoch or per batch; fit(scheduler =) per epoch", {
  d <- regression_data(30)
  train <- batches_of(d$X, d$Y, 10)  # 3 batches
  m <- regression_mlp(2)
  opt <- optim_sgd(m$parameters, lr = 0.1)
  h <- quiet_fit(m, train, nnf_mse_loss, opt, epochs = 3, scheduler = lr_step(opt, 1, gamma = 0.5))
  expect_equal(h$records$lr, 0.1 * 0.5^(0:2))  # the lr each epoch ran with
  expect_equal(opt$param_groups[[1]]$lr, 0.1 * 0.5^3)

  opt <- optim_sgd(m$parameters, lr = 0.1)
  sched <- lr_lambda(opt, function(step) 0.9^step)
  quiet_fit(m, train, nnf_mse_loss, opt, epochs = 2,
            callbacks = callback_lr_scheduler(sched, call_on = "batch"))
  expect_equal(opt$param_groups[[1]]$lr, 0.1 * 0.9^6)

  # lr_reduce_on_plateau steps on valid_loss: reduced once 2 epochs have not improved on 1.
  opt <- optim_sgd(m$parameters, lr = 0.1)
  plateau <- lr_reduce_on_plateau(opt, patience = 1, factor = 0.5)
  h <- scripted_fit(c(1, 2, 3, 4), list(callback_lr_scheduler(plateau)))
  expect_equal(opt$param_groups[[1]]$lr, 0.1 * 0.5)  # a bad epoch 3 beyond patience, cooldown 0
  expect_error(callback_lr_scheduler(plateau, call_on = "batch"), "use call_on = \"epoch\"")
  expect_error(callback_lr_scheduler(list()), "scheduler must be a scheduler")
})

# ---- progress and history ---------------------------------------------------------------------

test_that("verbose prints one line per epoch outside interactive sessions", {
  skip_if(interactive(), "the bar replaces nothing here, but lines are what is tested")
  d <- classification_data(40)
  train <- batches_of(d$X, d$y, 20)
  m <- classifier(4)
  out <- capture_output_lines(h <- fit(m, train, nnf_cross_entropy,
                                       optim_sgd(m$parameters, lr = 0.1), epochs = 3,
                                       valid_dl = train, metrics = list(metric_accuracy()),
                                       verbose = TRUE))
  expect_length(out, 3)
  pattern <- paste0("^epoch ([0-9])/3  loss ([0-9.e-]+)  acc ([0-9.e-]+)  valid_loss ([0-9.e-]+)",
                    "  valid_acc ([0-9.e-]+)  [0-9,]+ samples/s  [0-9.]+ s$")
  expect_true(all(grepl(pattern, out)))
  parts <- regmatches(out, regexec(pattern, out))
  r <- h$records
  for (e in 1:3) {
    expect_identical(as.integer(parts[[e]][2]), e)
    shown <- as.numeric(parts[[e]][3:6])
    expect_equal(shown, c(r$train_loss[e], r$train_acc[e], r$valid_loss[e], r$valid_acc[e]),
                 tolerance = 5e-3)
  }
  expect_silent(quiet_fit(m, train, nnf_cross_entropy, optim_sgd(m$parameters, lr = 0.1)))
})

test_that("the progress bar reads the running loss back only when it redraws", {
  old <- options(cli.progress_show_after = 0)
  on.exit(options(old))
  redraws <- 0
  due <- function() {
    redraws <<- redraws + 1
    redraws %% 2 == 0
  }
  reporter <- ns$fit_reporter(TRUE, bar = TRUE, due = due)
  read_backs <- 0
  count <- function() read_backs <<- read_backs + 1
  suppressMessages(trace("read_back", tracer = as.call(list(count)), where = ns, print = FALSE))
  on.exit(suppressMessages(untrace("read_back", where = ns)), add = TRUE)
  run_epoch <- function() {
    reporter$epoch_begin(1, 1, 4)
    for (i in 1:4) reporter$batch(i, 10 * i, torch_tensor(i, dtype = torch_float64()), list())
    reporter$epoch_end(list(epoch = 1, train_loss = 0.25, lr = 0.1, seconds = 1.5,
                            samples_per_s = 12345.6), 1)
  }
  out <- capture_output_lines(suppressMessages(run_epoch()))
  expect_identical(read_backs, 2)  # batches 2 and 4
  expect_identical(out[length(out)], "epoch 1/1  loss 0.25  12,346 samples/s  1.5 s")
})

test_that("print() shows the epochs; as.data.frame() has one row per epoch", {
  old <- options(width = 200)
  on.exit(options(old))
  d <- regression_data(30)
  train <- batches_of(d$X, d$Y, 10)
  m <- regression_mlp(1)
  h <- quiet_fit(m, train, nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01), epochs = 3,
                 valid_dl = train, metrics = metric_mae())
  out <- capture_output_lines(print(h))
  expect_match(out[1], "<fit history> 3 of 3 epochs on cpu")
  expect_match(out[2], "epoch.*train_loss.*train_mae.*valid_loss.*valid_mae")
  expect_true(all(startsWith(trimws(out[3:5]), paste0(1:3, " "))))
  df <- as.data.frame(h)
  expect_identical(names(df), c("epoch", "train_loss", "train_mae", "valid_loss", "valid_mae",
                                "lr", "seconds", "samples_per_s"))
  expect_identical(nrow(df), 3L)
  expect_true(identical(h$model, m))
  # Long histories show the first and last five epochs.
  h$records <- df[rep(1:3, 6), ]
  h$records$epoch <- 1:18
  out <- capture_output_lines(print(h))
  expect_true(any(out == "   ..."))
  expect_true(any(grepl("^ +18 ", out)) && !any(grepl("^ +9 ", out)))
})

test_that("plot() draws the history into a PNG file under Rscript", {
  skip_if_not(capabilities("png"), "this R cannot write PNG files")
  d <- classification_data(40)
  train <- batches_of(d$X, d$y, 20)
  m <- classifier(2)
  h <- quiet_fit(m, train, nnf_cross_entropy, optim_sgd(m$parameters, lr = 0.1), epochs = 3,
                 valid_dl = train, metrics = metric_accuracy())
  file <- tempfile(fileext = ".png")
  png(file)
  plot(h)
  dev.off()
  expect_gt(file.size(file), 1000)
  # One epoch, no validation: points only, one legend entry.
  h1 <- quiet_fit(m, train, nnf_cross_entropy, optim_sgd(m$parameters, lr = 0.1))
  file1 <- tempfile(fileext = ".png")
  png(file1)
  plot(h1)
  dev.off()
  expect_gt(file.size(file1), 1000)
})

test_that("plot(ggplot = TRUE) builds a ggplot", {
  skip_if_not_installed("ggplot2")
  d <- regression_data(20)
  m <- regression_mlp(1)
  h <- quiet_fit(m, batches_of(d$X, d$Y, 10), nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01),
                 epochs = 2, metrics = metric_mae())
  p <- plot(h, ggplot = TRUE)
  expect_s3_class(p, "ggplot")
  expect_setequal(levels(p$data$quantity), c("loss", "mae"))
})

test_that("plot(ggplot = TRUE) without ggplot2 says what is missing", {
  if (requireNamespace("ggplot2", quietly = TRUE)) skip("ggplot2 is installed")
  d <- regression_data(20)
  m <- regression_mlp(1)
  h <- quiet_fit(m, batches_of(d$X, d$Y, 10), nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01))
  expect_error(plot(h, ggplot = TRUE), "needs the ggplot2 package", class = "rcuda_value_error")
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
  h_cpu <- quiet_fit(cpu, train, nnf_mse_loss, optim_adam(cpu$parameters, lr = 0.01), epochs = 3,
                     valid_dl = valid, metrics = list(metric_mae()))
  h_gpu <- quiet_fit(gpu, train, nnf_mse_loss, optim_adam(gpu$parameters, lr = 0.01), epochs = 3,
                     valid_dl = valid, metrics = list(metric_mae()), device = "cuda")
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
