# Callbacks for fit(): lists of hooks, each a function(ctx) of the fit context (an environment
# documented in ?callback), called at the points of the loop they are named after.

hook_names <- c("on_fit_begin", "on_epoch_begin", "on_batch_begin", "on_batch_end",
                "on_valid_begin", "on_valid_end", "on_epoch_end", "on_fit_end")

#' @export
callback <- function(on_epoch_begin = NULL, on_epoch_end = NULL, on_batch_end = NULL, ...,
                     name = "callback") {
  hooks <- c(list(on_epoch_begin = on_epoch_begin, on_epoch_end = on_epoch_end,
                  on_batch_end = on_batch_end), list(...))
  if (length(hooks) > 3 && (is.null(names(hooks)) || any(names(hooks)[-(1:3)] == ""))) {
    value_error("callback: every hook given in ... must be named (one of ",
                paste(hook_names, collapse = ", "), ")")
  }
  unknown <- setdiff(names(hooks), hook_names)
  if (length(unknown)) {
    value_error("callback: unknown hook '", unknown[1], "' (hooks are ",
                paste(hook_names, collapse = ", "), ")")
  }
  hooks <- Filter(Negate(is.null), hooks)
  for (h in names(hooks)) {
    f <- hooks[[h]]
    if (!is.function(f)) value_error("callback: ", h, " must be a function(ctx), got ", describe(f))
    # A hook with no arguments is called without the context.
    if (length(formals(f)) == 0 && !is.primitive(f)) hooks[[h]] <- local({
      g <- f
      function(ctx) g()
    })
  }
  structure(c(list(name = name), hooks), class = "rcuda_callback")
}

#' @export
print.rcuda_callback <- function(x, ...) {
  cat("<callback ", x$name, ": ", paste(intersect(hook_names, names(x)), collapse = ", "), ">\n",
      sep = "")
  invisible(x)
}

check_callbacks <- function(callbacks) {
  if (inherits(callbacks, "rcuda_callback")) callbacks <- list(callbacks)
  if (!is.list(callbacks) ||
        !all(vapply(callbacks, inherits, logical(1), what = "rcuda_callback"))) {
    value_error("fit: callbacks must be a list of callbacks (callback(), ",
                "callback_early_stopping(), ...)")
  }
  callbacks
}

# For each hook, the functions of the callbacks that have it, in the callbacks' order.
collect_hooks <- function(callbacks) {
  hooks <- lapply(hook_names, function(h) {
    Filter(Negate(is.null), lapply(callbacks, function(cb) cb[[h]]))
  })
  names(hooks) <- hook_names
  hooks
}

run_hooks <- function(fns, ctx) {
  for (f in fns) f(ctx)
  invisible(NULL)
}

# The environment hooks receive; fields are documented in ?callback.
new_fit_context <- function(model, optimizer, loss_fn, device, epochs, metrics, has_valid) {
  ctx <- new.env(parent = emptyenv())
  ctx$model <- model
  ctx$optimizer <- optimizer
  ctx$loss_fn <- loss_fn
  ctx$device <- device
  ctx$epochs <- epochs
  ctx$epoch <- 0L
  ctx$batch <- 0L
  ctx$step <- 0L
  ctx$metrics <- metrics
  names <- c("loss", names(metrics))
  ctx$monitors <- c(paste0("train_", names), if (has_valid) paste0("valid_", names), "lr")
  ctx$logs <- NULL
  ctx$records <- list()
  ctx$stop_training <- FALSE
  ctx$stop_reason <- NULL
  class(ctx) <- "rcuda_fit_context"
  ctx
}

#' @export
print.rcuda_fit_context <- function(x, ...) {
  cat("<fit context> epoch ", x$epoch, "/", x$epochs, ", step ", x$step, " on ", x$device, "\n",
      sep = "")
  invisible(x)
}

# ---- watching a monitored value ---------------------------------------------------------------

check_monitor_args <- function(who, monitor, mode, min_delta) {
  if (!is.character(monitor) || length(monitor) != 1) {
    value_error(who, ": monitor must be a name such as \"valid_loss\" or \"train_acc\", got ",
                deparse(monitor)[1])
  }
  if (!is.character(mode) || length(mode) != 1 || !mode %in% c("min", "max")) {
    value_error(who, ": mode must be \"min\" (lower is better) or \"max\", got ",
                deparse(mode)[1])
  }
  if (!is.numeric(min_delta) || length(min_delta) != 1 || is.na(min_delta) || min_delta < 0) {
    value_error(who, ": min_delta must be a number >= 0, got ", deparse(min_delta)[1])
  }
}

# Fails before the first epoch when the monitored value will not be recorded.
check_monitor_available <- function(who, monitor, ctx) {
  if (!monitor %in% ctx$monitors) {
    value_error(who, ": monitor '", monitor, "' is not recorded by this fit() (it records ",
                paste(ctx$monitors, collapse = ", "), ")",
                if (startsWith(monitor, "valid_")) {
                  "; give fit() a valid_dl to record valid_ values"
                })
  }
}

# TRUE when `value` improves on `best` by more than min_delta.
improves <- function(value, best, mode, min_delta) {
  if (is.na(value)) return(FALSE)
  if (is.null(best) || is.na(best)) return(TRUE)
  if (mode == "min") value < best - min_delta else value > best + min_delta
}

# ---- early stopping ---------------------------------------------------------------------------

