# fit()'s callbacks: hooks and the context, early stopping, checkpoints, lr schedulers.

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
  # torch_save hidden from the namespace for the test, where this build has it.
  if (exists("torch_save", envir = ns, inherits = FALSE)) {
    saved <- get("torch_save", envir = ns)
    unlockBinding("torch_save", ns)
    assign("torch_save", NULL, envir = ns)
    on.exit({
      assign("torch_save", saved, envir = ns)
      lockBinding("torch_save", ns)
    })
  }
  expect_error(callback_model_checkpoint(tempfile()), "has no torch_save\\(\\)",
               class = "rcuda_value_error")
})

test_that("callback_model_checkpoint writes the model's state dict with torch_save()", {
  skip_if_not(exists("torch_save", envir = ns, inherits = FALSE),
              "torch_save() is not in rcuda yet")
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
