# The memory and time that R's collections cost a training loop (Note [GC pressure] in
# r/src/handles.cpp), over settings of the rcuda.gc_* options. For each model and setting a fresh
# Rscript process sets the options, loads rcuda and runs a training loop on random weights and
# a random batch: `mlp`, bench_train_r.R's (784-512-512-10, batch 256, Adam), or `cnn`,
# bench_cnn_r.R's (the MNIST-example CNN, batch 128, Adam): 10 warm-up steps, then 7 chunks of
# 50 steps (the CPU: 3 of 20), the device synchronised after each chunk. Reported
# per setting: the median chunk's time per step, the peak allocated bytes over the timed steps
# (the CUDA pool's statistics, or the CPU allocator's), what stays allocated after a full
# collection at the end (the live bytes: parameters, optimizer state, gradients, data), the
# garbage at the peak: the peak above that of the `reference` row (rcuda's collections off and
# gc(full = FALSE) before every step, so that no step's leftovers survive into the next: the
# loop's own peak, gradients and temporaries included) as a share of the peak, and R's
# collections (counted by rcuda) with their time.
#   Rscript bench/bench_r_memory.R [--device cuda|cpu] [--models mlp,cnn] [--settings NAME,...]
#     [--chunks 7] [--steps 50] [--old-lib DIR]
# --old-lib DIR adds a row for the rcuda installed in the R library DIR (an earlier version of
# the package, say), run with its own defaults.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE)[1])),
                 "bench_r_models.R"))

# name = the options set before library(rcuda).
settings <- list(
  reference = list(rcuda.gc_live_fraction = Inf),
  default = list(),
  no_release = list(rcuda.release_unreferenced = FALSE),
  no_safe_points = list(rcuda.gc_safe_points = FALSE),
  max_0.2 = list(rcuda.gc_max_live_fraction = 0.2),
  max_0.4 = list(rcuda.gc_max_live_fraction = 0.4),
  max_1 = list(rcuda.gc_max_live_fraction = 1),
  live_0.05 = list(rcuda.gc_live_fraction = 0.05, rcuda.gc_max_live_fraction = 0.05),
  live_0.2 = list(rcuda.gc_live_fraction = 0.2, rcuda.gc_max_live_fraction = 0.2),
  floor16 = list(rcuda.gc_min_bytes = 16 * 2^20),
  # The earlier rule's state once its time rule had scaled the 16 MiB floor by 4, without the
  # safe points it lacked (its full-collection rule differs: use --old-lib for that rule itself).
  floor64_no_safe_points = list(rcuda.gc_min_bytes = 64 * 2^20, rcuda.gc_safe_points = FALSE)
)

child <- opt("--child", NA)
if (is.na(child)) {
  device <- opt("--device", "cpu")
  models <- strsplit(opt("--models", "mlp,cnn"), ",")[[1]]
  names_run <- strsplit(opt("--settings", paste(names(settings), collapse = ",")), ",")[[1]]
  old_lib <- opt("--old-lib", NA)
  rows <- c(names_run, if (!is.na(old_lib)) "old_lib")
  rscript <- file.path(R.home("bin"), "Rscript")
  script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  for (model in models) {
  pass <- c("--device", device, "--model", model)
  if (!is.na(opt("--chunks", NA))) pass <- c(pass, "--chunks", opt("--chunks", NA))
  if (!is.na(opt("--steps", NA))) pass <- c(pass, "--steps", opt("--steps", NA))
  cat(sprintf("\n| %s, %s: setting | step us | peak MB | live MB | garbage at peak, MB (%% of peak) | young / full collections | gc ms | tensors released |\n", model, device))
  cat("|---|---|---|---|---|---|---|---|\n")
  reference <- NA
  for (name in rows) {
    env <- if (name == "old_lib") paste0("R_LIBS=", old_lib) else character()
    out <- system2(rscript, c(script, "--child", name, pass), stdout = TRUE, stderr = TRUE,
                   env = env)
    values <- regmatches(out, regexec("^([a-z_]+): (.*)$", out))
    values <- values[lengths(values) == 3]
    v <- setNames(as.numeric(vapply(values, `[`, "", 3)), vapply(values, `[`, "", 2))
    if (!all(c("step_us", "peak_bytes", "live_bytes") %in% names(v))) {
      cat(sprintf("| %s | failed: %s |\n", name, paste(tail(out, 3), collapse = " ")))
      next
    }
    if (name == "reference") reference <- v[["peak_bytes"]]
    garbage <- v[["peak_bytes"]] - reference
    released <- if ("released" %in% names(v)) v[["released"]] else 0
    cat(sprintf("| %s | %.0f | %.1f | %.1f | %.1f (%.0f%%) | %.0f / %.0f | %.0f | %.0f |\n", name,
                v[["step_us"]], v[["peak_bytes"]] / 1e6, v[["live_bytes"]] / 1e6, garbage / 1e6,
                100 * garbage / v[["peak_bytes"]], v[["young"]], v[["full"]], v[["gc_ms"]],
                released))
  }
  }
  quit(save = "no")
}

