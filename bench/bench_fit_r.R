# fit() (r/R/fit.R) against the loop it promises to be (Note [fit is the hand-written loop]):
# the same model, initial weights, batches and seed trained by each, reporting samples/s of each,
# the ratio (target: fit() within 5% of the loop's throughput) and whether the parameters after
# training are identical() (and whether the loop's own are, run twice).
#
# Models: `cnn`, the network of examples/train_fashion_mnist.R (two 3x3 convolutions with
# pooling, dropout, two linear layers), and `mlp`, 784-512-512-10, whose short step shows fit()'s
# own per-batch cost the most; `--models tiny` adds 784-10, whose step is short enough on a CPU to
# show that cost there. Data: Fashion-MNIST's training images when found
# ($RCUDA_FASHION_MNIST, else Debian's /usr/share/datasets/fashion-mnist), else random images
# and labels of its shape; the first --samples of them in batches of 128, already on the device
# (`--loader dataloader`: through rcuda's dataloader() from host tensors instead, shuffled with
# a seeded generator, for both). Each epoch of each is timed with the device synchronised at
# its end; one warm-up epoch each, then --reps epochs alternating fit() and the loop, the
# median epoch of each. fit() runs with verbose = FALSE; `fit_acc` rows add metric_accuracy().
# Where a gap comes from: per kind, the median epoch's host time (before the closing
# synchronisation), and over all timed epochs rcuda's collections of R's garbage and their time.
#   Rscript bench/bench_fit_r.R [--device cuda|cpu] [--samples N] [--reps 5] [--models cnn,mlp]
#     [--loader list|dataloader]
suppressMessages(library(rcuda))

args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) {
  i <- match(name, args)
  if (is.na(i)) default else args[i + 1]
}
device <- opt("--device", if (cuda_is_available()) "cuda" else "cpu")
on_gpu <- device != "cpu"
samples <- as.integer(opt("--samples", if (on_gpu) "60000" else "2048"))
reps <- as.integer(opt("--reps", "5"))
models <- strsplit(opt("--models", "cnn,mlp"), ",")[[1]]
loader <- opt("--loader", "list")
batch_size <- 128L
log <- function(name, value) cat(sprintf("%s: %.6g\n", name, value))
sync <- function() if (on_gpu) cuda_synchronize()

