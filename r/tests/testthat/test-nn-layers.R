# Layers and activations against base R on as_array() values, gradients of nn_linear against
# the hand formulas, and each nn_* module against its nnf_* function.

dbl <- function(x, requires_grad = FALSE, device = "cpu") {
  torch_tensor(x, dtype = torch_double(), device = device, requires_grad = requires_grad)
}

test_that("nn_linear computes x W^T + b for 1-d, 2-d and 3-d inputs", {
  m <- nn_linear(4, 3)
  w <- as_array(m$weight)
  b <- as_array(m$bias)
  xv <- matrix(rnorm(20), 5, 4)
  expect_equal(as_array(m(torch_tensor(xv))), xv %*% t(w) + rep(b, each = 5), tolerance = 1e-5)
  v <- rnorm(4)
  expect_equal(as_array(m(torch_tensor(v))), as.vector(w %*% v) + b, tolerance = 1e-5)
  av <- array(rnorm(2 * 3 * 4), c(2, 3, 4))
  out <- as_array(m(torch_tensor(av)))
  expect_equal(dim(out), c(2, 3, 3))
  for (i in 1:2) expect_equal(out[i, , ], av[i, , ] %*% t(w) + rep(b, each = 3), tolerance = 1e-5)
  no_bias <- nn_linear(4, 2, bias = FALSE)
  expect_null(no_bias$bias)
  expect_identical(names(no_bias$parameters), "weight")
  expect_equal(as_array(no_bias(torch_tensor(xv))), xv %*% t(as_array(no_bias$weight)), tolerance = 1e-5)
  expect_error(m(torch_randn(2, 5)), "nnf_linear: input of shape \\[2, 5\\]", class = "rcuda_shape_error")
})

test_that("nn_linear's gradients match the hand formulas dW = G^T x, db = colSums(G), dx = G W", {
  m <- nn_linear(4, 3)$to(dtype = torch_double())
  xv <- matrix(rnorm(24), 6, 4)
  gv <- matrix(rnorm(18), 6, 3)
  x <- dbl(xv, TRUE)
  m(x)$backward(gradient = dbl(gv))
  w <- as_array(m$weight)
  expect_equal(as_array(m$weight$grad), t(gv) %*% xv)
  expect_equal(as_array(m$bias$grad), colSums(gv))
  expect_equal(as_array(x$grad), gv %*% w)
})

test_that("nn_linear is initialised as PyTorch's: U(-1/sqrt(in), 1/sqrt(in)), repeatable by seed", {
  torch_manual_seed(7)
  a <- nn_linear(256, 128)
  torch_manual_seed(7)
  b <- nn_linear(256, 128)
  expect_identical(as_array(a$weight), as_array(b$weight))
  expect_identical(as_array(a$bias), as_array(b$bias))
  bound <- 1 / sqrt(256)
  w <- as_array(a$weight)
  expect_lte(max(abs(w)), bound)
  expect_equal(var(as.vector(w)), bound^2 / 3, tolerance = 0.03)  # 32768 draws: sd of var ~1%
  expect_lte(max(abs(as_array(a$bias))), bound)
  c <- nn_linear(256, 128)
  expect_false(identical(as_array(a$weight), as_array(c$weight)))
})

gelu_tanh <- function(x) 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
softplus_ref <- function(x, beta, threshold) ifelse(beta * x > threshold, x, log1p(exp(beta * x)) / beta)
sigmoid <- function(x) 1 / (1 + exp(-x))

activation_cases <- list(
  list("relu", nnf_relu, nn_relu(), function(x) pmax(x, 0)),
  list("leaky_relu", function(x) nnf_leaky_relu(x, 0.2), nn_leaky_relu(0.2), function(x) ifelse(x > 0, x, 0.2 * x)),
  list("elu", function(x) nnf_elu(x, 1.5), nn_elu(1.5), function(x) ifelse(x > 0, x, 1.5 * (exp(x) - 1))),
  list("gelu", nnf_gelu, nn_gelu(), function(x) x * pnorm(x)),
  list("gelu tanh", function(x) nnf_gelu(x, "tanh"), nn_gelu("tanh"), gelu_tanh),
  list("silu", nnf_silu, nn_silu(), function(x) x * sigmoid(x)),
  list("softplus", function(x) nnf_softplus(x, 2, 3), nn_softplus(2, 3), function(x) softplus_ref(x, 2, 3)),
  list("sigmoid", nnf_sigmoid, nn_sigmoid(), sigmoid),
  list("tanh", nnf_tanh, nn_tanh(), tanh),
  list("hardtanh", function(x) nnf_hardtanh(x, -0.5, 0.8), nn_hardtanh(-0.5, 0.8), function(x) pmin(pmax(x, -0.5), 0.8)),
  # Scaled by 4 so that both bounds are reached.
  list("relu6", function(x) nnf_relu6(x * 4), local({
    m <- nn_relu6()
    function(x) m(x * 4)
  }), function(x) pmin(pmax(x * 4, 0), 6))
)