#' @export
callback_early_stopping <- function(monitor = "valid_loss", patience = 1, min_delta = 0,
                                    mode = "min") {
  who <- "callback_early_stopping"
  check_monitor_args(who, monitor, mode, min_delta)
  if (!is.numeric(patience) || length(patience) != 1 || is.na(patience) || patience < 1 ||
        patience != round(patience)) {
    value_error(who, ": patience must be a whole number >= 1 (epochs without improvement ",
                "before stopping), got ", deparse(patience)[1])
  }
  best <- NULL
  bad_epochs <- 0L
  callback(
    name = "early_stopping",
    on_fit_begin = function(ctx) {
      check_monitor_available(who, monitor, ctx)
      best <<- NULL
      bad_epochs <<- 0L
    },
    on_epoch_end = function(ctx) {
      value <- ctx$logs[[monitor]]
      if (improves(value, best, mode, min_delta)) {
        best <<- value
        bad_epochs <<- 0L
        return(invisible(NULL))
      }
      bad_epochs <<- bad_epochs + 1L
      if (bad_epochs >= patience) {
        ctx$stop_training <- TRUE
        ctx$stop_reason <- sprintf(
          "early stopping at epoch %d of %d: %s has not improved on %s for %d epoch%s",
          ctx$epoch, ctx$epochs, monitor, format(best, digits = 4), bad_epochs,
          if (bad_epochs == 1) "" else "s")
      }
    }
  )
}

# ---- checkpoints ------------------------------------------------------------------------------

#' @export
callback_model_checkpoint <- function(path, monitor = "valid_loss", save_best_only = FALSE,
                                      mode = "min", min_delta = 0) {
  save <- get0("torch_save", envir = topenv(), inherits = FALSE, mode = "function")
  if (is.null(save)) {
    value_error("callback_model_checkpoint: this build of rcuda has no torch_save(), which ",
                "writes the checkpoints")
  }
  checkpoint_callback(path, monitor, save_best_only, mode, min_delta, save)
}

# Writes save(model$state_dict(), file) after each epoch (or each improving one), to a
# temporary file beside the checkpoint then renamed over it, so that a checkpoint on disk is
# always a whole one. "{epoch}" in path becomes the epoch's number.
checkpoint_callback <- function(path, monitor, save_best_only, mode, min_delta, save) {
  who <- "callback_model_checkpoint"
  if (!is.character(path) || length(path) != 1 || !nzchar(path)) {
    value_error(who, ": path must be a file name, got ", deparse(path)[1])
  }
  if (!is.logical(save_best_only) || length(save_best_only) != 1 || is.na(save_best_only)) {
    value_error(who, ": save_best_only must be TRUE or FALSE")
  }
  check_monitor_args(who, monitor, mode, min_delta)
  best <- NULL
  callback(
    name = "model_checkpoint",
    on_fit_begin = function(ctx) {
      if (save_best_only) check_monitor_available(who, monitor, ctx)
      best <<- NULL
    },
    on_epoch_end = function(ctx) {
      if (save_best_only) {
        value <- ctx$logs[[monitor]]
        if (!improves(value, best, mode, min_delta)) return(invisible(NULL))
        best <<- value
      }
      # On several ranks the replicas are equal: rank 0 writes (Note [fit on several ranks]).
      if (dist_is_initialized() && dist_get_rank() != 0) return(invisible(NULL))
      file <- gsub("{epoch}", ctx$epoch, path, fixed = TRUE)
      write_atomically(file, function(tmp) save(ctx$model$state_dict(), tmp))
    }
  )
}

write_atomically <- function(file, write) {
  dir <- dirname(file)
  if (!dir.exists(dir)) dir.create(dir, recursive = TRUE)
  tmp <- tempfile(paste0(".", basename(file), "-"), tmpdir = dir)
  on.exit(if (file.exists(tmp)) unlink(tmp))
  write(tmp)
  if (!file.rename(tmp, file)) {
    value_error("callback_model_checkpoint: could not move the checkpoint into place at ", file)
  }
  invisible(file)
}

# ---- learning-rate schedules ------------------------------------------------------------------

#' @export
callback_lr_scheduler <- function(scheduler, call_on = "epoch", monitor = NULL) {
  who <- "callback_lr_scheduler"
  if (!is.environment(scheduler) || !is.function(scheduler$step)) {
    value_error(who, ": scheduler must be a scheduler (lr_step(optimizer, ...), ...), got ",
                describe(scheduler))
  }
  if (!is.character(call_on) || length(call_on) != 1 || !call_on %in% c("epoch", "batch")) {
    value_error(who, ": call_on must be \"epoch\" or \"batch\", got ", deparse(call_on)[1])
  }
  plateau <- inherits(scheduler, "lr_reduce_on_plateau")
  if (plateau && call_on == "batch") {
    value_error(who, ": lr_reduce_on_plateau steps on an epoch's value; use call_on = \"epoch\"")
  }
  if (call_on == "batch") {
    return(callback(name = "lr_scheduler", on_batch_end = function(ctx) scheduler$step()))
  }
  callback(
    name = "lr_scheduler",
    on_fit_begin = function(ctx) {
      if (plateau) {
        if (is.null(monitor)) {
          monitor <<- if ("valid_loss" %in% ctx$monitors) "valid_loss" else "train_loss"
        }
        check_monitor_available(who, monitor, ctx)
      }
    },
    on_epoch_end = function(ctx) {
      if (plateau) scheduler$step(ctx$logs[[monitor]]) else scheduler$step()
    }
  )
}
