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
# which are on the host. Each batch's loss is kept, detached, by the engine's side of the sum
# (rc_loss_sum_add, r/src/data.cpp), which folds 64 at a time into a float64 sum with five
# launches (the 64 joined by one, Note [Batched cat] in the engine's CUDA copy kernels): nothing
# per batch but one call, neither a launch nor a handle for R.

#' @export
fit <- function(model, train_dl, loss_fn, optimizer, epochs = 1, valid_dl = NULL,
                metrics = list(), callbacks = list(), scheduler = NULL, device = NULL,
                verbose = NULL, batch_to = NULL) {
  check_fit_args(model, loss_fn, optimizer, epochs, batch_to)
  verbose <- if (is.null(verbose)) fit_is_interactive() else verbose
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
  # Note [fit on several ranks] (R/fit-distributed.R): with a process group, the wrapped model
  # trains on this rank's share of the data, and only rank 0 prints.
  dist <- fit_distributed(model, train_dl, valid_dl)
  if (!is.null(dist)) {
    on.exit(dist$release(), add = TRUE)
    ctx$forward_model <- dist$model
    train_dl <- dist$train_dl
    valid_dl <- dist$valid_dl
    verbose <- verbose && dist$rank == 0
  }
  hooks <- collect_hooks(callbacks)
  reporter <- fit_reporter(verbose, bar = verbose && fit_is_interactive())
  train_batches <- batch_count(train_dl)
  valid_batches <- batch_count(valid_dl)

  run_hooks(hooks$on_fit_begin, ctx)
  for (epoch in seq_len(epochs)) {
    ctx$epoch <- epoch
    if (!is.null(dist)) dist$set_epoch(epoch)
    run_hooks(hooks$on_epoch_begin, ctx)
    started <- now()
    reporter$epoch_begin(epoch, epochs, train_batches)
    train <- train_phase(ctx, train_dl, batch_to, hooks, reporter)
    train_seconds <- now() - started
    if (!is.null(dist)) train[c("values", "samples")] <- dist_average(train$values, train$samples)
    if (is.na(train_batches)) train_batches <- train$batches
    record <- c(list(epoch = epoch), prefixed(train$values, "train_"))
    if (!is.null(valid_dl)) {
      run_hooks(hooks$on_valid_begin, ctx)
      valid <- valid_phase(ctx, valid_dl, batch_to)
      if (!is.null(dist)) valid[c("values", "samples")] <- dist_average(valid$values, valid$samples)
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
  steps <- is.environment(optimizer) && is.function(optimizer$zero_grad) &&
    is.function(optimizer$step)
  if (!is_optimizer(optimizer) && !steps) {
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
train_phase <- function(ctx, dl, batch_to, hooks, reporter) {
  model <- ctx$forward_model %||% ctx$model  # the data-parallel wrapper on several ranks
  optimizer <- ctx$optimizer
  loss_fn <- ctx$loss_fn
  device <- ctx$device
  batch_hooks <- length(hooks$on_batch_begin) || length(hooks$on_batch_end)
  report <- reporter$batch
  metrics <- lapply(ctx$metrics, metric_instance)
  losses <- .Call(rc_loss_sum_new)  # Note [One read-back per phase]
  samples <- 0
  model$train()
  next_batch <- batch_iterator(dl, "train_dl")
  # A plain list of batches is indexed here, and a batch of two tensors prepared in one call,
  # rather than through next_batch() and prepare_batch(): each R closure call costs a
  # microsecond or so, a few percent of a small model's step on a GPU.
  items <- if (is.list(dl) && !is.object(dl)) dl
  n_items <- length(items)
  fast_batches <- is.null(batch_to)
  i <- 0L
  step <- ctx$step
  # Only hooks can stop training or read the batch, so without batch hooks the loop touches
  # ctx not at all (each `ctx$` costs an S3 dispatch attempt on its class).
  repeat {
    if (is.null(items)) {
      batch <- next_batch()
      if (identical(batch, end_of_batches)) break
    } else {
      if (i >= n_items) break
      batch <- .subset2(items, i + 1L)
    }
    i <- i + 1L
    if (batch_hooks) {
      ctx$batch <- i
      run_hooks(hooks$on_batch_begin, ctx)
    }
    b <- if (fast_batches) .Call(rc_fit_batch, batch, device)
    if (is.null(b)) b <- prepare_batch_in_r(batch, device, batch_to)
    x <- b[[1L]]
    y <- b[[2L]]
    optimizer$zero_grad()
    pred <- model(x)
    loss <- loss_fn(pred, y)
    loss$backward()
    optimizer$step()
    n <- b[[3L]]
    samples <- samples + n
    .Call(rc_loss_sum_add, losses, loss, n)
    if (length(metrics)) update_metrics(metrics, pred, y)
    step <- step + 1L
    if (!is.null(report)) {
      report(i, samples, function() .Call(rc_loss_sum_value, losses, device), metrics)
    }
    if (batch_hooks) {
      ctx$step <- step
      ctx$x <- x
      ctx$y <- y
      ctx$pred <- pred
      ctx$loss <- loss
      run_hooks(hooks$on_batch_end, ctx)
      if (isTRUE(ctx$stop_training)) break
    }
  }
  ctx$step <- step
  if (i == 0L) value_error("fit: train_dl gave no batches in epoch ", ctx$epoch)
  if (batch_hooks) ctx$x <- ctx$y <- ctx$pred <- ctx$loss <- NULL
  loss_sum <- .Call(rc_loss_sum_value, losses, device)
  list(values = read_back(phase_values(loss_sum, samples, metrics)), samples = samples,
       batches = i)
}

valid_phase <- function(ctx, dl, batch_to) {
  model <- ctx$forward_model %||% ctx$model
  loss_fn <- ctx$loss_fn
  device <- ctx$device
  metrics <- lapply(ctx$metrics, metric_instance)
  losses <- .Call(rc_loss_sum_new)
  samples <- 0
  model$eval()
  next_batch <- batch_iterator(dl, "valid_dl")
  i <- 0L
  with_no_grad(repeat {
    batch <- next_batch()
    if (is_end_of_batches(batch)) break
    i <- i + 1L
    b <- prepare_batch(batch, device, batch_to)
    pred <- model(b[[1L]])
    loss <- loss_fn(pred, b[[2L]])
    n <- b[[3L]]
    samples <- samples + n
    .Call(rc_loss_sum_add, losses, loss, n)
    if (length(metrics)) update_metrics(metrics, pred, b[[2L]])
    # The previous batch's activations, unreferenced now, go back to the pool (an optimizer's
    # step does this in training).
    .Call(rc_release_point)
  })
  if (i == 0L) value_error("fit: valid_dl gave no batches in epoch ", ctx$epoch)
  loss_sum <- .Call(rc_loss_sum_value, losses, device)
  list(values = read_back(phase_values(loss_sum, samples, metrics)), samples = samples,
       batches = i)
}


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
# fit() takes a plain list of batches, or any object that the S3 generics
# dataloader_make_iter(dl) and dataloader_next(iter, completed = NULL) iterate (R/data-loader.R):
# dataloader_next returns the next batch, or `completed` once the iterator is exhausted, as
# torch for R's do. rcuda's dataloaders have methods; another loader class gets two methods.
end_of_batches <- new.env(parent = emptyenv())
is_end_of_batches <- function(x) identical(x, end_of_batches)

batch_iterator <- function(dl, what) {
  if (is.list(dl) && !is.object(dl)) {
    i <- 0L
    n <- length(dl)
    return(function() {
      if (i >= n) return(end_of_batches)
      i <<- i + 1L
      dl[[i]]
    })
  }
  if (!has_s3_method("dataloader_make_iter", dl)) {
    value_error("fit: ", what, " must be a list of batches or a dataloader, got ", describe(dl),
                " (a loader class needs dataloader_make_iter() and dataloader_next() methods)")
  }
  iter <- dataloader_make_iter(dl)
  function() dataloader_next(iter, end_of_batches)
}

has_s3_method <- function(generic, x) {
  any(vapply(class(x), function(cl) {
    !is.null(utils::getS3method(generic, cl, optional = TRUE, envir = topenv()))
  }, logical(1)))
}

# Batches per epoch where the loader says (a list, or an object with a length() method), else NA
# until the first epoch has counted them.
batch_count <- function(dl) {
  if (is.null(dl)) return(NA_integer_)
  if (is.list(dl) && !is.object(dl)) return(length(dl))
  if (has_s3_method("length", dl)) as.integer(length(dl)) else NA_integer_
}

# list(x, y) on the device. A batch is list(x, y), a list with elements x and y, or a list
# whose first element is the input and whose second is the target.
# list(x, y, samples) on the device: in one call for a list of two tensors (rc_fit_batch),
# else taken apart and moved here.
prepare_batch <- function(batch, device, batch_to) {
  b <- if (is.null(batch_to)) .Call(rc_fit_batch, batch, device)
  if (is.null(b)) b <- prepare_batch_in_r(batch, device, batch_to)
  b
}

# prepare_batch() for what rc_fit_batch does not take: other batches, and batch_to's.
prepare_batch_in_r <- function(batch, device, batch_to) {
  if (is.null(batch_to)) {
    b <- split_batch(batch)
    b <- list(to_device(b[[1L]], device), to_device(b[[2L]], device))
  } else {
    b <- split_batch(batch_to(batch, device))
  }
  list(b[[1L]], b[[2L]], batch_size(b[[1L]], b[[2L]]))
}

# The batch's rule (its elements x and y, else its first two) is rc_batch_parts' (r/src/data.cpp),
# which rc_fit_batch follows too.
split_batch <- function(batch) {
  if (!is.list(batch)) {
    value_error("fit: a batch must be list(x, y) or a list with elements x and y, got ",
                describe(batch))
  }
  parts <- .Call(rc_batch_parts, batch)
  if (is.null(parts)) {
    value_error("fit: a batch must hold an input and a target (list(x, y)), got a list of length ",
                length(batch))
  }
  parts
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
batch_size <- function(x, y) {
  if (is_torch_tensor(y)) {
    shape <- .Call(rc_shape, y)
    return(if (length(shape)) shape[[1]] else 1)
  }
  n <- first_dim(y)
  if (is.na(n)) n <- first_dim(x)
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
