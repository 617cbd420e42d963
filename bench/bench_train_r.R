# The MLP 784-512-512-10, batch 256, one Adam step (zero_grad, forward, cross-entropy, backward,
# step) from R with torch for R's API, beside bench_train (C++) and bench/torch_train_mlp.py
# (PyTorch), on the same initial weights and batches. Prints `name: value` lines: the step time
# (chunks of 50 steps after 10 warm-up steps, the device synchronised at the end of each chunk,
# the median of 7 chunks; --steps and --chunks change both: R's clock counts milliseconds, so
# longer chunks read the step more finely), the loss curve against PyTorch's, the peak allocated GPU memory of
# the loop, and whether allocated memory stays flat over many steps.
#   Rscript bench/bench_train_r.R DIR [--device cuda|cpu] [--flat-steps 10000] [--steps 50]
#       [--chunks 7] [--gc NAME=VALUE,...]
# --gc NAME=VALUE,...: rcuda.gc_* options (r/README.md) set before the package loads, as
# `--gc max_live_fraction=0.4,safe_points=FALSE`.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE)[1])),
                 "bench_r_models.R"))
gc_arg(commandArgs(trailingOnly = TRUE))
suppressMessages(library(rcuda))

args <- commandArgs(trailingOnly = TRUE)
dir <- args[1]
device <- opt("--device", "cuda")
flat_steps <- as.integer(opt("--flat-steps", "10000"))
steps <- as.integer(opt("--steps", "50"))
chunks <- as.integer(opt("--chunks", "7"))
log <- function(name, value) cat(sprintf("%s: %.6g\n", name, value))

read_bin <- function(name, dims, what = "double", size = 4) {
  path <- file.path(dir, paste0(name, ".bin"))
  if (!file.exists(path)) stop("bench_train_r: cannot read ", path, " (run bench/torch_train_mlp.py first)")
  v <- readBin(path, what, n = prod(dims), size = size, endian = "little")
  # Row-major on disk: fill R's column-major array with the dims reversed, then transpose.
  if (length(dims) == 1) return(v)
  aperm(array(v, rev(dims)), rev(seq_along(dims)))
}

define_bench_models()

model <- mlp()
with_no_grad({
  for (i in 1:3) {
    layer <- model[[paste0("fc", i)]]
    w <- read_bin(paste0("w", i), dim(as_array(layer$weight)))
    b <- read_bin(paste0("b", i), length(as_array(layer$bias)))
    layer$weight$copy_(torch_tensor(w, dtype = torch_float32()))
    layer$bias$copy_(torch_tensor(b, dtype = torch_float32()))
  }
})
model$to(device = device)
xs <- torch_tensor(read_bin("x", c(20, 256, 784)), dtype = torch_float32(), device = device)
# PyTorch's class indices are 0-based int64; torch for R's targets are 1-based.
ys <- torch_tensor(read_bin("y", c(20, 256), "integer", 8) + 1L, dtype = torch_long(), device = device)
opt_adam <- optim_adam(model$parameters, lr = 1e-3)

step <- training_step(model, opt_adam, nnf_cross_entropy)

# The loss curve over 200 steps against PyTorch's float32 curve.
losses <- numeric(200)
for (s in 1:200) {
  b <- (s - 1) %% 20 + 1
  losses[s] <- as_array(step(xs[b, , ], ys[b, ]))
}
theirs <- readBin(file.path(dir, "torch_losses.bin"), "double", n = 200, size = 4, endian = "little")
rel <- abs(losses - theirs) / abs(theirs)
log(paste0("r_loss_curve_float32_", device, "_max_rel_diff_steps_10"), max(rel[1:10]))
log(paste0("r_loss_curve_float32_", device, "_max_rel_diff_steps_200"), max(rel))

sync <- function() if (device == "cuda") cuda_synchronize()
x <- xs[1, , ]$contiguous()
y <- ys[1, ]$contiguous()
for (i in 1:10) step(x, y)
sync()
if (device == "cuda") {
  cuda_reset_peak_memory_stats()
  base <- cuda_memory_stats()[["allocated_bytes.all.current"]]
}
times <- time_chunks(function() step(x, y), steps, chunks, sync)
log(paste0("r_mlp_b256_adam_", device, "_step_us"), median(times))

if (device == "cuda") {
  # Peak during the timed steps above what the model, its optimizer state and the data held.
  stats <- cuda_memory_stats()
  log("r_mlp_b256_step_peak_above_base_MB", (stats[["allocated_bytes.all.peak"]] - base) / 1e6)
  log("r_mlp_b256_base_allocated_MB", base / 1e6)
  before <- stats[["allocated_bytes.all.current"]]
  for (i in seq_len(flat_steps)) step(x, y)
  sync()
  after <- cuda_memory_stats()[["allocated_bytes.all.current"]]
  log(paste0("r_mlp_b256_allocated_MB_before_", flat_steps, "_steps"), before / 1e6)
  log(paste0("r_mlp_b256_allocated_MB_after_", flat_steps, "_steps"), after / 1e6)
}
