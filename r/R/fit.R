# fit(): the training loop users would write by hand, with metrics, callbacks, a progress
# display and a history (in the spirit of luz, mlverse/luz, without its setup() step).
#
# Note [fit is the hand-written loop]
# Each training batch runs exactly
#     optimizer$zero_grad(); loss <- loss_fn(model(x), y); loss$backward(); optimizer$step()
# after model$train() at the start of the epoch, and nothing else that touches the parameters,
# the gradients or the random streams: with the same seed and batches, the parameters after
# fit() are identical() to those of the loop written out (test-fit.R checks it). Validation runs
# under with_no_grad() after model$eval(), which draws no random numbers.
#
# Note [One read-back per phase]
# Reading a value of a CUDA tensor on the host waits for the device. The loss and the metrics
# are therefore summed into tensors on the model's device as batches go, and read back with one
# copy at the end of the training phase and one at the end of validation (read_back()); a
# progress bar reads the running sums only when it redraws. Sample counts come from shapes,
# which are on the host.

#' @export
fit <- function(model, train_dl, loss_fn, optimizer, epochs = 1, valid_dl = NULL,
                metrics = list(), callbacks = list(), scheduler = NULL, device = NULL,
                verbose = NULL, batch_to = NULL) {
  caller <- parent.frame()
  check_fit_args(model, loss_fn, optimizer, epochs, batch_to)
  verbose <- if (is.null(verbose)) interactive() else verbose
  if (!is.logical(verbose) || length(verbose) != 1 || is.na(verbose)) {
    value_error("fit: verbose must be TRUE, FALSE or NULL, got ", deparse(verbose)[1])
  }
  metrics <- check_metrics(metrics)
  callbacks <- check_callbacks(callbacks)
  if (!is.null(scheduler)) {
    call_on <- if (inherits(scheduler, "lr_one_cycle")) "batch" else "epoch"
    callbacks <- c(callbacks, list(callback_lr_scheduler(scheduler, call_on = call_on)))
  }
  ctx <- new_fit_context(model, optimizer, loss_fn, fit_device(model, device), epochs,
                         metrics, has_valid = !is.null(valid_dl))
  hooks <- collect_hooks(callbacks)
  reporter <- fit_reporter(verbose, bar = verbose && fit_is_interactive())
  train_batches <- batch_count(train_dl)
  valid_batches <- batch_count(valid_dl)

  run_hooks(hooks$on_fit_begin, ctx)
  for (epoch in seq_len(epochs)) {
    ctx$epoch <- epoch
    run_hooks(hooks$on_epoch_begin, ctx)
    started <- now()
    reporter$epoch_begin(epoch, epochs, train_batches)
    train <- train_phase(ctx, train_dl, batch_to, hooks, reporter, caller)
    train_seconds <- now() - started
    if (is.na(train_batches)) train_batches <- train$batches
    record <- c(list(epoch = epoch), prefixed(train$values, "train_"))
    if (!is.null(valid_dl)) {
      run_hooks(hooks$on_valid_begin, ctx)
      valid <- valid_phase(ctx, valid_dl, batch_to, caller)
      if (is.na(valid_batches)) valid_batches <- valid$batches
      record <- c(record, prefixed(valid$values, "valid_"))
      run_hooks(hooks$on_valid_end, ctx)
    }
    seconds <- now() - started
    record <- c(record, list(lr = current_lr(optimizer), seconds = seconds,
                             samples_per_s = train$samples / max(train_seconds, 1e-9)))
    ctx$logs <- record
    ctx$records[[epoch]] <- record
    reporter$epoch_end(record, epochs)
    run_hooks(hooks$on_epoch_end, ctx)
    if (isTRUE(ctx$stop_training)) break
  }
  run_hooks(hooks$on_fit_end, ctx)
  if (isTRUE(ctx$stop_training) && !is.null(ctx$stop_reason)) reporter$note(ctx$stop_reason)
  new_fit_history(ctx)
}

check_fit_args <- function(model, loss_fn, optimizer, epochs, batch_to) {
  if (!is_nn_module(model)) value_error("fit: model must be an nn_module, got ", describe(model))
  if (!is.function(loss_fn)) {
    value_error("fit: loss_fn must be a function or a loss module (nnf_mse_loss, ",
                "nn_cross_entropy_loss(), ...), got ", describe(loss_fn))
  }
  if (!is_optimizer(optimizer) &&
        !(is.environment(optimizer) && is.function(optimizer$zero_grad) && is.function(optimizer$step))) {
    value_error("fit: optimizer must be an optimizer (optim_adam(model$parameters), ...), got ",
                describe(optimizer))
  }
  if (!is.numeric(epochs) || length(epochs) != 1 || is.na(epochs) || epochs < 1 ||
        epochs != round(epochs)) {
    value_error("fit: epochs must be a whole number >= 1, got ", deparse(epochs)[1])
  }
  if (!is.null(batch_to) && !is.function(batch_to)) {
    value_error("fit: batch_to must be a function(batch, device) or NULL, got ", describe(batch_to))
  }
}

