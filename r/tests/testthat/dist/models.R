# Models and data of the multi-rank cases: worker.R (each rank) and test-distributed.R (the
# single-process references) source this file, so both build the same ones.
#
# Each step's batch has `per_rank` rows per rank; rank r takes the r-th of world_size equal
# slices of it (the rule fit() splits batches by), micro-batch by micro-batch where a step has
# several.

per_rank <- 4

regression_data <- function(world_size, micro = 1, steps = 6) {
  set.seed(42)
  rows <- per_rank * world_size * micro
  x <- matrix(rnorm(steps * rows * 3), steps * rows)
  y <- x %*% c(1, -2, 0.5) + 0.3 * sin(2 * x[, 1])
  list(x = x, y = y, rows = rows, micro = micro, loss = nnf_mse_loss)
}

image_data <- function(world_size, steps = 3) {
  set.seed(7)
  rows <- per_rank * world_size
  x <- array(rnorm(steps * rows * 36), c(steps * rows, 1, 6, 6))
  y <- 1L + (x[, 1, 2, 3] > 0) + (x[, 1, 4, 4] > 0.5)
  list(x = x, y = y, rows = rows, micro = 1, loss = nnf_cross_entropy)
}

# The rows of micro-batch `micro` of step s, over every rank.
step_rows <- function(data, s, micro = 1) {
  block <- data$rows / data$micro
  (s - 1) * data$rows + (micro - 1) * block + seq_len(block)
}

take <- function(data, rows) {
  x <- if (length(dim(data$x)) == 2) data$x[rows, , drop = FALSE] else data$x[rows, , , , drop = FALSE]
  y <- if (is.matrix(data$y)) torch_tensor(data$y[rows, , drop = FALSE]) else
    torch_tensor(data$y[rows], dtype = torch_long())
  list(x = torch_tensor(x), y = y)
}

rank_rows <- function(data, s, rank, world_size, micro = 1) {
  rows <- step_rows(data, s, micro)
  n <- length(rows)
  first <- floor(rank * n / world_size)
  take(data, rows[first + seq_len(floor((rank + 1) * n / world_size) - first)])
}

fit_batches <- function(data, steps) lapply(steps, function(s) take(data, step_rows(data, s)))

mlp <- function(seed) {
  torch_manual_seed(seed)
  nn_sequential(nn_linear(3, 8), nn_tanh(), nn_linear(8, 1))
}

cnn_bn <- function(seed) {
  torch_manual_seed(seed)
  nn_sequential(nn_conv2d(1, 4, 3), nn_batch_norm2d(4), nn_relu(), nn_flatten(),
                nn_linear(4 * 4 * 4, 3))
}

# A model one of whose layers forward never uses.
with_unused <- function(seed) {
  torch_manual_seed(seed)
  net <- nn_module(
    initialize = function() {
      self$fc1 <- nn_linear(3, 8)
      self$unused <- nn_linear(3, 1)
      self$fc2 <- nn_linear(8, 1)
    },
    forward = function(x) self$fc2(torch_tanh(self$fc1(x)))
  )
  net()
}

# Values of rank r for the collectives, as an R array (a vector for one dim) and as a tensor.
rank_values <- function(rank, shape) {
  set.seed(100 + rank)
  v <- rnorm(prod(shape))
  if (length(shape) == 1) v else array(v, shape)
}
rank_tensor <- function(rank, shape) torch_tensor(rank_values(rank, shape))

arrays <- function(tensors) lapply(tensors, as_array)
