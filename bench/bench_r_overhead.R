# Per-call overhead of rcuda from R, in microseconds, beside base R on the same data:
#   a + b         on one-element CPU tensors (target: <= 3 us), vs base R's `+`
#   a * 2         a tensor and a number
#   x$add(y)      the method form
#   torch_tensor  from a 1000-element double vector, vs base R's `data + 0` (one copy)
# Each case runs alone, in `rounds` consecutive chunks of 1e5 calls after a warm-up chunk; a chunk's
# mean includes the garbage collections its calls cause (and the finalizers of the tensors they
# drop), which is what a long R loop pays. Printed: median and minimum over the chunks, and the
# share of the time R spent collecting (gc.time()).
#   Rscript bench/bench_r_overhead.R [rounds]
suppressPackageStartupMessages(library(rcuda))

a <- torch_tensor(1)
b <- torch_tensor(2)
u <- 1
v <- 2
data <- rnorm(1000)

cases <- list(
  "rcuda a + b (1 element)" = function() a + b,
  "rcuda a * 2 (1 element)" = function() a * 2,
  "rcuda a$add(b)" = function() a$add(b),
  "rcuda torch_tensor(1000 doubles)" = function() torch_tensor(data),
  "base R u + v" = function() u + v,
  "base R data + 0 (1000 doubles)" = function() data + 0
)

args <- commandArgs(trailingOnly = TRUE)
rounds <- if (length(args)) as.integer(args[[1]]) else 7L
chunk <- 1e5
cat(sprintf("R-level overhead per call, us (each case alone: %d chunks of %g calls; R %s)\n",
            rounds, chunk, getRversion()))
for (name in names(cases)) {
  f <- cases[[name]]
  for (i in seq_len(chunk)) f()  # warm up: byte-compile, and let R's heap grow to its steady size
  us <- gc_share <- numeric(rounds)
  for (r in seq_len(rounds)) {
    gc0 <- gc.time()[[1]]
    t <- system.time(for (i in seq_len(chunk)) f())[["elapsed"]]
    us[r] <- t / chunk * 1e6
    gc_share[r] <- (gc.time()[[1]] - gc0) / t
  }
  # gc.time() counts in clock ticks: a share of a chunk shorter than 0.1 s means nothing.
  share <- if (median(us) * chunk / 1e6 >= 0.1) sprintf("%2.0f%%", 100 * median(gc_share)) else "  -"
  cat(sprintf("  %-34s median %6.2f   min %6.2f   (%s in the collector)\n", name,
              median(us), min(us), share))
}
