# Data, models and the references the fit() tests compare against (test-fit*.R).

ns <- asNamespace("rcuda")

# Batches of rows of X and Y (sizes may differ: the last batch is short).
batches_of <- function(X, Y, size, named = TRUE) {
  groups <- split(seq_len(nrow(X)), ceiling(seq_len(nrow(X)) / size))
  unname(lapply(groups, function(i) {
    x <- torch_tensor(X[i, , drop = FALSE])
    y <- if (is.matrix(Y)) torch_tensor(Y[i, , drop = FALSE]) else torch_tensor(Y[i])
    if (named) list(x = x, y = y) else list(x, y)
  }))
}

regression_data <- function(n) {
  X <- matrix(rnorm(n * 3), n)
  list(X = X, Y = X %*% c(1, -2, 0.5) + 0.5 * sin(3 * X[, 1]) + 0.05 * rnorm(n))
}

classification_data <- function(n) {
  X <- matrix(rnorm(n * 4), n)
  y <- 1L + (X[, 1] + X[, 2] > 0) + (X[, 3] > 0.5)
  list(X = X, y = as.integer(y))
}

regression_mlp <- function(seed) {
  torch_manual_seed(seed)
  nn_sequential(nn_linear(3, 8), nn_relu(), nn_linear(8, 1))
}

classifier <- function(seed) {
  torch_manual_seed(seed)
  nn_sequential(nn_linear(4, 16), nn_relu(), nn_dropout(0.3), nn_linear(16, 3))
}

param_arrays <- function(model) lapply(model$parameters, as.array)

# linear -> relu -> (dropout, the identity in eval mode) -> linear, in base R.
mlp_forward <- function(p, X) {
  h <- X %*% t(p[[1]]) + rep(p[[2]], each = nrow(X))
  h <- pmax(h, 0)
  h %*% t(p[[3]]) + rep(p[[4]], each = nrow(X))
}

cross_entropy <- function(P, y) {
  m <- apply(P, 1, max)
  lse <- m + log(rowSums(exp(P - m)))
  mean(lse - P[cbind(seq_along(y), y)])
}

# The loop fit() promises to be, written out: per epoch the parameters after it, and the
# predictions and losses of its batches.
hand_loop <- function(model, optimizer, batches, loss_fn, epochs) {
  out <- vector("list", epochs)
  for (epoch in seq_len(epochs)) {
    model$train()
    preds <- list()
    losses <- numeric()
    for (b in batches) {
      optimizer$zero_grad()
      pred <- model(b[[1]])
      loss <- loss_fn(pred, b[[2]])
      loss$backward()
      optimizer$step()
      preds[[length(preds) + 1]] <- as.array(pred)
      losses <- c(losses, as.numeric(loss))
    }
    out[[epoch]] <- list(params = param_arrays(model), preds = preds, losses = losses)
  }
  out
}

batch_rows <- function(batches) vapply(batches, function(b) dim(b[[1]])[1], numeric(1))

quiet_fit <- function(...) fit(..., verbose = FALSE)