test_that("activations match base R, as functions and as modules", {
  xv <- matrix(rnorm(40, sd = 2), 5, 8)
  for (case in activation_cases) {
    x <- dbl(xv)
    expected <- case[[4]](xv)
    expect_equal(as_array(case[[2]](x)), expected, tolerance = 1e-12, info = case[[1]])
    expect_equal(as_array(case[[3]](x)), expected, tolerance = 1e-12, info = case[[1]])
  }
  xf <- torch_tensor(xv)
  expect_equal(as_array(nnf_gelu(xf)), xv * pnorm(xv), tolerance = 1e-5)
  expect_error(nnf_gelu(xf, "fast"), "nnf_gelu", class = "rcuda_value_error")
  expect_error(nn_hardtanh(1, 0), "min_val", class = "rcuda_value_error")
})

test_that("activation gradients match central finite differences", {
  xv <- rnorm(12, sd = 2)
  xv <- xv[abs(xv) > 0.05 & abs(xv + 0.5) > 0.05 & abs(xv - 0.8) > 0.05]  # away from kinks
  for (case in activation_cases) {
    x <- dbl(xv, TRUE)
    case[[2]](x)$sum()$backward()
    numeric <- (case[[4]](xv + 1e-6) - case[[4]](xv - 1e-6)) / 2e-6
    expect_equal(as_array(x$grad), numeric, tolerance = 1e-6, info = case[[1]])
  }
})

test_that("softmax and log_softmax normalise along the 1-based dim", {
  xv <- matrix(rnorm(12), 3, 4)
  x <- dbl(xv)
  soft_rows <- exp(xv) / rowSums(exp(xv))
  expect_equal(as_array(nnf_softmax(x, 2)), soft_rows)
  expect_equal(as_array(nn_softmax(2)(x)), soft_rows)
  expect_equal(as_array(nnf_softmax(x, 1)), sweep(exp(xv), 2, colSums(exp(xv)), "/"))
  expect_equal(as_array(nn_log_softmax(2)(x)), log(soft_rows))
  expect_equal(as_array(nnf_log_softmax(x)), log(soft_rows))  # dim NULL: the second of a 2-d input
  expect_error(nnf_softmax(x), "dim is required", class = "rcuda_value_error")
})

test_that("inplace = TRUE writes the activation into its input", {
  xv <- rnorm(6)
  x <- dbl(xv)
  out <- nnf_relu(x, inplace = TRUE)
  expect_equal(as_array(x), pmax(xv, 0))
  expect_equal(as_array(out), pmax(xv, 0))
})

test_that("dropout zeroes with probability p and scales the rest; eval and p = 0 keep the input", {
  xv <- matrix(rnorm(4000) + 5, 100, 40)
  x <- dbl(xv)
  out <- as_array(nnf_dropout(x, p = 0.3))
  kept <- out != 0
  expect_equal(mean(!kept), 0.3, tolerance = 0.1)  # 4000 draws: sd of the fraction ~0.007
  expect_equal(out[kept], xv[kept] / 0.7)
  expect_identical(as_array(nnf_dropout(x, p = 0.3, training = FALSE)), xv)
  expect_identical(as_array(nnf_dropout(x, p = 0)), xv)
  expect_identical(as_array(nnf_dropout(x, p = 1)), xv * 0)
  expect_error(nnf_dropout(x, p = 1.5), "nnf_dropout: p must be in \\[0, 1\\]", class = "rcuda_value_error")
  expect_error(nn_dropout(p = -0.1), "probability", class = "rcuda_value_error")
  # The gradient flows through the kept elements only, with the same scale.
  xg <- dbl(xv, TRUE)
  y <- nnf_dropout(xg, p = 0.5)
  y$sum()$backward()
  kept <- as_array(y) != 0
  expect_equal(as_array(xg$grad), ifelse(kept, 2, 0))
})

