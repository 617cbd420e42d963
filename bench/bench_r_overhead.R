# Per-call overhead of rcuda from R, in microseconds, beside base R on the same data:
#   a + b         on one-element CPU tensors (target: <= 3 us), vs base R's `+`
#   x$add(y)      the method form
#   torch_tensor  from a 1000-element double vector, vs base R's as.numeric copy
# Uses bench::mark when installed, else a timed loop of 1e5 calls.
#   Rscript bench/bench_r_overhead.R
suppressPackageStartupMessages(library(rcuda))

a <- torch_tensor(1)
b <- torch_tensor(2)
u <- 1
v <- 2
data <- rnorm(1000)

cases <- list(
  "rcuda a + b (1 element)" = function() a + b,
  "rcuda a$add(b)" = function() a$add(b),
  "rcuda torch_tensor(1000 doubles)" = function() torch_tensor(data),
  "base R u + v" = function() u + v,
  "base R data + 0 (1000 doubles)" = function() data + 0
)

per_call_us <- function(f, n = 1e5) {
  for (i in seq_len(1000)) f()  # warm up
  gc()
  t <- system.time(for (i in seq_len(n)) f())[["elapsed"]]
  t / n * 1e6
}

if (requireNamespace("bench", quietly = TRUE)) {
  res <- lapply(cases, function(f) bench::mark(f(), iterations = 1e5, check = FALSE))
  us <- vapply(res, function(r) as.numeric(r$median) * 1e6, numeric(1))
  how <- "bench::mark median"
} else {
  us <- vapply(cases, per_call_us, numeric(1))
  how <- "mean of 1e5 calls (system.time)"
}
cat(sprintf("R-level overhead per call (%s)\n", how))
cat(sprintf("  %-36s %8.2f us\n", names(us), us), sep = "")
