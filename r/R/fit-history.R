# What fit() returns: the per-epoch records and the model, with print(), as.data.frame() and
# plot() (base graphics; ggplot2 when asked for and installed).

new_fit_history <- function(ctx) {
  records <- do.call(rbind, lapply(ctx$records, function(r) as.data.frame(r, optional = TRUE)))
  rownames(records) <- NULL
  structure(
    list(records = records, model = ctx$model, epochs = ctx$epochs, device = ctx$device,
         stopped_early = isTRUE(ctx$stop_training) && nrow(records) < ctx$epochs,
         stop_reason = ctx$stop_reason),
    class = "rcuda_fit_history"
  )
}

#' @export
as.data.frame.rcuda_fit_history <- function(x, ...) x$records

#' @export
print.rcuda_fit_history <- function(x, ...) {
  r <- x$records
  cat("<fit history> ", nrow(r), " of ", x$epochs, " epochs on ", x$device, "\n", sep = "")
  if (!is.null(x$stop_reason)) cat(x$stop_reason, "\n", sep = "")
  shown <- if (nrow(r) > 12) c(1:5, (nrow(r) - 4):nrow(r)) else seq_len(nrow(r))
  table <- r[shown, , drop = FALSE]
  for (n in setdiff(names(table), c("epoch", "samples_per_s"))) {
    digits <- if (n == "seconds") 3 else 4
    table[[n]] <- trimws(formatC(table[[n]], digits = digits, format = "fg"))
  }
  table$samples_per_s <- format(round(table$samples_per_s), big.mark = ",", scientific = FALSE)
  text <- utils::capture.output(print(table, row.names = FALSE, right = TRUE))
  if (nrow(r) > 12) text <- c(text[1:6], "   ...", text[-(1:6)])
  cat(text, sep = "\n")
  invisible(x)
}

# The quantities plotted: loss first, then each metric, each with its train_ and valid_ columns.
plotted_quantities <- function(records) {
  cols <- grep("^(train|valid)_", names(records), value = TRUE)
  unique(c("loss", sub("^(train|valid)_", "", cols)))
}

#' @export
plot.rcuda_fit_history <- function(x, ggplot = FALSE, ...) {
  if (isTRUE(ggplot)) return(plot_history_ggplot(x$records))
  r <- x$records
  quantities <- plotted_quantities(r)
  k <- length(quantities)
  # Panels side by side on a wide device, stacked on others; two columns beyond three.
  size <- grDevices::dev.size()
  grid <- if (k > 3) c(ceiling(k / 2), 2) else if (size[1] > 1.5 * size[2]) c(1, k) else c(k, 1)
  old <- graphics::par(mfrow = grid, mar = c(4, 4, 1.5, 1))
  on.exit(graphics::par(old))
  type <- if (nrow(r) == 1) "p" else "b"
  for (q in quantities) {
    sets <- intersect(paste0(c("train_", "valid_"), q), names(r))
    values <- unlist(r[sets])
    range <- range(values[is.finite(values)])
    if (!all(is.finite(range))) range <- c(0, 1)
    graphics::plot(r$epoch, r[[sets[1]]], type = type, col = 1, pch = 19, ylim = range,
                   xlab = "epoch", ylab = q, main = q, ...)
    if (length(sets) == 2) {
      graphics::lines(r$epoch, r[[sets[2]]], type = type, col = 2, pch = 17, lty = 2)
    }
    graphics::legend("topright", legend = sub("_.*", "", sets), col = seq_along(sets),
                     pch = c(19, 17)[seq_along(sets)], lty = seq_along(sets), bty = "n")
  }
  invisible(x)
}

# One facet per quantity, train and valid as colours; returns the plot (printing draws it).
plot_history_ggplot <- function(records) {
  if (!requireNamespace("ggplot2", quietly = TRUE)) {
    value_error("plot(history, ggplot = TRUE) needs the ggplot2 package; install it, or plot ",
                "with base graphics (ggplot = FALSE)")
  }
  long <- do.call(rbind, lapply(plotted_quantities(records), function(q) {
    sets <- intersect(paste0(c("train_", "valid_"), q), names(records))
    do.call(rbind, lapply(sets, function(s) {
      data.frame(epoch = records$epoch, value = records[[s]], set = sub("_.*", "", s),
                 quantity = q)
    }))
  }))
  long$quantity <- factor(long$quantity, levels = plotted_quantities(records))
  mapping <- do.call(ggplot2::aes, list(x = as.name("epoch"), y = as.name("value"),
                                        colour = as.name("set")))
  ggplot2::ggplot(long, mapping) +
    ggplot2::geom_line() +
    ggplot2::geom_point() +
    ggplot2::facet_wrap(~quantity, ncol = 1, scales = "free_y")
}
