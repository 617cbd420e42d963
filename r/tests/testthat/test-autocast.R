# with_autocast(), local_autocast(), set_autocast() and unset_autocast(): the output dtypes of
# PyTorch's autocast lists, values and gradients against base R over the rounded inputs, the
# state restored on every exit (errors included), nesting, contexts ended out of order, and the
# argument checks. The CUDA tests run where there is a GPU.

autocast_on <- function(device_type) rcuda:::is_autocast_enabled(device_type)

# x's values rounded to dtype, as the casts of an autocast region feed them to an op.
rounded <- function(x, dtype) as_array(x$detach()$to(dtype = dtype)$to(dtype = torch_float64()))

# Every element of `got` within `rel` of the sum of its terms' magnitudes (`scale`) from `want`:
# a product in a low-precision dtype rounds its result once (and its float32 accumulation
# hardly adds), where a wrong formula is off by the size of the terms.
expect_close_to_terms <- function(got, want, scale, rel) {
  expect_equal(dim(as.array(got)), dim(as.array(want)))
  expect_true(all(abs(got - want) <= rel * scale + 1e-6),
              info = paste("largest error", max(abs(got - want)), "allowed", rel * max(scale)))
}

test_that("nnf_linear and nn_linear run in bfloat16 inside a CPU region and in float32 outside", {
  xv <- matrix(rnorm(15), 3, 5)
  x <- torch_tensor(xv)$t()  # 5 x 3, not contiguous
  w <- torch_randn(4, 3)
  b <- torch_randn(4)
  expect_false(autocast_on("cpu"))
  y <- with_autocast(nnf_linear(x, w, b), device_type = "cpu")
  expect_true(y$dtype == torch_bfloat16())
  expect_false(autocast_on("cpu"))
  xr <- rounded(x, torch_bfloat16())
  wr <- rounded(w, torch_bfloat16())
  br <- rounded(b, torch_bfloat16())
  want <- xr %*% t(wr) + rep(br, each = 5)
  scale <- abs(xr) %*% t(abs(wr)) + rep(abs(br), each = 5)
  expect_close_to_terms(as_array(y), want, scale, 2^-7)
  outside <- nnf_linear(x, w, b)
  expect_true(outside$dtype == torch_float32())
  expect_equal(as_array(outside), t(xv) %*% t(as_array(w)) + rep(as_array(b), each = 5),
               tolerance = 1e-5)

  m <- nn_linear(3, 2)
  expect_true(with_autocast(m(x), device_type = "cpu")$dtype == torch_bfloat16())
  expect_true(m(x)$dtype == torch_float32())
  expect_true(m$weight$dtype == torch_float32())
  # %*% and torch_mm are matrix products too.
  expect_true(with_autocast(x %*% w$t(), device_type = "cpu")$dtype == torch_bfloat16())
  expect_true(with_autocast(torch_mm(x, w$t()), device_type = "cpu")$dtype == torch_bfloat16())
  # float64 and ops outside the lists run as they are.
  x64 <- torch_randn(2, 3, dtype = torch_float64())
  expect_true(with_autocast(nnf_linear(x64, w$double()), device_type = "cpu")$dtype ==
                torch_float64())
  expect_true(with_autocast(nnf_relu(x), device_type = "cpu")$dtype == torch_float32())
})

test_that("gradients reach float32 parameters with the values of base R over bfloat16 inputs", {
  x <- torch_randn(6, 4, requires_grad = TRUE)
  w <- torch_randn(3, 4, requires_grad = TRUE)
  b <- torch_randn(3, requires_grad = TRUE)
  g <- torch_randn(6, 3)
  loss <- with_autocast({
    y <- nnf_linear(x, w, b)
    expect_true(y$dtype == torch_bfloat16())
    (y$float() * g)$sum()
  }, device_type = "cpu")
  loss$backward()  # outside the region, as PyTorch advises
  for (p in list(x, w, b)) expect_true(p$grad$dtype == torch_float32())
  # The gradient of y is g, rounded to bfloat16 by the backward of y$float().
  gr <- rounded(g, torch_bfloat16())
  xr <- rounded(x, torch_bfloat16())
  wr <- rounded(w, torch_bfloat16())
  expect_close_to_terms(as_array(w$grad), t(gr) %*% xr, t(abs(gr)) %*% abs(xr), 2^-7)
  expect_close_to_terms(as_array(b$grad), colSums(gr), colSums(abs(gr)), 2^-7)
  expect_close_to_terms(as_array(x$grad), gr %*% wr, abs(gr) %*% abs(wr), 2^-7)
})

