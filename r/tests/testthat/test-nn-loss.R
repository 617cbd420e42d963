# Losses against base R formulas on fresh random inputs, every reduction; classes are 1-based.

dbl <- function(x, requires_grad = FALSE, device = "cpu") {
  torch_tensor(x, dtype = torch_double(), device = device, requires_grad = requires_grad)
}
reduce_ref <- function(losses, reduction) {
  switch(reduction, none = losses, mean = mean(losses), sum = sum(losses))
}
log_softmax_rows <- function(x) x - log(rowSums(exp(x)))

test_that("regression losses match base R for every reduction, as functions and modules", {
  xv <- matrix(rnorm(15, sd = 2), 3, 5)
  yv <- matrix(rnorm(15, sd = 2), 3, 5)
  d <- abs(xv - yv)
  refs <- list(
    mse = (xv - yv)^2,
    l1 = d,
    smooth_l1 = ifelse(d < 0.7, 0.5 * d^2 / 0.7, d - 0.35),
    huber = ifelse(d < 1.3, 0.5 * d^2, 1.3 * (d - 0.65))
  )
  for (reduction in c("none", "mean", "sum")) {
    x <- dbl(xv)
    y <- dbl(yv)
    results <- list(
      mse = list(nnf_mse_loss(x, y, reduction), nn_mse_loss(reduction)(x, y)),
      l1 = list(nnf_l1_loss(x, y, reduction), nn_l1_loss(reduction)(x, y)),
      smooth_l1 = list(nnf_smooth_l1_loss(x, y, reduction, beta = 0.7), nn_smooth_l1_loss(reduction, beta = 0.7)(x, y)),
      huber = list(nnf_huber_loss(x, y, reduction, delta = 1.3), nn_huber_loss(reduction, delta = 1.3)(x, y))
    )
    for (name in names(refs)) {
      for (r in results[[name]]) expect_equal(as_array(r), reduce_ref(refs[[name]], reduction), info = paste(name, reduction))
    }
  }
  # Broadcasting target, and the default (mean) reduction's gradient.
  x <- dbl(xv, TRUE)
  rv <- rnorm(5)
  expect_warning(nnf_mse_loss(x, dbl(rv))$backward(), "target size \\[5\\] that is different")
  expect_equal(as_array(x$grad), 2 * sweep(xv, 2, rv) / 15)
  expect_error(nnf_mse_loss(dbl(xv), dbl(yv), "avg"), "nnf_mse_loss: reduction must be one of", class = "rcuda_value_error")
  expect_error(nn_l1_loss(reduction = "avg"), "reduction must be one of", class = "rcuda_value_error")
})

test_that("nnf_nll_loss takes 1-based targets, class weights and a 1-based ignore_index", {
  n <- 7
  classes <- 4
  logp <- log_softmax_rows(matrix(rnorm(n * classes), n, classes))
  target <- sample.int(classes, n, replace = TRUE)
  target[2] <- 3L
  wv <- runif(classes, 0.5, 2)
  picked <- logp[cbind(seq_len(n), target)]
  x <- dbl(logp)
  t <- torch_tensor(target)
  expect_equal(as_array(nnf_nll_loss(x, t)), -mean(picked))
  expect_equal(as_array(nnf_nll_loss(x, t, reduction = "none")), -picked)
  expect_equal(as_array(nnf_nll_loss(x, t, reduction = "sum")), -sum(picked))
  expect_equal(as_array(nnf_nll_loss(x, t, weight = dbl(wv))), -sum(wv[target] * picked) / sum(wv[target]))
  counted <- target != 3
  expect_equal(as_array(nnf_nll_loss(x, t, ignore_index = 3)), -mean(picked[counted]))
  expect_equal(as_array(nn_nll_loss(weight = dbl(wv), ignore_index = 3)(x, t)),
               -sum((wv[target] * picked)[counted]) / sum(wv[target][counted]))
  with_sentinel <- torch_tensor(replace(target, 1, -100L))
  expect_equal(as_array(nnf_nll_loss(x, with_sentinel)), -mean(picked[-1]))
})

