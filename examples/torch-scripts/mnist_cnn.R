# The MNIST example of torch for R's documentation (dataloaders, a CNN, a loop over batches),
# with `library(torch)` replaced by `library(rcuda)`, on Fashion-MNIST (the same idx format;
# Debian's dataset-fashion-mnist) and `loop()` for `coro::loop()` where coro is not installed.
# RCUDA_TRAIN_SAMPLES (default 3000) keeps it short on a CPU.
library(rcuda)
torch_manual_seed(1)
device <- if (cuda_is_available()) "cuda" else "cpu"
n <- as.integer(Sys.getenv("RCUDA_TRAIN_SAMPLES", "3000"))
root <- Sys.getenv("RCUDA_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
for_each <- if (requireNamespace("coro", quietly = TRUE)) coro::loop else loop

train_ds <- fashion_mnist_dataset(root, train = TRUE, transform = transform_to_tensor)
train_ds <- dataset_subset(train_ds, 1:n)
test_ds <- fashion_mnist_dataset(root, train = FALSE, transform = transform_to_tensor)
test_ds <- dataset_subset(test_ds, 1:2000)
train_dl <- dataloader(train_ds, batch_size = 128, shuffle = TRUE)
test_dl <- dataloader(test_ds, batch_size = 500)

net <- nn_module(
  "Net",
  initialize = function() {
    self$conv1 <- nn_conv2d(1, 32, 3, 1)
    self$conv2 <- nn_conv2d(32, 64, 3, 1)
    self$dropout1 <- nn_dropout(0.25)
    self$dropout2 <- nn_dropout(0.5)
    self$fc1 <- nn_linear(9216, 128)
    self$fc2 <- nn_linear(128, 10)
  },
  forward = function(x) {
    x %>%
      self$conv1() %>%
      nnf_relu() %>%
      self$conv2() %>%
      nnf_relu() %>%
      nnf_max_pool2d(2) %>%
      self$dropout1() %>%
      torch_flatten(start_dim = 2) %>%
      self$fc1() %>%
      nnf_relu() %>%
      self$dropout2() %>%
      self$fc2()
  }
)

model <- net()
model$to(device = device)
optimizer <- optim_adam(model$parameters)

for (epoch in 1:2) {
  l <- c()
  model$train()
  for_each(for (b in train_dl) {
    optimizer$zero_grad()
    output <- model(b[[1]]$to(device = device))
    loss <- nnf_cross_entropy(output, b[[2]]$to(device = device))
    loss$backward()
    optimizer$step()
    l <- c(l, loss$item())
  })
  cat(sprintf("Loss at epoch %d: %3f\n", epoch, mean(l)))
}

model$eval()
correct <- 0
total <- 0
with_no_grad({
  for_each(for (b in test_dl) {
    output <- model(b[[1]]$to(device = device))
    pred <- torch_max(output, dim = 2)[[2]]
    correct <- correct + (pred == b[[2]]$to(device = device))$sum()$item()
    total <- total + length(b[[2]])
  })
})
cat(sprintf("Test accuracy: %.3f\n", correct / total))
