# Gradients of gradients (create_graph = TRUE): a WGAN-GP gradient penalty against central
# differences of a base-R implementation, a Hessian-vector product against the closed form,
# $backward(create_graph = TRUE), and the clear error of an op whose backward cannot record.

dbl <- function(x, requires_grad = FALSE) {
  torch_tensor(x, dtype = torch_double(), requires_grad = requires_grad)
}

# The critic sum(tanh(x W1^T + b1) W2^T) and its gradient penalty, in base R.
critic_penalty <- function(x, w1, b1, w2) {
  h <- tanh(sweep(x %*% t(w1), 2, b1, "+"))
  # d critic / d x, row by row: ((1 - h^2) * w2) %*% w1
  g <- ((1 - h^2) * matrix(w2, nrow(x), length(w2), byrow = TRUE)) %*% w1
  mean((sqrt(rowSums(g^2)) - 1)^2)
}

test_that("a WGAN-GP gradient penalty differentiates to the weights (central differences)", {
  xv <- matrix(rnorm(12), 4, 3)
  w1v <- matrix(rnorm(15), 5, 3)
  b1v <- rnorm(5)
  w2v <- matrix(rnorm(5), 1, 5)
  x <- dbl(xv, TRUE)
  w1 <- dbl(w1v, TRUE)
  b1 <- dbl(b1v, TRUE)
  w2 <- dbl(w2v, TRUE)
  critic <- nnf_linear(torch_tanh(nnf_linear(x, w1, b1)), w2)
  g <- autograd_grad(critic$sum(), x, create_graph = TRUE)[[1]]
  expect_false(is.null(g$grad_fn))
  penalty <- ((g^2)$sum(dim = 2)$sqrt() - 1)$pow(2)$mean()
  expect_equal(as_array(penalty), critic_penalty(xv, w1v, b1v, w2v), tolerance = 1e-12)
  penalty$backward()
  expect_equal(as_array(w1$grad), numeric_grad(function(w) critic_penalty(xv, w, b1v, w2v), w1v),
               tolerance = 1e-6)
  expect_equal(as_array(b1$grad), numeric_grad(function(b) critic_penalty(xv, w1v, b, w2v), b1v),
               tolerance = 1e-6)
  expect_equal(as.vector(as_array(w2$grad)),
               as.vector(numeric_grad(function(w) critic_penalty(xv, w1v, b1v, w), w2v)),
               tolerance = 1e-6)
  # The penalty's gradient reaches the input too (d penalty / d x, through the graph of g).
  expect_equal(as_array(x$grad), numeric_grad(function(v) critic_penalty(v, w1v, b1v, w2v), xv),
               tolerance = 1e-6)
})

test_that("a critic made of nn modules trains with a gradient penalty", {
  # Layer norm, not batch norm, as WGAN-GP's critic.
  critic <- nn_sequential(nn_linear(3, 8), nn_layer_norm(8), nn_relu(), nn_linear(8, 1))
  opt <- optim_sgd(critic$parameters, lr = 0.05)
  x <- torch_randn(16, 3)$requires_grad_(TRUE)
  penalty_of <- function() {
    g <- autograd_grad(critic(x)$sum(), x, create_graph = TRUE)[[1]]
    ((g$pow(2)$sum(dim = 2)$sqrt() - 1)$pow(2))$mean()
  }
  first <- as_array(penalty_of())
  for (i in 1:20) {
    opt$zero_grad()
    penalty <- penalty_of()
    penalty$backward()
    opt$step()
  }
  expect_lt(as_array(penalty_of()), first)
})

test_that("a Hessian-vector product matches the closed form", {
  a <- matrix(rnorm(12), 4, 3)
  xv <- rnorm(3)
  vv <- rnorm(3)
  x <- dbl(xv, TRUE)
  f <- torch_tanh(torch_matmul(dbl(a), x))$sum()
  g <- autograd_grad(f, x, create_graph = TRUE)[[1]]
  hv <- autograd_grad((g * dbl(vv))$sum(), x)[[1]]
  t <- tanh(a %*% xv)
  hessian <- t(a) %*% diag(as.vector(-2 * t * (1 - t^2))) %*% a
  expect_equal(as_array(hv), as.vector(hessian %*% vv), tolerance = 1e-12)
  expect_equal(as_array(g), as.vector(t(a) %*% (1 - t^2)), tolerance = 1e-12)
})

test_that("$backward(create_graph = TRUE) leaves a $grad that can be differentiated", {
  xv <- rnorm(4)
  x <- dbl(xv, TRUE)
  (x^3)$sum()$backward(create_graph = TRUE)
  g <- x$grad
  expect_false(is.null(g$grad_fn))
  expect_equal(as_array(g), 3 * xv^2, tolerance = 1e-12)
  x$grad <- NULL
  g$sum()$backward()
  expect_equal(as_array(x$grad), 6 * xv, tolerance = 1e-12)
  y <- dbl(xv, TRUE)
  autograd_backward(list((y^2)$sum()), create_graph = TRUE)
  expect_false(is.null(y$grad$grad_fn))
})

test_that("a plain backward records nothing", {
  x <- dbl(rnorm(3), TRUE)
  g <- autograd_grad(torch_exp(x)$sum(), x)[[1]]
  expect_null(g$grad_fn)
  expect_false(g$requires_grad)
})

test_that("a convolutional critic's gradient penalty matches central differences", {
  image <- torch_randn(2, 1, 5, 5, dtype = torch_double())$requires_grad_(TRUE)
  wv <- array(rnorm(18), c(2, 1, 3, 3))
  penalty_at <- function(w, create_graph) {
    out <- torch_tanh(nnf_conv2d(image, w, stride = 2, padding = 1))$sum()
    g <- autograd_grad(out, image, create_graph = create_graph)[[1]]
    (g^2)$sum()
  }
  w <- dbl(wv, TRUE)
  penalty_at(w, TRUE)$backward()
  f <- function(v) as_array(penalty_at(dbl(v, TRUE), FALSE))
  expect_equal(as_array(w$grad), numeric_grad(f, wv), tolerance = 1e-6)
})

test_that("an op whose backward cannot record is a clear error naming it", {
  image <- torch_randn(1, 2, 5, 5, dtype = torch_double())$requires_grad_(TRUE)
  kernel <- torch_randn(2, 3, 3, 3, dtype = torch_double())$requires_grad_(TRUE)
  out <- nnf_conv_transpose2d(image, kernel)$sum()
  expect_error(autograd_grad(out, image, create_graph = TRUE),
               "conv_transpose2d: gradients of gradients \\(create_graph = TRUE\\) are not supported",
               class = "rcuda_value_error")
  # Without create_graph the same graph runs as always.
  expect_equal(dim(as_array(autograd_grad(out, image)[[1]])), c(1, 2, 5, 5))
  x <- torch_randn(4, 3, dtype = torch_double())$requires_grad_(TRUE)
  loss <- nnf_cross_entropy(x, torch_tensor(c(1L, 3L, 2L, 1L)))
  expect_error(autograd_grad(loss, x, create_graph = TRUE), "cross_entropy: gradients of gradients",
               class = "rcuda_value_error")
})
