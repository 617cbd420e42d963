# Mixed precision's accuracy: the MLP and the MNIST-example CNN trained on Fashion-MNIST in
# float32 and with bfloat16 autocast (float32 parameters, the forward and loss under
# with_autocast()), from the same initial weights, batches and seed; the test accuracy of each
# (evaluated as trained: the autocast model under autocast). The target: within 0.5 points.
#
#   Rscript bench/autocast_accuracy.R
#
# Environment (all optional): RCUDA_DEVICE (cuda when a GPU is there), RCUDA_FASHION_MNIST (the
# idx folder; Debian's dataset-fashion-mnist by default), RCUDA_TRAIN_SAMPLES (default 60000 on a
# GPU, 12000 on a CPU), RCUDA_EPOCHS (default 5 on a GPU, 2 on a CPU), RCUDA_MODELS ("mlp,cnn").
# Prints `name: value` lines.
library(rcuda)

env <- function(name, default) {
  value <- Sys.getenv(name)
  if (nzchar(value)) value else default
}
device <- env("RCUDA_DEVICE", if (cuda_is_available()) "cuda" else "cpu")
on_gpu <- device != "cpu"
root <- env("RCUDA_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
epochs <- as.integer(env("RCUDA_EPOCHS", if (on_gpu) "5" else "2"))
samples <- as.integer(env("RCUDA_TRAIN_SAMPLES", if (on_gpu) "60000" else "12000"))
models <- strsplit(env("RCUDA_MODELS", "mlp,cnn"), ",")[[1]]

train_ds <- fashion_mnist_dataset(root, train = TRUE, transform = transform_to_tensor)
test_ds <- fashion_mnist_dataset(root, train = FALSE, transform = transform_to_tensor)
if (samples < length(train_ds)) train_ds <- dataset_subset(train_ds, seq_len(samples))

mlp <- nn_module(
  initialize = function() {
    self$net <- nn_sequential(nn_flatten(), nn_linear(784, 512), nn_relu(), nn_linear(512, 512),
                              nn_relu(), nn_linear(512, 10))
  },
  forward = function(x) self$net(x)
)
cnn <- nn_module(
  initialize = function() {
    self$conv1 <- nn_conv2d(1, 32, 3)
    self$conv2 <- nn_conv2d(32, 64, 3)
    self$dropout1 <- nn_dropout(0.25)
    self$fc1 <- nn_linear(9216, 128)
    self$dropout2 <- nn_dropout(0.5)
    self$fc2 <- nn_linear(128, 10)
  },
  forward = function(x) {
    x <- nnf_max_pool2d(nnf_relu(self$conv2(nnf_relu(self$conv1(x)))), 2)
    x <- torch_flatten(self$dropout1(x), start_dim = 2)
    self$fc2(self$dropout2(nnf_relu(self$fc1(x))))
  }
)

# Trains a fresh model (seed 1) on the same batch order (seed 2), with or without autocast;
# returns the test accuracy.
run <- function(make, autocast) {
  torch_manual_seed(1)
  model <- make()
  model$to(device = device)
  opt <- optim_adam(model$parameters, lr = 1e-3)
  torch_manual_seed(2)
  train_dl <- dataloader(train_ds, batch_size = 128, shuffle = TRUE)
  forward <- function(x) {
    if (autocast) with_autocast(model(x), device_type = sub(":.*", "", device), dtype = torch_bfloat16())
    else model(x)
  }
  for (epoch in seq_len(epochs)) {
    model$train()
    it <- dataloader_make_iter(train_dl)
    while (!is.null(batch <- dataloader_next(it, NULL))) {
      x <- batch[[1]]$to(device = device)
      y <- batch[[2]]$to(device = device)
      opt$zero_grad()
      loss <- nnf_cross_entropy(forward(x)$float(), y)
      loss$backward()
      opt$step()
    }
  }
  model$eval()
  correct <- 0
  with_no_grad({
    test_dl <- dataloader(test_ds, batch_size = 1000)
    it <- dataloader_make_iter(test_dl)
    while (!is.null(batch <- dataloader_next(it, NULL))) {
      pred <- forward(batch[[1]]$to(device = device))$argmax(dim = 2)
      correct <- correct + (pred$cpu() == batch[[2]])$sum()$item()
    }
  })
  correct / length(test_ds)
}

cat(sprintf("autocast accuracy: %d training images, %d epochs, device %s\n", length(train_ds),
            epochs, device))
for (name in models) {
  make <- switch(name, mlp = mlp, cnn = cnn, stop("RCUDA_MODELS: mlp or cnn, not ", name))
  t0 <- proc.time()[["elapsed"]]
  fp32 <- run(make, FALSE)
  bf16 <- run(make, TRUE)
  cat(sprintf("%s_fp32_test_accuracy: %.4f\n%s_bf16_autocast_test_accuracy: %.4f\n", name, fp32, name, bf16))
  cat(sprintf("%s_autocast_accuracy_difference_points: %.2f\n", name, 100 * (bf16 - fp32)))
  cat(sprintf("%s_seconds: %.1f\n", name, proc.time()[["elapsed"]] - t0))
}
