# torch_polygamma(), $polygamma() and $polygamma_() (R/polygamma.R) against base R's psigamma()
# on fresh random values, and against mpmath (40 digits) where psigamma is itself less exact.

f64 <- torch_float64()

# The largest relative error of polygamma(n, x) against psigamma(x, n), x an R vector; for
# n = 0 (digamma, which has a root at 1.46) relative to at least 1.
polygamma_error <- function(n, x, dtype = f64, device = "cpu") {
  t <- torch_tensor(x, dtype = dtype, device = device)
  exact <- psigamma(as_array(t$to(dtype = f64, device = "cpu")), n)  # of the rounded x
  got <- as_array(torch_polygamma(n, t)$to(dtype = f64, device = "cpu"))
  max(abs(got - exact) / if (n == 0) pmax(abs(exact), 1) else abs(exact))
}

test_that("polygamma matches psigamma for n = 0..5 at positive x, in float64 and float32", {
  for (device in test_devices()) {
    x <- c(runif(40, 0.05, 20), runif(10, 1e-6, 1e-2), runif(10, 1e3, 1e8), 0.5, 1, 2, 9, 10)
    for (n in 0:5) {
      expect_lt(polygamma_error(n, x, f64, device), 1e-12)
      # float32: n >= 1 is summed in float64 and rounded once; n = 0 is the engine's float32 digamma.
      expect_lt(polygamma_error(n, x, torch_float32(), device), if (n == 0) 1e-5 else 1e-6)
    }
  }
})

test_that("polygamma at negative non-integer x: psigamma within its own error, mpmath closely", {
  for (device in test_devices()) {
    x <- -runif(30, 0, 30)
    x <- x[abs(x - round(x)) > 0.01]
    for (n in 1:5) expect_lt(polygamma_error(n, x, f64, device), 1e-9)  # psigamma is off by 2e-11 here
    # mpmath.polygamma(n, x) at 40 digits.
    y <- torch_tensor(c(-2.5, -0.5, -100.25), dtype = f64, device = device)
    mp <- list(
      `2` = c(-0.1082040516417274030, -0.8287966442343199956, 124.0250082069177088),
      `4` = c(-0.06799599950673136338, -3.474249826667225191, 24481.57478276428779)
    )
    for (n in names(mp)) {
      got <- as_array(torch_polygamma(as.numeric(n), y)$cpu())
      expect_lt(max(abs(got - mp[[n]]) / abs(mp[[n]])), 1e-12)
    }
  }
})

test_that("polygamma matches torch for R's 'polygamma works'", {
  a <- torch_tensor(c(1, 0.5))
  r <- torch_polygamma(1, a)
  expect_equal(as_array(a), c(1, 0.5))
  expect_equal(as_array(r), c(1.64493405818939, 4.93480205535889), tolerance = 1e-6)
  expect_equal(r$dtype, torch_float32())
})

test_that("polygamma at poles, infinities and NaN follows PyTorch's signs", {
  x <- torch_tensor(c(0, -0, -1, -2, -Inf, Inf, NaN), dtype = f64)
  # n = 1: +inf at every pole (PyTorch's trigamma: a large finite value at -1, -2 and NaN at -inf).
  expect_equal(as_array(torch_polygamma(1, x)), c(Inf, Inf, Inf, Inf, Inf, 0, NaN))
  expect_equal(as_array(torch_polygamma(2, x)), c(-Inf, -Inf, -Inf, -Inf, -Inf, 0, NaN))
  expect_equal(as_array(torch_polygamma(3, x)), c(Inf, Inf, Inf, Inf, Inf, 0, NaN))
  # n = 0 is digamma: -inf at 0, NaN at negative integers.
  expect_equal(as_array(torch_polygamma(0, x))[c(1, 3)], c(-Inf, NaN))
  # Overflow near 0 is inf, as in PyTorch.
  expect_equal(as_array(torch_polygamma(2, torch_tensor(1e-300, dtype = f64))), -Inf)
})

test_that("polygamma's gradient is polygamma(n + 1)", {
  for (device in test_devices()) {
    x0 <- c(runif(8, 0.1, 12), -runif(4, 0.1, 5) - 0.05)
    for (n in 0:4) {
      x <- torch_tensor(x0, dtype = f64, device = device, requires_grad = TRUE)
      torch_polygamma(n, x)$sum()$backward()
      g <- as_array(x$grad$cpu())
      expect_lt(max(abs(g - psigamma(x0, n + 1)) / abs(psigamma(x0, n + 1))), 1e-9)
    }
    # Through float32: the cast back records too.
    x <- torch_tensor(x0[1:8], device = device, requires_grad = TRUE)
    x$polygamma(2)$sum()$backward()
    x32 <- as_array(x$detach()$to(dtype = f64)$cpu())
    expect_lt(max(abs(as_array(x$grad$to(dtype = f64)$cpu()) / psigamma(x32, 3) - 1)), 1e-5)
  }
})

test_that("polygamma keeps shape, takes views and empty tensors, promotes integers", {
  for (device in test_devices()) {
    m <- matrix(runif(12, 0.2, 6), 3, 4)
    x <- torch_tensor(t(m), dtype = f64, device = device)$t()  # a non-contiguous [3, 4] view
    expect_false(x$is_contiguous())
    expect_equal(as_array(torch_polygamma(3, x)$cpu()), psigamma(m, 3), tolerance = 1e-12)
    e <- torch_polygamma(2, torch_zeros(0, 3, device = device))
    expect_equal(e$shape, c(0, 3))
    expect_equal(e$dtype, torch_float32())
    i <- torch_tensor(1:4, device = device)
    expect_equal(torch_polygamma(1, i)$dtype, torch_get_default_dtype())
    expect_equal(as_array(torch_polygamma(1, i)$cpu()), psigamma(1:4, 1), tolerance = 1e-6)
  }
  # A large n, as PyTorch's (-5.6963e+41 at n = 30, x = 0.5).
  expect_equal(as_array(torch_polygamma(30, torch_tensor(0.5, dtype = f64))), psigamma(0.5, 30), tolerance = 1e-12)
})

test_that("$polygamma_() writes in place", {
  x0 <- runif(5, 0.5, 4)
  x <- torch_tensor(x0, dtype = f64)
  y <- x
  expect_identical(x$polygamma_(1), x)
  expect_equal(as_array(y), psigamma(x0, 1), tolerance = 1e-12)
  expect_error(torch_tensor(1:3)$polygamma_(1), "polygamma_")
})

test_that("polygamma refuses a bad n or a non-tensor input by name", {
  x <- torch_tensor(c(1, 2))
  for (bad in list(-1, 1.5, c(1, 2), NA, "1", Inf, NULL)) {
    expect_error(torch_polygamma(bad, x), "torch_polygamma: n must be a single whole number of at least 0", class = "value_error")
  }
  expect_error(x$polygamma(-2), "polygamma: n must be", class = "value_error")
  expect_error(x$polygamma_(0.5), "polygamma_: n must be", class = "value_error")
  expect_error(torch_polygamma(1, list(1)), "torch_polygamma: input must be a tensor")
})
