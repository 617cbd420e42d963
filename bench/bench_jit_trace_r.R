# Host time per call of the MNIST-example CNN (conv 32, conv 64, max pool, dropout, linear
# 9216-128-10) as an R module and as its trace (jit_trace), on the CPU and, when there is one, the
# GPU; and whether the trace's outputs equal the module's (bitwise on the CPU, within float32
# rounding on the GPU).
#   R_LIBS=build/r-lib Rscript bench/bench_jit_trace_r.R [calls]
# Host time: the device is synchronised before each call and the call alone is timed, so no call
# waits for an earlier one's kernels (batch 1). Median of 5 rounds. bench_trace (C++) times the
# same network called directly from C++: the floor under both.
suppressMessages(library(rcuda))
args <- commandArgs(trailingOnly = TRUE)
calls <- if (length(args)) as.integer(args[[1]]) else 200L

net <- nn_module(
  initialize = function() {
    self$conv1 <- nn_conv2d(1, 32, 3, 1)
    self$conv2 <- nn_conv2d(32, 64, 3, 1)
    self$dropout1 <- nn_dropout(0.25)
    self$dropout2 <- nn_dropout(0.5)
    self$fc1 <- nn_linear(9216, 128)
    self$fc2 <- nn_linear(128, 10)
  },
  forward = function(x) {
    x <- nnf_relu(self$conv1(x))
    x <- nnf_relu(self$conv2(x))
    x <- nnf_max_pool2d(x, 2)
    x <- self$dropout1(x)
    x <- torch_flatten(x, start_dim = 2)
    x <- nnf_relu(self$fc1(x))
    x <- self$dropout2(x)
    nnf_log_softmax(self$fc2(x), dim = 2)
  }
)

time_calls <- function(f, x, device) {
  sync <- if (device == "cuda") function() cuda_synchronize() else function() NULL
  for (i in 1:10) f(x)
  sync()
  rounds <- vapply(1:5, function(r) {
    total <- 0
    with_no_grad(for (i in seq_len(calls)) {
      sync()
      start <- Sys.time()
      f(x)
      total <- total + as.numeric(Sys.time() - start, units = "secs")
    })
    total / calls * 1e6
  }, numeric(1))
  stats::median(rounds)
}

devices <- c("cpu", if (cuda_is_available()) "cuda")
cat(sprintf("bench_jit_trace_r: %s, %d calls a round, batch 1, %s\n", format(Sys.time()), calls,
            if (cuda_is_available()) cuda_get_device_name() else "no GPU"))
cat(paste0("| device | R module us/call | traced us/call | traced / module | outputs | traced as a ",
           "CUDA graph (cuda_graph_step) us/call |\n|---|---|---|---|---|---|\n"))
for (device in devices) {
  torch_manual_seed(1)
  model <- net()
  model$to(device = device)
  model$eval()
  x <- torch_randn(1, 1, 28, 28, device = device)
  traced <- jit_trace(model, x)
  check <- torch_randn(64, 1, 28, 28, device = device)
  a <- as.array(traced(check)$cpu())
  b <- as.array(model(check)$cpu())
  agree <- if (device == "cpu") {
    if (identical(a, b)) "bitwise equal" else sprintf("DIFFER by %.3g", max(abs(a - b)))
  } else {
    sprintf("max |diff| %.2g (of max |y| %.2g)", max(abs(a - b)), max(abs(b)))
  }
  module_us <- time_calls(model, x, device)
  traced_us <- time_calls(traced, x, device)
  # The traced graph captured once and replayed as one CUDA graph: a call copies its input in
  # and launches the graph.
  graph_us <- if (device == "cuda") {
    step <- with_no_grad(cuda_graph_step(traced, x))
    x2 <- torch_randn(1, 1, 28, 28, device = device)
    same <- identical(as.array(step(x2)$cpu()), as.array(traced(x2)$cpu()))
    sprintf("%.1f (%s)", time_calls(step, x, device),
            if (same) "equal to the traced call" else "DIFFERS from the traced call")
  } else "-"
  cat(sprintf("| %s | %.1f | %.1f | %.2f | %s | %s |\n", device, module_us, traced_us,
              traced_us / module_us, agree, graph_us))
}