test_that("nnf_cross_entropy with class targets matches base R, with weight, ignore_index and label_smoothing", {
  n <- 6
  classes <- 5
  logits <- matrix(rnorm(n * classes, sd = 2), n, classes)
  target <- sample.int(classes, n, replace = TRUE)
  target[c(1, 4)] <- c(2L, 5L)
  logp <- log_softmax_rows(logits)
  picked <- logp[cbind(seq_len(n), target)]
  x <- dbl(logits)
  t <- torch_tensor(target)
  expect_equal(as_array(nnf_cross_entropy(x, t)), -mean(picked))
  expect_equal(as_array(nnf_cross_entropy(x, t, reduction = "none")), -picked)
  expect_equal(as_array(nnf_cross_entropy(x, t, reduction = "sum")), -sum(picked))
  wv <- runif(classes, 0.5, 2)
  expect_equal(as_array(nnf_cross_entropy(x, t, weight = dbl(wv))), -sum(wv[target] * picked) / sum(wv[target]))
  counted <- target != 5
  expect_equal(as_array(nnf_cross_entropy(x, t, ignore_index = 5)), -mean(picked[counted]))
  # Label smoothing, as PyTorch: (1 - e) * nll + e / C * sum over classes of -w_c log p_c, both
  # divided by the counted weights for "mean".
  e <- 0.2
  smooth <- -rowSums(logp)
  expect_equal(as_array(nnf_cross_entropy(x, t, label_smoothing = e)), (1 - e) * -mean(picked) + e / classes * mean(smooth))
  smooth_w <- -rowSums(sweep(logp, 2, wv, "*"))
  expect_equal(as_array(nn_cross_entropy_loss(weight = dbl(wv), label_smoothing = e)(x, t)),
               ((1 - e) * -sum(wv[target] * picked) + e / classes * sum(smooth_w)) / sum(wv[target]))
  # The gradient of the mean loss is (softmax - onehot) / n.
  xg <- dbl(logits, TRUE)
  nn_cross_entropy_loss()(xg, t)$backward()
  onehot <- diag(classes)[target, ]
  expect_equal(as_array(xg$grad), (exp(logp) - onehot) / n)
})

test_that("nnf_cross_entropy with probability targets matches base R", {
  n <- 4
  classes <- 3
  logits <- matrix(rnorm(n * classes), n, classes)
  probs <- matrix(runif(n * classes), n, classes)
  probs <- probs / rowSums(probs)
  logp <- log_softmax_rows(logits)
  x <- dbl(logits)
  p <- dbl(probs)
  expect_equal(as_array(nnf_cross_entropy(x, p)), mean(-rowSums(probs * logp)))
  expect_equal(as_array(nnf_cross_entropy(x, p, reduction = "none")), -rowSums(probs * logp))
  wv <- runif(classes)
  expect_equal(as_array(nnf_cross_entropy(x, p, weight = dbl(wv), reduction = "sum")), -sum(sweep(probs * logp, 2, wv, "*")))
  smoothed <- probs * 0.9 + 0.1 / classes
  expect_equal(as_array(nnf_cross_entropy(x, p, label_smoothing = 0.1)), mean(-rowSums(smoothed * logp)))
})

test_that("class targets outside 1..C, and ignore_index = 0, are refused naming the values", {
  x <- torch_randn(3, 4)
  expect_error(nnf_cross_entropy(x, torch_tensor(c(1L, 0L, 2L))),
               "nnf_cross_entropy: target holds 0, outside 1 to 4 \\(classes are 1-based", class = "rcuda_index_error")
  expect_error(nnf_cross_entropy(x, torch_tensor(c(1L, 5L, 2L))), "target holds 5, outside 1 to 4", class = "rcuda_index_error")
  expect_error(nn_cross_entropy_loss()(x, torch_tensor(c(1L, -3L, 2L))), "holds -3", class = "rcuda_index_error")
  expect_error(nnf_nll_loss(x, torch_tensor(c(5L, 1L, 1L))), "nnf_nll_loss: target holds 5, outside 1 to 4", class = "rcuda_index_error")
  expect_error(nnf_cross_entropy(x, torch_tensor(c(1L, 2L, 3L)), ignore_index = 0), "ignore_index must be a 1 based class index",
               class = "rcuda_value_error")
  expect_error(nnf_cross_entropy(x, torch_tensor(c(1L, 2L))), "nnf_cross_entropy: target of shape \\[2\\]", class = "rcuda_shape_error")
  expect_error(nnf_cross_entropy(x, torch_tensor(c(TRUE, FALSE, TRUE))), "integer", class = "rcuda_dtype_error")
  expect_error(nnf_cross_entropy(x, torch_tensor(1:3), weight = torch_ones(3)), "weight", class = "rcuda_shape_error")
})