test_that("nnf_cross_entropy over bfloat16 logits returns float32 inside a CPU region", {
  x <- torch_randn(7, 5)
  w <- torch_randn(4, 5, requires_grad = TRUE)
  target <- torch_tensor(c(1L, 4L, 2L, 3L, 4L, 1L, 2L))
  with_autocast({
    logits <- nnf_linear(x, w)
    expect_true(logits$dtype == torch_bfloat16())
    loss <- nnf_cross_entropy(logits, target)
  }, device_type = "cpu")
  expect_true(loss$dtype == torch_float32())
  # Reference: the mean log-softmax loss in double over the bfloat16 logits.
  z <- as_array(logits$to(dtype = torch_float64()))
  t <- as_array(target)
  per_row <- vapply(seq_len(7), function(i) {
    m <- max(z[i, ])
    m + log(sum(exp(z[i, ] - m))) - z[i, t[i]]
  }, numeric(1))
  expect_equal(loss$item(), mean(per_row), tolerance = 1e-5)
  loss$backward()
  expect_true(w$grad$dtype == torch_float32())
})

test_that("with_autocast restores the state after an error in code", {
  expect_error(with_autocast(stop("inside the region"), device_type = "cpu"), "inside the region")
  expect_false(autocast_on("cpu"))
  expect_true(nnf_linear(torch_randn(2, 3), torch_randn(4, 3))$dtype == torch_float32())
  # An error in an inner region leaves the outer one on, with its dtype.
  with_autocast({
    expect_error(with_autocast(stop("inner"), device_type = "cpu", dtype = torch_float16()),
                 "inner")
    expect_true(autocast_on("cpu"))
    expect_true(rcuda:::autocast_dtype("cpu") == torch_bfloat16())
  }, device_type = "cpu")
  expect_false(autocast_on("cpu"))
  # A failing engine op inside the region: the same.
  expect_error(with_autocast(nnf_linear(torch_randn(2, 3), torch_randn(4, 5)), device_type = "cpu"),
               class = "rcuda_shape_error")
  expect_false(autocast_on("cpu"))
})

test_that("local_autocast stays on until the calling function exits, errors included", {
  x <- torch_randn(3, 2)
  w <- torch_randn(5, 2)
  forward <- function() {
    local_autocast(device_type = "cpu")
    expect_true(autocast_on("cpu"))
    nnf_linear(x, w)
  }
  expect_true(forward()$dtype == torch_bfloat16())
  expect_false(autocast_on("cpu"))
  expect_true(nnf_linear(x, w)$dtype == torch_float32())
  failing <- function() {
    local_autocast("cpu", dtype = torch_float16())
    stop("failed inside")
  }
  expect_error(failing(), "failed inside")
  expect_false(autocast_on("cpu"))
  # Two in one frame end in reverse order, whatever else that frame defers.
  both <- function() {
    on.exit(expect_false(autocast_on("cpu")), add = TRUE)
    local_autocast("cpu")
    local_autocast("cpu", enabled = FALSE)
    expect_false(autocast_on("cpu"))
    "done"
  }
  expect_identical(both(), "done")
  expect_false(autocast_on("cpu"))
  # .env: a helper that switches autocast on for its caller.
  switch_on <- function(env = parent.frame()) local_autocast("cpu", .env = env)
  caller <- function() {
    switch_on()
    autocast_on("cpu")
  }
  expect_true(caller())
  expect_false(autocast_on("cpu"))
  # torch for R's spelling local_autocast(device = "cpu") matches device_type.
  partial <- function() {
    local_autocast(device = "cpu")
    autocast_on("cpu")
  }
  expect_true(partial())
})