root <- Sys.getenv("RCUDA_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
real <- file.exists(file.path(root, "train-images-idx3-ubyte.gz")) ||
  file.exists(file.path(root, "train-images-idx3-ubyte"))
if (real) {
  ds <- fashion_mnist_dataset(root, train = TRUE, transform = transform_to_tensor)
  samples <- min(samples, length(ds))
  all <- ds$.getbatch(seq_len(samples))
  images <- all$x
  labels <- all$y
} else {
  torch_manual_seed(123)
  images <- torch_rand(samples, 1, 28, 28)
  labels <- torch_randint(1, 11, samples, dtype = torch_long())
}
cat(sprintf("bench_fit_r: %s, %d samples, batch %d, device %s, loader %s\n",
            if (real) paste("Fashion-MNIST from", root) else "random data of Fashion-MNIST's shape",
            samples, batch_size, device, loader))

starts <- seq(1L, samples, by = batch_size)
batches <- lapply(starts, function(s) {
  i <- s:min(samples, s + batch_size - 1L)
  list(x = images[i, , , ]$to(device = device), y = labels[i]$to(device = device))
})
make_data <- if (loader == "list") {
  function() batches
} else {
  function() {
    dataloader(tensor_dataset(images, labels), batch_size = batch_size, shuffle = TRUE,
               generator = 7, pin_memory = on_gpu)
  }
}
# The dataloader's batches are list(x, y) on the host; both loops move them to the device.
to_dev <- function(b) list(b[[1]]$to(device = device), b[[2]]$to(device = device))

cnn <- nn_module(
  initialize = function() {
    self$conv1 <- nn_conv2d(1, 32, kernel_size = 3, padding = 1)
    self$conv2 <- nn_conv2d(32, 64, kernel_size = 3, padding = 1)
    self$pool <- nn_max_pool2d(2)
    self$dropout1 <- nn_dropout(0.25)
    self$fc1 <- nn_linear(64 * 7 * 7, 128)
    self$dropout2 <- nn_dropout(0.5)
    self$fc2 <- nn_linear(128, 10)
  },
  forward = function(x) {
    x <- self$pool(nnf_relu(self$conv1(x)))
    x <- self$pool(nnf_relu(self$conv2(x)))
    x <- torch_flatten(self$dropout1(x), start_dim = 2)
    x <- self$dropout2(nnf_relu(self$fc1(x)))
    self$fc2(x)
  }
)
mlp <- nn_module(
  initialize = function() {
    self$fc1 <- nn_linear(784, 512)
    self$fc2 <- nn_linear(512, 512)
    self$fc3 <- nn_linear(512, 10)
  },
  forward = function(x) {
    x <- torch_flatten(x, start_dim = 2)
    x <- nnf_relu(self$fc1(x))
    x <- nnf_relu(self$fc2(x))
    self$fc3(x)
  }
)

tiny <- nn_module(
  initialize = function() self$fc <- nn_linear(784, 10),
  forward = function(x) self$fc(torch_flatten(x, start_dim = 2))
)

# The loop of Note [fit is the hand-written loop], over the same data.
hand_epoch <- function(model, optimizer, loss_fn, data) {
  model$train()
  if (loader == "list") {
    for (b in data) {
      optimizer$zero_grad()
      loss <- loss_fn(model(b$x), b$y)
      loss$backward()
      optimizer$step()
    }
  } else {
    loop(for (batch in data) {
      b <- to_dev(batch)
      optimizer$zero_grad()
      loss <- loss_fn(model(b[[1]]), b[[2]])
      loss$backward()
      optimizer$step()
    })
  }
}

for (name in models) {
  torch_manual_seed(1)
  net <- switch(name, cnn = cnn(), mlp = mlp(), tiny = tiny(),
                stop("bench_fit_r: unknown model ", name, " (cnn, mlp, tiny)"))
  net$to(device = device)
  init <- lapply(net$state_dict(), function(t) t$clone())
  # A fresh model from the same initial weights, its optimizer, and the seed.
  fresh <- function() {
    net$load_state_dict(init)
    torch_manual_seed(2)
    list(model = net, optimizer = optim_adam(net$parameters, lr = 1e-3))
  }
  loss_fn <- nn_cross_entropy_loss()
  run <- function(kind) {
    s <- fresh()
    data <- make_data()
    # Each epoch starts from a collected heap, so that R's collections of what the previous
    # epoch (of another kind) left are not charged to this one.
    invisible(gc())
    sync()
    t0 <- proc.time()[["elapsed"]]
    if (kind == "loop") {
      hand_epoch(s$model, s$optimizer, loss_fn, data)
    } else {
      fit(s$model, data, loss_fn, s$optimizer, epochs = 1, verbose = FALSE,
          metrics = if (kind == "fit_acc") list(metric_accuracy()) else list(),
          batch_to = if (loader == "list") NULL else function(b, device) to_dev(b))
    }
    host <- proc.time()[["elapsed"]] - t0
    sync()
    seconds <- proc.time()[["elapsed"]] - t0
    list(seconds = seconds, host = host, params = lapply(s$model$parameters, as_array))
  }
  gc_state <- function() {
    g <- .Call(rcuda:::rc_gc_state)
    n <- function(name) if (is.null(g[[name]])) 0 else g[[name]]
    dev <- if (on_gpu) "cuda" else "cpu"
    c(collections = n(paste0(dev, "_young_collections")) + n(paste0(dev, "_full_collections")),
      gc_s = n("gc_seconds"), r_gc_s = sum(gc.time()[1:2]))
  }
  kinds <- c("loop", "fit", "fit_acc")
  first <- lapply(setNames(kinds, kinds), run)  # warm-up, and the parameters compared
  log(paste0("fit_", name, "_params_identical_to_loop"),
      identical(first$fit$params, first$loop$params) &&
        identical(first$fit_acc$params, first$loop$params))
  # Whether the loop itself repeats bit for bit: where it does not (a device whose kernels sum
  # in a varying order), fit() cannot be identical to it either.
  log(paste0("fit_", name, "_loop_identical_to_itself"),
      identical(run("loop")$params, first$loop$params))
  times <- hosts <- matrix(0, reps, length(kinds), dimnames = list(NULL, kinds))
  gcs <- matrix(0, 3, length(kinds), dimnames = list(c("collections", "gc_s", "r_gc_s"), kinds))
  for (r in seq_len(reps)) {
    for (k in kinds) {
      g0 <- gc_state()
      e <- run(k)
      gcs[, k] <- gcs[, k] + gc_state() - g0
      times[r, k] <- e$seconds
      hosts[r, k] <- e$host
    }
  }
  rate <- samples / apply(times, 2, median)
  n_batches <- length(starts)
  for (k in kinds) {
    log(paste0("fit_", name, "_", k, "_us_per_batch"), 1e6 * median(times[, k]) / n_batches)
    log(paste0("fit_", name, "_", k, "_host_us_per_batch"), 1e6 * median(hosts[, k]) / n_batches)
    log(paste0("fit_", name, "_", k, "_collections_per_epoch"), gcs["collections", k] / reps)
    log(paste0("fit_", name, "_", k, "_gc_us_per_batch"), 1e6 * gcs["gc_s", k] / reps / n_batches)
    log(paste0("fit_", name, "_", k, "_r_gc_us_per_batch"), 1e6 * gcs["r_gc_s", k] / reps / n_batches)
  }
  log(paste0("fit_", name, "_loop_samples_per_s"), rate[["loop"]])
  log(paste0("fit_", name, "_fit_samples_per_s"), rate[["fit"]])
  log(paste0("fit_", name, "_fit_acc_samples_per_s"), rate[["fit_acc"]])
  log(paste0("fit_", name, "_fit_over_loop"), rate[["fit"]] / rate[["loop"]])
  log(paste0("fit_", name, "_fit_acc_over_loop"), rate[["fit_acc"]] / rate[["loop"]])
}