test_that("binary cross entropy, plain and with logits (weight, pos_weight), matches base R", {
  xv <- matrix(runif(12, 0.05, 0.95), 3, 4)
  yv <- matrix(rbinom(12, 1, 0.5), 3, 4)
  wv <- runif(4)
  bce <- -(yv * log(xv) + (1 - yv) * log(1 - xv))
  for (reduction in c("none", "mean", "sum")) {
    expect_equal(as_array(nnf_binary_cross_entropy(dbl(xv), dbl(yv), reduction = reduction)), reduce_ref(bce, reduction))
  }
  expect_equal(as_array(nn_bce_loss(weight = dbl(wv))(dbl(xv), dbl(yv))), mean(sweep(bce, 2, wv, "*")))
  expect_error(nnf_binary_cross_entropy(dbl(xv + 1), dbl(yv)), "nnf_binary_cross_entropy", class = "rcuda_value_error")
  logits <- matrix(rnorm(12, sd = 3), 3, 4)
  pw <- runif(4, 0.5, 3)
  s <- 1 / (1 + exp(-logits))
  with_logits <- -(sweep(yv * log(s), 2, pw, "*") + (1 - yv) * log(1 - s))
  expect_equal(as_array(nnf_binary_cross_entropy_with_logits(dbl(logits), dbl(yv), pos_weight = dbl(pw))), mean(with_logits))
  module <- nn_bce_with_logits_loss(weight = dbl(wv), reduction = "sum", pos_weight = dbl(pw))
  expect_equal(as_array(module(dbl(logits), dbl(yv))), sum(sweep(with_logits, 2, wv, "*")))
  expect_identical(names(module$state_dict()), c("weight", "pos_weight"))
})

test_that("nnf_kl_div matches base R, batchmean and log_target included", {
  logq <- log_softmax_rows(matrix(rnorm(12), 3, 4))
  p <- matrix(runif(12), 3, 4)
  p <- p / rowSums(p)
  pointwise <- p * (log(p) - logq)
  x <- dbl(logq)
  t <- dbl(p)
  expect_equal(as_array(nnf_kl_div(x, t, reduction = "none")), pointwise)
  expect_equal(as_array(suppressWarnings(nnf_kl_div(x, t))), mean(pointwise))
  expect_equal(as_array(nnf_kl_div(x, t, reduction = "sum")), sum(pointwise))
  expect_equal(as_array(nn_kl_div_loss(reduction = "batchmean")(x, t)), sum(pointwise) / 3)
  expect_equal(as_array(nn_kl_div_loss(reduction = "batchmean", log_target = TRUE)(x, dbl(log(p)))), sum(pointwise) / 3)
})

test_that("a loss module keeps its class weight as a buffer that moves with $to()", {
  wv <- runif(3)
  m <- nn_cross_entropy_loss(weight = wv)
  expect_identical(names(m$buffers), "weight")
  m$to(dtype = torch_double())
  expect_true(m$weight$dtype == torch_double())
  logits <- matrix(rnorm(6), 2, 3)
  target <- c(3L, 1L)
  picked <- log_softmax_rows(logits)[cbind(1:2, target)]
  expect_equal(as_array(m(dbl(logits), torch_tensor(target))), -sum(wv[target] * picked) / sum(wv[target]), tolerance = 1e-6)
})

test_that("losses on CUDA match the CPU's", {
  skip_if_cuda_not_available()
  logits <- matrix(rnorm(40), 8, 5)
  target <- torch_tensor(sample.int(5, 8, replace = TRUE))
  xv <- matrix(runif(40, 0.1, 0.9), 8, 5)
  yv <- matrix(rbinom(40, 1, 0.5), 8, 5)
  run <- function(device) {
    x <- dbl(logits, TRUE, device)
    ce <- nnf_cross_entropy(x, target$to(device = device), label_smoothing = 0.1)
    ce$backward()
    list(as_array(ce), as_array(x$grad),
         as_array(nnf_nll_loss(dbl(log_softmax_rows(logits), device = device), target$to(device = device), ignore_index = 2)),
         as_array(nnf_mse_loss(dbl(xv, device = device), dbl(yv, device = device))),
         as_array(nnf_binary_cross_entropy(dbl(xv, device = device), dbl(yv, device = device))),
         as_array(nnf_binary_cross_entropy_with_logits(dbl(logits, device = device), dbl(yv, device = device))))
  }
  expect_equal(run("cuda"), run("cpu"), tolerance = 1e-10)
})