test_that("nested regions: enabled = FALSE switches off, each end restores what it found", {
  x <- torch_randn(2, 3)
  w <- torch_randn(4, 3)
  with_autocast(device_type = "cpu", {
    expect_true(nnf_linear(x, w)$dtype == torch_bfloat16())
    with_autocast(device_type = "cpu", enabled = FALSE, {
      expect_false(autocast_on("cpu"))
      expect_true(nnf_linear(x, w)$dtype == torch_float32())
    })
    expect_true(nnf_linear(x, w)$dtype == torch_bfloat16())
    with_autocast(device_type = "cpu", dtype = torch_float16(), {
      expect_true(nnf_linear(x, w)$dtype == torch_float16())
      # dtype = NULL keeps the enclosing region's dtype, as torch's autocast.
      with_autocast(device_type = "cpu", {
        expect_true(rcuda:::autocast_dtype("cpu") == torch_float16())
      })
    })
    expect_true(rcuda:::autocast_dtype("cpu") == torch_bfloat16())
  })
  expect_false(autocast_on("cpu"))
  expect_true(rcuda:::autocast_dtype("cpu") == torch_bfloat16())
  expect_true(rcuda:::autocast_dtype("cuda") == torch_float16())
  # A CUDA region changes no CPU tensor (and needs no GPU).
  with_autocast(device_type = "cuda", {
    expect_true(autocast_on("cuda"))
    expect_false(autocast_on("cpu"))
    expect_true(nnf_linear(x, w)$dtype == torch_float32())
  })
  expect_false(autocast_on("cuda"))
  # with_autocast returns code's value.
  expect_identical(with_autocast(41 + 1, device_type = "cpu"), 42)
})

test_that("set_autocast and unset_autocast end in reverse order per device type", {
  outer <- set_autocast("cpu")
  expect_true(autocast_on("cpu"))
  inner <- set_autocast("cpu", enabled = FALSE)
  other <- set_autocast("cuda", dtype = torch_bfloat16())
  expect_false(autocast_on("cpu"))
  expect_error(unset_autocast(outer), "not the innermost one: 1 context set after it",
               class = "rcuda_value_error")
  expect_false(autocast_on("cpu"))  # the failed unset changed nothing
  # Device types are independent: the CPU's inner context ends before the CUDA one.
  unset_autocast(inner)
  expect_true(autocast_on("cpu"))
  expect_true(autocast_on("cuda"))
  expect_true(rcuda:::autocast_dtype("cuda") == torch_bfloat16())
  unset_autocast(outer)
  expect_false(autocast_on("cpu"))
  unset_autocast(other)
  expect_false(autocast_on("cuda"))
  expect_true(rcuda:::autocast_dtype("cuda") == torch_float16())
  expect_error(unset_autocast(outer), "already unset", class = "rcuda_value_error")
  expect_error(unset_autocast(list(device = "cpu")), "what set_autocast\\(\\) returned",
               class = "rcuda_value_error")
  ctx <- set_autocast("cpu")
  expect_output(print(ctx), "autocast context: device_type \"cpu\"")
  unset_autocast(ctx)
  expect_false(autocast_on("cpu"))
})

test_that("bad device types, dtypes and flags are errors naming the function and the value", {
  expect_error(with_autocast(1, device_type = "mps"),
               "with_autocast: device_type must be \"cuda\" or \"cpu\", got \"mps\"",
               class = "rcuda_value_error")
  expect_error(local_autocast("cuda:0"), "local_autocast: device_type .* got \"cuda:0\"",
               class = "rcuda_value_error")
  expect_error(set_autocast(torch_device("cuda")), "set_autocast: device_type .* got an object",
               class = "rcuda_value_error")
  expect_error(with_autocast(1, device_type = c("cpu", "cuda")), "device_type must be",
               class = "rcuda_value_error")
  expect_error(with_autocast(1, device_type = "cpu", dtype = torch_float32()),
               "with_autocast: dtype must be torch_float16\\(\\) or torch_bfloat16\\(\\).*got torch_Float",
               class = "rcuda_dtype_error")
  expect_error(with_autocast(1, device_type = "cpu", dtype = torch_int64()), "got torch_Long",
               class = "rcuda_dtype_error")
  expect_error(set_autocast("cpu", dtype = "float16"), "set_autocast: dtype .* got \"float16\"",
               class = "rcuda_dtype_error")
  expect_error(with_autocast(1, device_type = "cpu", enabled = NA), "enabled must be TRUE or FALSE",
               class = "rcuda_value_error")
  expect_error(with_autocast(1, device_type = "cpu", cache_enabled = "yes"),
               "cache_enabled must be NULL, TRUE or FALSE", class = "rcuda_value_error")
  expect_error(with_autocast(1), "with_autocast: device_type is missing", class = "rcuda_value_error")
  expect_error(with_autocast(1, device = "cpu"), "with_autocast: unused argument in ... \\(device\\)",
               class = "rcuda_value_error")
  # None of the refused calls left a region open; cache_enabled = FALSE is accepted.
  expect_false(autocast_on("cpu"))
  expect_false(autocast_on("cuda"))
  expect_true(with_autocast(nnf_linear(torch_randn(2, 3), torch_randn(1, 3)), device_type = "cpu",
                            cache_enabled = FALSE)$dtype == torch_bfloat16())
})

