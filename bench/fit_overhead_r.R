# fit()'s own cost per batch: the hand-written loop (Note [fit is the hand-written loop] in
# r/R/fit.R) and fit() over the same batches of a model whose step costs next to nothing (a
# 2 -> 1 linear layer on 4 samples, SGD, the CPU), so that what differs is fit()'s R code.
#   Rscript bench/fit_overhead_r.R time [BATCHES]      medians and minima of 21 epochs, µs a batch
#   Rscript bench/fit_overhead_r.R loop|fit|none BATCHES   one epoch, for instruction counts:
# the difference of two counts under callgrind, BATCHES 100 and 300, over 200 is the cost of a
# batch, free of the VM's timing noise (none: the setup alone):
#   valgrind --tool=callgrind --trace-children=yes R --vanilla --slave \
#     -f bench/fit_overhead_r.R --args fit 300
suppressMessages(library(rcuda))

args <- commandArgs(trailingOnly = TRUE)
what <- if (length(args)) args[1] else "time"
n_batches <- as.integer(if (length(args) > 1) args[2] else 2000)
torch_manual_seed(1)
batches <- lapply(seq_len(n_batches), function(i) list(x = torch_randn(4, 2), y = torch_randn(4, 1)))
model <- nn_linear(2, 1)
optimizer <- optim_sgd(model$parameters, lr = 1e-3)
loss_fn <- nnf_mse_loss

epochs <- list(
  loop = function() {
    for (b in batches) {
      optimizer$zero_grad()
      loss <- loss_fn(model(b$x), b$y)
      loss$backward()
      optimizer$step()
    }
  },
  fit = function() fit(model, batches, loss_fn, optimizer, epochs = 1, verbose = FALSE),
  none = function() NULL
)

if (what == "time") {
  seconds <- function(f) {
    start <- proc.time()[["elapsed"]]
    f()
    proc.time()[["elapsed"]] - start
  }
  for (f in epochs) f()  # warm-up
  times <- replicate(21, vapply(epochs[c("loop", "fit")], seconds, 0)) / n_batches * 1e6
  for (k in rownames(times)) {
    cat(sprintf("%s: median %.1f us a batch, min %.1f\n", k, median(times[k, ]), min(times[k, ])))
  }
} else {
  if (is.null(epochs[[what]])) stop("fit_overhead_r: unknown case ", what, " (time, loop, fit, none)")
  epochs[[what]]()
}