test_that("losses take non-contiguous inputs, and an empty batch's mean is NaN", {
  logits_t <- matrix(rnorm(12), 3, 4)  # classes along rows: its transpose is [4, 3]
  x <- dbl(logits_t)$t()
  expect_false(x$is_contiguous())
  target <- sample.int(3, 4, replace = TRUE)
  logp <- log_softmax_rows(t(logits_t))
  expect_equal(as_array(nnf_cross_entropy(x, torch_tensor(target))), -mean(logp[cbind(1:4, target)]))
  yv <- matrix(rnorm(12), 4, 3)
  expect_equal(as_array(nnf_mse_loss(x, dbl(yv))), mean((t(logits_t) - yv)^2))
  expect_true(is.nan(as_array(nnf_mse_loss(torch_zeros(0, 3), torch_zeros(0, 3)))))
  expect_equal(as_array(nnf_mse_loss(torch_zeros(0, 3), torch_zeros(0, 3), reduction = "sum")), 0)
})

test_that("regression losses warn when the target's size differs from the input's, as torch's", {
  input <- torch_randn(4, 1)
  target <- torch_randn(4)
  for (fn in list(nnf_mse_loss, nnf_l1_loss, nnf_smooth_l1_loss, nnf_huber_loss)) {
    expect_warning(out <- fn(input, target), "target size \\[4\\] that is different to the input size \\[4, 1\\]")
    # The result is still torch's: the broadcast [4, 4] comparison.
    expect_equal(out$item(), fn(input$expand(c(4, 4)), target$expand(c(4, 4)))$item(), tolerance = 1e-6)
    expect_silent(fn(input, target$unsqueeze(2)))
  }
  expect_warning(nnf_kl_div(torch_randn(2, 3)$log_softmax(2), torch_rand(2, 3)), "\"batchmean\" divides only by the batch size")
  expect_silent(nnf_kl_div(torch_randn(2, 3)$log_softmax(2), torch_rand(2, 3), reduction = "batchmean"))
})

test_that("torch_nll_loss is nll_loss with torch's reduction numbers, and says torch's words for bad classes", {
  x <- torch_randn(6, 4, dtype = torch_float64())$log_softmax(2)
  classes <- c(1L, 4L, 2L, 2L, 3L, 1L)
  picked <- as_array(x)[cbind(1:6, classes)]
  target <- torch_tensor(classes)
  expect_equal(as_array(torch_nll_loss(x, target)), -mean(picked), tolerance = 1e-12)
  expect_equal(as_array(torch_nll_loss(x, target, reduction = torch_reduction_sum())), -sum(picked),
               tolerance = 1e-12)
  expect_equal(as_array(torch_nll_loss(x, target, reduction = torch_reduction_none())), -picked,
               tolerance = 1e-12)
  w <- c(0.5, 1, 2, 3)
  expect_equal(as_array(torch_nll_loss(x, target, weight = torch_tensor(w, dtype = torch_float64()))),
               -sum(w[classes] * picked) / sum(w[classes]), tolerance = 1e-12)
  expect_error(torch_nll_loss(x, target, reduction = "mean"), class = "value_error",
               regexp = "torch_nll_loss: reduction must be torch_reduction_none()", fixed = TRUE)
  expect_error(torch_nll_loss(x, torch_tensor(c(0L, 1L, 1L, 1L, 1L, 1L))),
               "Indexing starts at 1 but found a 0.", fixed = TRUE, class = "rcuda_index_error")
  expect_error(torch_nll_loss(x, torch_tensor(c(5L, 1L, 1L, 1L, 1L, 1L))),
               "Target 5 is out of bounds.", fixed = TRUE, class = "rcuda_index_error")
})