# The device batches go to, as the engine spells it ("cpu", "cuda:0"). With device given, the
# model moves there first; rcuda moves parameters in place, so the optimizer follows them.
fit_device <- function(model, device) {
  if (!is.null(device)) model$to(device = device)
  params <- model$parameters
  if (length(params)) return(.Call(rc_meta, params[[1]])[[3]])
  if (is.null(device)) "cpu" else device_string(torch_device(device))
}

current_lr <- function(optimizer) {
  lr <- tryCatch(optimizer$param_groups[[1]]$lr, error = function(e) NULL)
  if (is.numeric(lr) && length(lr) == 1) lr else NA_real_
}

prefixed <- function(values, prefix) {
  if (length(values)) names(values) <- paste0(prefix, names(values))
  values
}

fit_is_interactive <- function() interactive()

now <- function() as.numeric(Sys.time())

# ---- phases ---------------------------------------------------------------------------------

# Note [fit is the hand-written loop] and [One read-back per phase].
train_phase <- function(ctx, dl, batch_to, hooks, reporter, caller) {
  model <- ctx$model
  optimizer <- ctx$optimizer
  loss_fn <- ctx$loss_fn
  device <- ctx$device
  batch_hooks <- length(hooks$on_batch_begin) || length(hooks$on_batch_end)
  report <- reporter$batch
  metrics <- lapply(ctx$metrics, metric_instance)
  loss_sum <- zero_sum(device)
  samples <- 0
  model$train()
  next_batch <- batch_iterator(dl, caller, "train_dl")
  i <- 0L
  repeat {
    batch <- next_batch()
    if (is_end_of_batches(batch)) break
    i <- i + 1L
    if (batch_hooks) {
      ctx$batch <- i
      run_hooks(hooks$on_batch_begin, ctx)
    }
    b <- prepare_batch(batch, device, batch_to)
    optimizer$zero_grad()
    pred <- model(b$x)
    loss <- loss_fn(pred, b$y)
    loss$backward()
    optimizer$step()
    n <- batch_size(b)
    samples <- samples + n
    loss_sum <- torch_add(loss_sum, .Call(rc_detach, loss), alpha = n)
    if (length(metrics)) update_metrics(metrics, pred, b$y)
    ctx$step <- ctx$step + 1L
    if (batch_hooks) {
      ctx$x <- b$x
      ctx$y <- b$y
      ctx$pred <- pred
      ctx$loss <- loss
      run_hooks(hooks$on_batch_end, ctx)
    }
    if (!is.null(report)) report(i, samples, loss_sum, metrics)
    if (isTRUE(ctx$stop_training)) break
  }
  if (i == 0L) value_error("fit: train_dl gave no batches in epoch ", ctx$epoch)
  if (batch_hooks) ctx$x <- ctx$y <- ctx$pred <- ctx$loss <- NULL
  list(values = read_back(phase_values(loss_sum, samples, metrics)), samples = samples,
       batches = i)
}

valid_phase <- function(ctx, dl, batch_to, caller) {
  model <- ctx$model
  loss_fn <- ctx$loss_fn
  device <- ctx$device
  metrics <- lapply(ctx$metrics, metric_instance)
  loss_sum <- zero_sum(device)
  samples <- 0
  model$eval()
  next_batch <- batch_iterator(dl, caller, "valid_dl")
  i <- 0L
  with_no_grad(repeat {
    batch <- next_batch()
    if (is_end_of_batches(batch)) break
    i <- i + 1L
    b <- prepare_batch(batch, device, batch_to)
    pred <- model(b$x)
    loss <- loss_fn(pred, b$y)
    n <- batch_size(b)
    samples <- samples + n
    loss_sum <- torch_add(loss_sum, loss, alpha = n)
    if (length(metrics)) update_metrics(metrics, pred, b$y)
  })
  if (i == 0L) value_error("fit: valid_dl gave no batches in epoch ", ctx$epoch)
  list(values = read_back(phase_values(loss_sum, samples, metrics)), samples = samples,
       batches = i)
}

# A float64 0-d zero on the device: the running sum of loss * batch size.
zero_sum <- function(device) torch_zeros(integer(0), dtype = torch_float64(), device = device)

# The loss mean over samples and each metric's compute(), still on the device.
phase_values <- function(loss_sum, samples, metrics) {
  values <- list(loss = loss_sum / samples)
  for (m in metrics) values[[m$name]] <- m$compute()
  values
}