test_that("nn_embedding picks rows by 1-based index; padding_idx stays zero and gets no gradient", {
  e <- nn_embedding(6, 3, padding_idx = 2)
  w <- as_array(e$weight)
  expect_equal(w[2, ], rep(0, 3))
  idx <- matrix(c(1L, 2L, 6L, 3L, 6L, 1L), 2, 3)
  out <- as_array(e(torch_tensor(idx)))
  expect_equal(dim(out), c(2, 3, 3))
  for (i in 1:2) for (j in 1:3) expect_equal(out[i, j, ], w[idx[i, j], ])
  e(torch_tensor(idx))$sum()$backward()
  counts <- tabulate(idx, nbins = 6)
  expected <- matrix(rep(counts, 3), 6, 3)
  expected[2, ] <- 0
  expect_equal(as_array(e$weight$grad), expected)
  expect_error(e(torch_tensor(c(0L, 1L))), "nnf_embedding: input holds 0, outside 1 to 6", class = "rcuda_index_error")
  expect_error(e(torch_tensor(7L)), "holds 7", class = "rcuda_index_error")
  expect_error(e(torch_tensor(c(1.5, 2))), "integer", class = "rcuda_dtype_error")
  expect_error(nn_embedding(4, 2, padding_idx = 5), "padding_idx", class = "rcuda_index_error")
  last <- nn_embedding(4, 2, padding_idx = -1)
  expect_equal(last$padding_idx, 4)
  expect_equal(as_array(last$weight)[4, ], c(0, 0))
  given <- matrix(rnorm(8), 4, 2)
  expect_equal(as_array(nn_embedding(4, 2, .weight = torch_tensor(given))$weight), given, tolerance = 1e-6)
  expect_equal(as_array(nnf_embedding(torch_tensor(c(4L, 1L)), torch_tensor(given))), given[c(4, 1), ], tolerance = 1e-6)
})

test_that("nn_layer_norm normalises the trailing dims (biased variance), then scales and shifts", {
  xv <- matrix(rnorm(24, mean = 3, sd = 2), 4, 6)
  ln <- nn_layer_norm(6)$to(dtype = torch_double())
  expect_equal(as_array(ln$weight), rep(1, 6))
  expect_equal(as_array(ln$bias), rep(0, 6))
  wv <- rnorm(6)
  bv <- rnorm(6)
  with_no_grad({
    ln$weight$copy_(dbl(wv))
    ln$bias$copy_(dbl(bv))
  })
  mu <- rowMeans(xv)
  sigma2 <- rowMeans((xv - mu)^2)
  normed <- (xv - mu) / sqrt(sigma2 + 1e-5)
  expected <- sweep(sweep(normed, 2, wv, "*"), 2, bv, "+")
  expect_equal(as_array(ln(dbl(xv))), expected)
  expect_equal(as_array(nnf_layer_norm(dbl(xv), 6)), normed)
  av <- array(rnorm(2 * 3 * 4), c(2, 3, 4))
  plain <- nn_layer_norm(c(3, 4), elementwise_affine = FALSE)
  expect_length(plain$parameters, 0)
  out <- as_array(plain(dbl(av)))
  for (i in 1:2) {
    s <- av[i, , ]
    expect_equal(out[i, , ], (s - mean(s)) / sqrt(mean((s - mean(s))^2) + 1e-5))
  }
  expect_error(ln(dbl(matrix(0, 2, 5))), "nnf_layer_norm", class = "rcuda_shape_error")
})

test_that("nn_layer_norm's gradient matches central finite differences", {
  xv <- matrix(rnorm(8), 2, 4)
  f <- function(x) {
    n <- (x - rowMeans(x)) / sqrt(rowMeans((x - rowMeans(x))^2) + 1e-5)
    sum(n * seq_len(4)[col(x)])
  }
  x <- dbl(xv, TRUE)
  (nnf_layer_norm(x, 4) * dbl(matrix(rep(1:4, each = 2), 2, 4)))$sum()$backward()
  numeric <- xv
  for (i in seq_along(xv)) {
    e <- replace(xv * 0, i, 1e-6)
    numeric[i] <- (f(xv + e) - f(xv - e)) / 2e-6
  }
  expect_equal(as_array(x$grad), numeric, tolerance = 1e-6)
})