test_that("on CUDA, linear runs in float16 and softmax and cross entropy in float32", {
  skip_if_cuda_not_available()
  x <- torch_randn(6, 5, device = "cuda")
  w <- torch_randn(3, 5, device = "cuda", requires_grad = TRUE)
  b <- torch_randn(3, device = "cuda", requires_grad = TRUE)
  g <- torch_randn(6, 3, device = "cuda")
  target <- torch_tensor(c(1L, 3L, 2L, 2L, 3L, 1L), device = "cuda")
  with_autocast(device_type = "cuda", {
    expect_true(rcuda:::autocast_dtype("cuda") == torch_float16())
    y <- nnf_linear(x, w, b)
    probabilities <- nnf_softmax(y, dim = 2)
    loss <- nnf_cross_entropy(y, target)
    # A CPU tensor in a CUDA region stays as it is.
    expect_true(nnf_linear(x$cpu(), w$detach()$cpu())$dtype == torch_float32())
  })
  expect_true(y$dtype == torch_float16())
  expect_true(y$is_cuda)
  expect_true(probabilities$dtype == torch_float32())
  expect_true(loss$dtype == torch_float32())
  xr <- rounded(x, torch_float16())
  wr <- rounded(w, torch_float16())
  br <- rounded(b, torch_float16())
  want <- xr %*% t(wr) + rep(br, each = 6)
  expect_close_to_terms(as_array(y), want, abs(xr) %*% t(abs(wr)) + rep(abs(br), each = 6), 2^-9)
  # softmax and the loss in double over the float16 values of y.
  z <- as_array(y$to(dtype = torch_float64()))
  e <- exp(z - apply(z, 1, max))
  expect_equal(as_array(probabilities), e / rowSums(e), tolerance = 1e-5)
  t <- as_array(target)
  expect_equal(loss$item(), mean(log(rowSums(e)) + apply(z, 1, max) - z[cbind(1:6, t)]),
               tolerance = 1e-5)
  # Gradients in float32 on the GPU: dW = G^T x and db = colSums(G), over float16 G and x.
  with_autocast(out <- (nnf_linear(x, w, b)$float() * g)$sum(), device_type = "cuda")
  out$backward()
  expect_true(w$grad$dtype == torch_float32())
  expect_true(w$grad$is_cuda)
  expect_true(b$grad$dtype == torch_float32())
  gr <- rounded(g, torch_float16())
  expect_close_to_terms(as_array(w$grad), t(gr) %*% xr, t(abs(gr)) %*% abs(xr), 2^-9)
  expect_close_to_terms(as_array(b$grad), colSums(gr), colSums(abs(gr)), 2^-9)
  expect_false(autocast_on("cuda"))
})

test_that("nn_linear in a CUDA region: float16 output, float32 parameters and gradients", {
  skip_if_cuda_not_available()
  m <- nn_linear(8, 4)$cuda()
  x <- torch_randn(16, 8, device = "cuda")
  y <- with_autocast(m(x), device_type = "cuda")
  expect_true(y$dtype == torch_float16())
  expect_true(m(x)$dtype == torch_float32())
  y$float()$sum()$backward()
  expect_true(m$weight$grad$dtype == torch_float32())
  # d sum(y) / dW[o, k] = sum_i x[i, k] over the float16 x.
  xr <- rounded(x, torch_float16())
  want <- matrix(colSums(xr), 4, 8, byrow = TRUE)
  expect_close_to_terms(as_array(m$weight$grad), want, matrix(colSums(abs(xr)), 4, 8, byrow = TRUE),
                        2^-9)
  # bfloat16 on CUDA too.
  expect_true(with_autocast(m(x), device_type = "cuda", dtype = torch_bfloat16())$dtype ==
                torch_bfloat16())
})