# Note [One read-back per phase]: every tensor among the values (each a single number) is stacked
# into one float64 tensor and copied to the host at once; plain numbers pass through.
read_back <- function(values) {
  is_tensor <- vapply(values, is_torch_tensor, logical(1))
  for (name in names(values)[!is_tensor]) {
    v <- values[[name]]
    if (!is.numeric(v) || length(v) != 1) {
      value_error("fit: ", name, " must be a single number or a one-element tensor, got ",
                  describe(v), " of length ", length(v))
    }
  }
  if (any(is_tensor)) {
    flat <- lapply(names(values)[is_tensor], function(name) {
      t <- values[[name]]
      if (.Call(rc_numel, t) != 1) {
        value_error("fit: ", name, " must be a one-element tensor, got shape [",
                    paste(t$shape, collapse = ", "), "]")
      }
      t$reshape(integer(0))$to(dtype = torch_float64())
    })
    numbers <- as.numeric(as_array(torch_stack(flat)))
    values[is_tensor] <- as.list(numbers)
  }
  lapply(values, as.numeric)
}

# ---- batches --------------------------------------------------------------------------------

# Note [Iteration protocol]
# fit() takes a plain list of batches, or any object that the functions dataloader_make_iter(dl)
# and dataloader_next(iter, completed = NULL) iterate: dataloader_next returns the next batch, or
# `completed` once the iterator is exhausted. torch for R's dataloaders follow it, and so do
# rcuda's. The functions are rcuda's own where rcuda has them, else those visible where fit() was
# called (torch for R's, or a user's generics), looked up when the epoch starts.
end_of_batches <- new.env(parent = emptyenv())
is_end_of_batches <- function(x) identical(x, end_of_batches)

batch_iterator <- function(dl, caller, what) {
  if (is.list(dl) && !is.object(dl)) {
    i <- 0L
    n <- length(dl)
    return(function() {
      if (i >= n) return(end_of_batches)
      i <<- i + 1L
      dl[[i]]
    })
  }
  make_iter <- protocol_function("dataloader_make_iter", caller, what, dl)
  next_of <- protocol_function("dataloader_next", caller, what, dl)
  iter <- make_iter(dl)
  function() next_of(iter, end_of_batches)
}

protocol_function <- function(name, caller, what, dl) {
  f <- get0(name, envir = topenv(), inherits = FALSE, mode = "function")
  if (is.null(f)) f <- get0(name, envir = caller, mode = "function")
  if (is.null(f)) {
    value_error("fit: ", what, " must be a list of batches or a dataloader, got ", describe(dl),
                " (and no ", name, "() is available to iterate it)")
  }
  f
}

# Batches per epoch where the loader says (a list, or an object with a length() method), else NA
# until the first epoch has counted them.
batch_count <- function(dl) {
  if (is.null(dl)) return(NA_integer_)
  if (is.list(dl) && !is.object(dl)) return(length(dl))
  has_length <- any(vapply(class(dl), function(cl) {
    !is.null(utils::getS3method("length", cl, optional = TRUE))
  }, logical(1)))
  if (has_length) as.integer(length(dl)) else NA_integer_
}

# list(x =, y =) on the device. A batch is list(x, y), a list with elements x and y, or a list
# whose first element is the input and whose second is the target.
prepare_batch <- function(batch, device, batch_to) {
  if (!is.null(batch_to)) return(split_batch(batch_to(batch, device)))
  b <- split_batch(batch)
  list(x = to_device(b$x, device), y = to_device(b$y, device))
}

split_batch <- function(batch) {
  if (!is.list(batch) || is_torch_tensor(batch)) {
    value_error("fit: a batch must be list(x, y) or a list with elements x and y, got ",
                describe(batch))
  }
  nm <- names(batch)
  if (!is.null(nm) && "x" %in% nm && "y" %in% nm) return(list(x = batch[["x"]], y = batch[["y"]]))
  if (length(batch) < 2) {
    value_error("fit: a batch must hold an input and a target (list(x, y)), got a list of length ",
                length(batch))
  }
  list(x = batch[[1]], y = batch[[2]])
}

# Tensors anywhere in x (lists of them included) moved to the device; other values unchanged.
to_device <- function(x, device) {
  if (is_torch_tensor(x)) {
    if (identical(.Call(rc_meta, x)[[3]], device)) return(x)
    return(.Call(rc_to, x, NULL, device))
  }
  if (is.list(x) && !is.object(x)) return(lapply(x, to_device, device = device))
  x
}

# Samples in a batch: the first dim of the target's first tensor (else the input's).
batch_size <- function(b) {
  n <- first_dim(b$y)
  if (is.na(n)) n <- first_dim(b$x)
  if (is.na(n)) 1 else n
}

first_dim <- function(x) {
  if (is_torch_tensor(x)) {
    shape <- .Call(rc_shape, x)
    return(if (length(shape)) shape[[1]] else 1)
  }
  if (is.list(x)) {
    for (el in x) {
      n <- first_dim(el)
      if (!is.na(n)) return(n)
    }
  }
  NA_real_
}