test_that("nn_flatten, nn_unflatten and nn_identity reshape as torch for R's", {
  av <- array(rnorm(2 * 3 * 4), c(2, 3, 4))
  x <- dbl(av)
  expect_equal(nn_flatten()(x)$shape, c(2L, 12L))
  expect_equal(nn_flatten(1, 2)(x)$shape, c(6L, 4L))
  expect_equal(as_array(nn_flatten()(x))[2, ], as.vector(t(av[2, , ])))
  expect_equal(nn_unflatten(2, c(2, 6))(nn_flatten()(x))$shape, c(2L, 2L, 6L))
  mv <- matrix(rnorm(24), 2, 12)
  unflat <- as_array(nn_unflatten(-1, c(4, 3))(dbl(mv)))
  expect_equal(unflat[2, , ], matrix(mv[2, ], 4, 3, byrow = TRUE))  # row-major split of the last dim
  expect_identical(as_array(nn_identity(5, "ignored")(x)), av)
})

test_that("layers on CUDA match the CPU's", {
  skip_if_cuda_not_available()
  xv <- matrix(rnorm(40), 5, 8)
  lin <- nn_linear(8, 4)
  ln <- nn_layer_norm(8)
  emb <- nn_embedding(10, 3)
  idx <- torch_tensor(c(3L, 10L, 1L))
  cpu <- list(as_array(lin(torch_tensor(xv))), as_array(ln(torch_tensor(xv))), as_array(emb(idx)))
  lin$cuda()
  ln$cuda()
  emb$cuda()
  x <- torch_tensor(xv, device = "cuda")
  gpu <- list(as_array(lin(x)), as_array(ln(x)), as_array(emb(idx$cuda())))
  expect_equal(gpu, cpu, tolerance = 1e-5)
  for (case in activation_cases) {
    expect_equal(as_array(case[[2]](dbl(xv, device = "cuda"))), as_array(case[[2]](dbl(xv))),
                 tolerance = 1e-12, info = case[[1]])
  }
  expect_equal(as_array(nnf_softmax(dbl(xv, device = "cuda"), 2)), as_array(nnf_softmax(dbl(xv), 2)), tolerance = 1e-12)
  # A bad index on the GPU is raised at the next synchronisation (the launch does not wait).
  expect_error({
    emb(torch_tensor(c(0L, 11L), device = "cuda"))
    cuda_synchronize()
  }, "out of bounds", class = "rcuda_index_error")
  expect_silent(cuda_synchronize())
})

test_that("layers take non-contiguous views, float32 and float64, and empty batches", {
  m <- nn_linear(3, 2)
  w <- as_array(m$weight)
  b <- as_array(m$bias)
  tv <- matrix(rnorm(12), 3, 4)  # its transpose is the [4, 3] input
  xt <- torch_tensor(tv)$t()
  expect_false(xt$is_contiguous())
  expect_equal(as_array(m(xt)), t(tv) %*% t(w) + rep(b, each = 4), tolerance = 1e-5)
  m64 <- nn_linear(3, 2)$to(dtype = torch_double())
  x64 <- dbl(tv)$t()
  expect_equal(as_array(m64(x64)), t(tv) %*% t(as_array(m64$weight)) + rep(as_array(m64$bias), each = 4))
  empty <- m(torch_zeros(0, 3))
  expect_equal(empty$shape, c(0L, 2L))
  expect_equal(as_array(nnf_relu(dbl(tv)$t())), pmax(t(tv), 0))
  ln <- nn_layer_norm(3)
  expect_equal(as_array(ln(xt)), t(apply(tv, 2, function(r) (r - mean(r)) / sqrt(mean((r - mean(r))^2) + 1e-5))),
               tolerance = 1e-5)
  e <- nn_embedding(5, 2)
  idx <- torch_tensor(matrix(c(1L, 2L, 3L, 4L, 5L, 1L), 2, 3))$t()
  expect_equal(as_array(e(idx))[3, 2, ], as_array(e$weight)[1, ])
})
