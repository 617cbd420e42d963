# A regression MLP as torch for R's documentation writes it (with `library(torch)` replaced by
# `library(rcuda)`): a noisy cubic, a hand-written training loop, the test error.
library(rcuda)
torch_manual_seed(42)
device <- if (cuda_is_available()) "cuda" else "cpu"

n <- 2000
x <- torch_randn(n, 1)
y <- x^3 - 2 * x + 0.1 * torch_randn(n, 1)
train <- 1:1600
x_train <- x[train, , drop = FALSE]$to(device = device)
y_train <- y[train, , drop = FALSE]$to(device = device)
x_test <- x[-train, , drop = FALSE]$to(device = device)
y_test <- y[-train, , drop = FALSE]$to(device = device)

net <- nn_module(
  "regression_mlp",
  initialize = function(hidden = 32) {
    self$fc1 <- nn_linear(1, hidden)
    self$fc2 <- nn_linear(hidden, hidden)
    self$out <- nn_linear(hidden, 1)
  },
  forward = function(x) {
    x %>% self$fc1() %>% nnf_relu() %>% self$fc2() %>% nnf_relu() %>% self$out()
  }
)

model <- net()
model$to(device = device)
optimizer <- optim_adam(model$parameters, lr = 0.01)

for (epoch in 1:300) {
  optimizer$zero_grad()
  loss <- nnf_mse_loss(model(x_train), y_train)
  loss$backward()
  optimizer$step()
  if (epoch %% 100 == 0) cat(sprintf("epoch %d  train mse %.4f\n", epoch, loss$item()))
}

model$eval()
with_no_grad({
  test_mse <- nnf_mse_loss(model(x_test), y_test)$item()
})
cat(sprintf("test mse %.4f\n", test_mse))
