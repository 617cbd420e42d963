# What the R benchmarks share (bench_train_r.R, bench_cnn_r.R, bench_r_memory.R): the command
# line's options, the --gc option (rcuda.gc_* options set before the package loads), the two
# models, the MLP 784-512-512-10 of bench/torch_train_mlp.py and the MNIST-example CNN of
# bench/torch_cnn.py, the training step they time and how they time it.
# Sourced by path from the script's own folder:
#   source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE)[1])),
#                    "bench_r_models.R"))

# The value after `name` on the command line, or `default`.
opt <- function(name, default, args = commandArgs(trailingOnly = TRUE)) {
  i <- match(name, args)
  if (is.na(i)) default else args[i + 1]
}

# One training step as torch for R's loops write it: a function(x, y) returning the loss.
training_step <- function(model, optimizer, loss_fn) {
  function(x, y) {
    optimizer$zero_grad(set_to_none = TRUE)
    loss <- loss_fn(model(x), y)
    loss$backward()
    optimizer$step()
    loss
  }
}

# Microseconds a step in each of `chunks` chunks of `steps` calls of run_step(), the device
# synchronised (sync()) at the end of each chunk. R's clock counts milliseconds: a chunk should
# last tens of them.
time_chunks <- function(run_step, steps, chunks, sync) {
  vapply(seq_len(chunks), function(c) {
    t0 <- proc.time()[["elapsed"]]
    for (i in seq_len(steps)) run_step()
    sync()
    (proc.time()[["elapsed"]] - t0) / steps * 1e6
  }, numeric(1))
}

# --gc NAME=VALUE,...: as `--gc max_live_fraction=0.4,safe_points=FALSE`.
gc_arg <- function(args) {
  i <- match("--gc", args)
  if (is.na(i)) return(invisible(NULL))
  for (kv in strsplit(args[i + 1], ",")[[1]]) {
    parts <- strsplit(kv, "=")[[1]]
    value <- if (parts[2] %in% c("TRUE", "FALSE")) as.logical(parts[2]) else as.numeric(parts[2])
    options(structure(list(value), names = paste0("rcuda.gc_", parts[1])))
  }
}

# The models need the package: defined once it is loaded.
define_bench_models <- function(env = parent.frame()) {
  env$mlp <- nn_module(
    initialize = function() {
      self$fc1 <- nn_linear(784, 512)
      self$fc2 <- nn_linear(512, 512)
      self$fc3 <- nn_linear(512, 10)
    },
    forward = function(x) {
      x <- nnf_relu(self$fc1(x))
      x <- nnf_relu(self$fc2(x))
      self$fc3(x)
    }
  )
  env$mnist_net <- nn_module(
    initialize = function() {
      self$c1 <- nn_conv2d(1, 32, 3)
      self$c2 <- nn_conv2d(32, 64, 3)
      self$f1 <- nn_linear(9216, 128)
      self$f2 <- nn_linear(128, 10)
    },
    forward = function(x) {
      x <- nnf_relu(self$c1(x))
      x <- nnf_max_pool2d(nnf_relu(self$c2(x)), 2)
      x <- torch_flatten(nnf_dropout(x, 0.25, training = self$training), start_dim = 2)
      x <- nnf_dropout(nnf_relu(self$f1(x)), 0.5, training = self$training)
      nnf_log_softmax(self$f2(x), dim = 2)
    }
  )
}