if (child != "old_lib") options(settings[[child]])
suppressMessages(library(rcuda))
device <- opt("--device", "cpu")
on_gpu <- device != "cpu"
model_name <- opt("--model", "mlp")
slow <- !on_gpu
chunks <- as.integer(opt("--chunks", if (slow) "3" else "7"))
steps <- as.integer(opt("--steps", if (slow) "20" else "50"))
log <- function(name, value) cat(sprintf("%s: %.10g\n", name, value))

define_bench_models()
torch_manual_seed(0)
if (model_name == "mlp") {
  model <- mlp()
  x <- torch_randn(256, 784, device = device)
  y <- torch_randint(1, 11, 256, dtype = torch_long(), device = device)
  loss_fn <- nnf_cross_entropy
} else {
  model <- mnist_net()
  x <- torch_randn(128, 1, 28, 28, device = device)
  y <- torch_randint(1, 11, 128, dtype = torch_long(), device = device)
  loss_fn <- nnf_nll_loss
}
model$to(device = device)
opt_adam <- optim_adam(model$parameters, lr = 1e-3)
step <- training_step(model, opt_adam, loss_fn)
sync <- function() if (on_gpu) cuda_synchronize()
state <- function() .Call(rcuda:::rc_gc_state)
allocated <- function() {
  if (on_gpu) cuda_memory_stats()[["allocated_bytes.all.current"]] else state()$cpu_allocated_bytes
}
# An earlier package may lack the counters; those read as 0.
counter <- function(s, name) if (is.null(s[[name]])) 0 else s[[name]]
dev <- if (on_gpu) "cuda" else "cpu"

for (i in 1:(if (slow) 3 else 10)) step(x, y)
sync()
# An earlier package has no CPU peak to reset or read: its row takes the largest of the
# allocated bytes read after each step instead (a step's activations below the true peak).
if (on_gpu) cuda_reset_peak_memory_stats() else try(.Call(rcuda:::rc_gc_reset_cpu_peak), silent = TRUE)
before <- state()
sampled <- 0
times <- time_chunks(function() {
  if (child == "reference") gc(FALSE, FALSE, FALSE)
  step(x, y)
  sampled <<- max(sampled, allocated())
}, steps, chunks, sync)
after <- state()
peak <- if (on_gpu) cuda_memory_stats()[["allocated_bytes.all.peak"]] else after$cpu_peak_bytes
if (is.null(peak)) peak <- sampled
invisible(gc())
log("step_us", median(times))
log("peak_bytes", peak)
log("live_bytes", allocated())
log("young", counter(after, paste0(dev, "_young_collections")) -
      counter(before, paste0(dev, "_young_collections")))
log("full", counter(after, paste0(dev, "_full_collections")) -
      counter(before, paste0(dev, "_full_collections")))
log("gc_ms", 1e3 * (counter(after, "gc_seconds") - counter(before, "gc_seconds")))
log("released", counter(after, paste0(dev, "_released_tensors")) -
      counter(before, paste0(dev, "_released_tensors")))
