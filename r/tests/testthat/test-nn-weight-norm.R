# nn_utils_weight_norm and its pieces (R/nn-weight-norm.R) against the formula in base R, and
# gradients of g and v against central differences.

test_that("torch_norm_except_dim keeps one dim, or norms everything for -1 / NULL", {
  v <- array(rnorm(24), c(2, 3, 4))
  t <- torch_tensor(v, dtype = torch_float64())
  expect_equal(as_array(torch_norm_except_dim(t, 2, 2)), array(sqrt(apply(v^2, 2, sum)), c(1, 3, 1)))
  expect_equal(as_array(torch_norm_except_dim(t, 3, 1)), array(apply(abs(v)^3, 1, sum)^(1 / 3), c(2, 1, 1)))
  expect_equal(as_array(torch_norm_except_dim(t, 2, -1)), sqrt(sum(v^2)))
  expect_equal(as_array(torch_norm_except_dim(t, 2, NULL)), sqrt(sum(v^2)))
  expect_error(torch_norm_except_dim(t, 2, 4), "out of range", class = "rcuda_index_error")
})

test_that("weight norm replaces the weight by g and v, keeps its value, and trains g and v", {
  for (device in test_devices()) {
    lin <- nn_linear(4, 3)$to(dtype = torch_float64(), device = device)
    w <- as_array(lin$weight)
    wn <- nn_utils_weight_norm$new("weight", 1)  # one norm per output row
    wn$apply(lin)
    expect_null(lin$parameters$weight)
    expect_setequal(names(lin$parameters), c("bias", "weight_g", "weight_v"))
    expect_equal(as_array(lin$weight_g), matrix(sqrt(rowSums(w^2)), 3, 1))
    expect_equal(as_array(lin$weight_v), w)
    expect_equal(as_array(lin$weight), w)
    with_no_grad(lin$weight_g$mul_(2))
    wn$recompute(lin)
    expect_equal(as_array(lin$weight), 2 * w)

    x <- matrix(rnorm(5 * 4), 5, 4)
    b <- as_array(lin$bias)
    loss_of <- function(g, v) sum(x %*% t(v * (g %*% matrix(1, 1, 4)) / sqrt(rowSums(v^2))) + rep(b, each = 5))
    g0 <- as_array(lin$weight_g)
    v0 <- as_array(lin$weight_v)
    wn$recompute(lin)
    lin(torch_tensor(x, dtype = torch_float64(), device = device))$sum()$backward()
    expect_equal(as_array(lin$weight_g$grad), numeric_grad(function(g) loss_of(g, v0), g0), tolerance = 1e-6)
    expect_equal(as_array(lin$weight_v$grad), numeric_grad(function(v) loss_of(g0, v), v0), tolerance = 1e-6)

    wn$remove(lin)
    expect_setequal(names(lin$parameters), c("weight", "bias"))
    expect_true(is_nn_parameter(lin$weight))
    expect_equal(as_array(lin$weight), 2 * w)
    expect_null(lin$weight_g)
  }
  # dim = NULL: one norm over the whole weight.
  lin <- nn_linear(3, 2)
  w <- as_array(lin$weight)
  nn_utils_weight_norm$new("weight", NULL)$apply(lin)
  expect_equal(as_array(lin$weight_g), sqrt(sum(w^2)), tolerance = 1e-6)
  expect_equal(as_array(lin$weight), w, tolerance = 1e-6)
  expect_error(nn_utils_weight_norm$new("kernel", 1)$apply(nn_linear(2, 2)), "has no parameter 'kernel'",
               class = "rcuda_value_error")
})
