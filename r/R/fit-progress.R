# What fit() shows as it trains. Quiet unless verbose (which defaults to interactive()); in an
# interactive session a cli progress bar per epoch shows the running loss and metrics, samples/s
# and the ETA; every verbose epoch ends with one line such as
#   epoch 1/5  loss 0.512  acc 0.83  valid_loss 0.47  valid_acc 0.85  12,345 samples/s  3.2 s
# which is all a non-interactive session (Rscript) prints.
#
# The bar reads the running sums back from the device only when it redraws, not per batch
# (Note [One read-back per phase] in fit.R): first once the epoch has run for cli's
# `cli.progress_show_after` seconds (2 by default; shorter epochs show no bar), then every
# `refresh` seconds. `due` replaces that clock in tests.

fit_reporter <- function(verbose, bar, due = NULL, refresh = 0.25) {
  quiet <- function(...) invisible(NULL)
  if (!verbose) return(list(epoch_begin = quiet, batch = NULL, epoch_end = quiet, note = quiet))
  state <- new.env(parent = emptyenv())
  if (is.null(due)) due <- function() {
    t <- now()
    if (t < state$next_redraw) return(FALSE)
    state$next_redraw <- t + refresh
    TRUE
  }
  list(
    epoch_begin = function(epoch, epochs, total) {
      state$started <- now()
      state$next_redraw <- state$started + getOption("cli.progress_show_after", 2)
      if (bar) state$id <- start_bar(epoch, epochs, total)
    },
    # loss_sum: the running sum (or a function returning it), read back only when the bar
    # redraws (Note [One read-back per phase] in fit.R).
    batch = if (bar) function(i, samples, loss_sum, metrics) {
      if (!due()) return(invisible(NULL))
      if (is.function(loss_sum)) loss_sum <- loss_sum()
      values <- read_back(phase_values(loss_sum, samples, metrics))
      rate <- samples / max(now() - state$started, 1e-9)
      text <- paste(c(format_values(values, ""), format_rate(rate)), collapse = "  ")
      cli::cli_progress_update(set = i, extra = list(stats = text), id = state$id, force = TRUE)
    },
    epoch_end = function(record, epochs) {
      if (bar && !is.null(state$id)) cli::cli_progress_done(id = state$id)
      state$id <- NULL
      cat(format_epoch_line(record, epochs), "\n", sep = "")
    },
    note = function(text) cat(text, "\n", sep = "")
  )
}

start_bar <- function(epoch, epochs, total) {
  label <- sprintf("epoch %*d/%d", nchar(epochs), epoch, epochs)
  format <- if (is.na(total)) {
    paste(label, "{cli::pb_spin} batch {cli::pb_current}  {cli::pb_extra$stats}  {cli::pb_elapsed}")
  } else {
    paste(label, "{cli::pb_bar} {cli::pb_current}/{cli::pb_total} ETA {cli::pb_eta}",
          " {cli::pb_extra$stats}")
  }
  cli::cli_progress_bar(total = total, format = format, extra = list(stats = ""), clear = TRUE,
                        .envir = parent.frame(2))
}

# "epoch 1/5  loss 0.512  acc 0.83  valid_loss 0.47  valid_acc 0.85  12,345 samples/s  3.2 s"
format_epoch_line <- function(record, epochs) {
  values <- record[setdiff(names(record), c("epoch", "lr", "seconds", "samples_per_s"))]
  names(values) <- sub("^train_", "", names(values))
  paste(c(sprintf("epoch %*d/%d", nchar(epochs), record$epoch, epochs),
          format_values(values, ""), format_rate(record$samples_per_s),
          format_seconds(record$seconds)), collapse = "  ")
}

format_values <- function(values, prefix) {
  vapply(names(values), function(n) paste0(prefix, n, " ", format_number(values[[n]])),
         character(1), USE.NAMES = FALSE)
}

format_number <- function(x) {
  if (is.na(x)) return("NA")
  trimws(formatC(x, digits = 3, format = "fg"))
}

format_rate <- function(rate) {
  paste(format(round(rate), big.mark = ",", scientific = FALSE, trim = TRUE), "samples/s")
}

format_seconds <- function(s) if (s < 1) sprintf("%.2f s", s) else sprintf("%.1f s", s)
