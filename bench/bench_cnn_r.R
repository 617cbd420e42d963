# The MNIST-example CNN (bench/mnist_net.h, bench/torch_cnn.py: conv 3x3 1->32, relu, conv 3x3
# 32->64, relu, max pool 2, dropout 0.25, flatten, linear 9216->128, relu, dropout 0.5, linear
# 128->10, log_softmax + nll_loss), batch 128, one Adam step (lr 1e-3) from R with torch for R's
# API, on one fixed batch, timed as bench_train_r.R: warm-up steps, then chunks of steps with the
# device synchronised at the end of each, the median chunk's time per step. Prints `name: value`
# lines: the step time, the peak allocated memory of the timed steps (cuda_memory_stats() on a
# GPU, the CPU allocator's peak on the CPU) and the base before them, R's collections during
# them, and the losses.
#
# With --dir DIR holding what `python3 bench/torch_cnn.py --save DIR` wrote, the model starts
# from PyTorch's initial weights and batch, and the eval-mode loss of the initial model (no
# dropout) is compared with PyTorch's. Dropout draws from each library's own generator, so the
# training losses are not compared step by step. Without --dir: torch.nn's default
# initialisation (nn_conv2d, nn_linear) from seed 0 and a random batch.
#   Rscript bench/bench_cnn_r.R [--device cuda|cpu] [--dir DIR] [--batch 128] [--steps 50]
#     [--chunks 7] [--warmup 10] [--gc NAME=VALUE,...]
# --gc NAME=VALUE,...: rcuda.gc_* options (r/README.md) set before the package loads, as
# `--gc max_live_fraction=0.4,safe_points=FALSE`.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE)[1])),
                 "bench_r_models.R"))
gc_arg(commandArgs(trailingOnly = TRUE))
suppressMessages(library(rcuda))

device <- opt("--device", if (cuda_is_available()) "cuda" else "cpu")
dir <- opt("--dir", NA)
batch <- as.integer(opt("--batch", "128"))
steps <- as.integer(opt("--steps", "50"))
chunks <- as.integer(opt("--chunks", "7"))
warmup <- as.integer(opt("--warmup", "10"))
tag <- paste0("r_mnistcnn_b", batch, "_fp32", if (device == "cpu") "_cpu" else "")
log <- function(name, value) cat(sprintf("%s_%s: %.6g\n", tag, name, value))

define_bench_models()

torch_manual_seed(0)
model <- mnist_net()
from_torch <- !is.na(dir) && file.exists(file.path(dir, "c1_weight.bin"))
read_bin <- function(name, dims, what = "double", size = 4) {
  v <- readBin(file.path(dir, paste0(name, ".bin")), what, n = prod(dims), size = size,
               endian = "little")
  if (length(dims) == 1) return(v)
  # Row-major on disk: fill R's column-major array with the dims reversed, then transpose.
  aperm(array(v, rev(dims)), rev(seq_along(dims)))
}
if (from_torch) {
  with_no_grad({
    for (n in c("c1", "c2", "f1", "f2")) {
      layer <- model[[n]]
      layer$weight$copy_(torch_tensor(read_bin(paste0(n, "_weight"), layer$weight$shape),
                                      dtype = torch_float32()))
      layer$bias$copy_(torch_tensor(read_bin(paste0(n, "_bias"), layer$bias$shape),
                                    dtype = torch_float32()))
    }
  })
  x <- torch_tensor(read_bin("x", c(batch, 1, 28, 28)), dtype = torch_float32(), device = device)
  # PyTorch's classes are 0-based int64; torch for R's targets are 1-based.
  y <- torch_tensor(read_bin("y", batch, "integer", 8) + 1L, dtype = torch_long(), device = device)
} else {
  if (!is.na(dir)) cat("bench_cnn_r: no weights in", dir, "(python3 bench/torch_cnn.py --save DIR);",
                       "random ones, no comparison\n")
  x <- torch_randn(batch, 1, 28, 28, device = device)
  y <- torch_randint(1, 11, batch, dtype = torch_long(), device = device)
}
model$to(device = device)
optimizer <- optim_adam(model$parameters, lr = 1e-3)

if (from_torch) {
  model$eval()
  ours <- as_array(with_no_grad(nnf_nll_loss(model(x), y)))
  theirs <- readBin(file.path(dir, "torch_eval_loss.bin"), "double", n = 1, size = 4,
                    endian = "little")
  log("initial_eval_loss", ours)
  log("initial_eval_loss_rel_diff_to_torch", abs(ours - theirs) / abs(theirs))
  model$train()
}

train_step <- training_step(model, optimizer, nnf_nll_loss)
step <- function() train_step(x, y)
sync <- function() if (device != "cpu") cuda_synchronize()
gc_state <- function() .Call(rcuda:::rc_gc_state)

loss <- step()
first <- as_array(loss)
for (i in seq_len(warmup - 1)) step()
sync()
if (device != "cpu") {
  cuda_reset_peak_memory_stats()
  base <- cuda_memory_stats()[["allocated_bytes.all.current"]]
} else {
  .Call(rcuda:::rc_gc_reset_cpu_peak)
  base <- gc_state()$cpu_allocated_bytes
}
before <- gc_state()
times <- time_chunks(function() loss <<- step(), steps, chunks, sync)
after <- gc_state()
peak <- if (device != "cpu") cuda_memory_stats()[["allocated_bytes.all.peak"]] else after$cpu_peak_bytes
log("step_us", median(times))
log("base_allocated_MB", base / 1e6)
log("peak_allocated_MB", peak / 1e6)
dev <- if (device == "cpu") "cpu" else "cuda"
log("young_collections", after[[paste0(dev, "_young_collections")]] - before[[paste0(dev, "_young_collections")]])
log("full_collections", after[[paste0(dev, "_full_collections")]] - before[[paste0(dev, "_full_collections")]])
log("gc_ms", (after$gc_seconds - before$gc_seconds) * 1e3)
log("steps_timed", steps * chunks)
log("loss_first", first)
log("loss_last", as_array(loss))
