# dataloader(num_workers = n) against n = 0, beside PyTorch's DataLoader (bench/torch_dataloader_workers.py
# runs the same dataset in Python): samples per second over one epoch, after a warm-up epoch.
# Each sample waits `--ms` milliseconds (a file read or a decode, the work workers are for), then
# returns a 3x32x32 float tensor and a label; batches of 32; workers 0, 1, 2, 4.
#   Rscript bench/dataloader_workers_r.R [--samples 512] [--ms 2] [--workers 0,1,2,4]
suppressMessages(library(rcuda))
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) {
  i <- match(paste0("--", name), args)
  if (is.na(i)) default else args[[i + 1]]
}
samples <- as.integer(opt("samples", "512"))
ms <- as.numeric(opt("ms", "2"))
workers <- as.integer(strsplit(opt("workers", "0,1,2,4"), ",")[[1]])

slow_images <- dataset(
  initialize = function(n, ms) { self$n <- n; self$ms <- ms },
  .getitem = function(i) {
    Sys.sleep(self$ms / 1000)
    list(x = torch_randn(3, 32, 32), y = i %% 10L)
  },
  .length = function() self$n
)

epoch_seconds <- function(dl) {
  started <- Sys.time()
  n <- 0
  loop(for (b in dl) n <- n + b$x$size(1))
  stopifnot(n == samples)
  as.numeric(Sys.time() - started, units = "secs")
}

for (w in workers) {
  dl <- dataloader(slow_images(samples, ms), batch_size = 32, shuffle = TRUE, num_workers = w)
  epoch_seconds(dl)  # warm-up: the first epoch's workers load rcuda like every later one
  s <- epoch_seconds(dl)
  cat(sprintf("rcuda dataloader workers=%d samples_per_s=%.0f epoch_s=%.3f\n", w, samples / s, s))
}
