# Autograd from R: gradients checked against formulas written in base R and against central
# finite differences of R functions, in double precision, on fresh random inputs.

dbl <- function(x, requires_grad = FALSE, device = "cpu") {
  torch_tensor(x, dtype = torch_double(), device = device, requires_grad = requires_grad)
}

test_that("requires_grad is set at creation and by requires_grad_(), for floating dtypes only", {
  x <- torch_randn(2, 3, requires_grad = TRUE)
  expect_true(x$requires_grad)
  expect_true(x$is_leaf)
  expect_false(torch_zeros(2)$requires_grad)
  expect_true(torch_ones(2, requires_grad = TRUE)$requires_grad)
  expect_true(torch_tensor(c(1, 2), requires_grad = TRUE)$requires_grad)
  z <- torch_zeros(3)
  z$requires_grad_()
  expect_true(z$requires_grad)
  z$requires_grad <- FALSE
  expect_false(z$requires_grad)
  expect_error(torch_tensor(1:3, requires_grad = TRUE), "floating", class = "rcuda_dtype_error")
  expect_error(torch_ones(2)$requires_grad_(NA), "TRUE or FALSE", class = "rcuda_value_error")
})

test_that("torch_tensor(t, requires_grad = TRUE) is a new leaf that leaves t alone", {
  t <- dbl(rnorm(4))
  u <- torch_tensor(t, requires_grad = TRUE)
  expect_false(t$requires_grad)
  expect_true(u$requires_grad && u$is_leaf)
  expect_equal(as_array(u), as_array(t))
})

test_that("backward() gives the gradients of a composite function (base R formulas)", {
  xv <- rnorm(5)
  yv <- rnorm(5)
  x <- dbl(xv, TRUE)
  y <- dbl(yv, TRUE)
  loss <- (torch_sin(x) * y^2)$sum() + (x * y)$mean()
  loss$backward()
  expect_equal(as_array(x$grad), cos(xv) * yv^2 + yv / 5)
  expect_equal(as_array(y$grad), 2 * yv * sin(xv) + xv / 5)
})

test_that("backward(gradient =) weights a non-scalar output; gradients accumulate", {
  xv <- matrix(rnorm(6), 2, 3)
  wv <- matrix(rnorm(6), 2, 3)
  gv <- matrix(rnorm(6), 2, 3)
  x <- dbl(xv, TRUE)
  out <- x * dbl(wv)
  expect_error(out$backward(), "one-element", class = "rcuda_value_error")
  out$backward(gradient = dbl(gv), retain_graph = TRUE)
  expect_equal(as_array(x$grad), gv * wv)
  out$backward(gradient = dbl(gv))
  expect_equal(as_array(x$grad), 2 * gv * wv)
  expect_error(out$backward(gradient = dbl(gv)), "second time.*retain_graph = TRUE", class = "rcuda_value_error")
})

test_that("matrix products and reductions agree with central finite differences", {
  av <- matrix(rnorm(12), 3, 4)
  bv <- matrix(rnorm(8), 4, 2)
  f <- function(a, b) {
    h <- tanh(a %*% b)
    sum(log(rowSums(exp(h)))) + sum(h^2)
  }
  a <- dbl(av, TRUE)
  b <- dbl(bv, TRUE)
  h <- torch_tanh(torch_matmul(a, b))
  (torch_logsumexp(h, 2)$sum() + (h^2)$sum())$backward()
  numeric_grad <- function(which) {
    base <- if (which == "a") av else bv
    g <- base
    for (i in seq_along(base)) {
      up <- base
      down <- base
      up[i] <- up[i] + 1e-6
      down[i] <- down[i] - 1e-6
      g[i] <- if (which == "a") (f(up, bv) - f(down, bv)) / 2e-6 else (f(av, up) - f(av, down)) / 2e-6
    }
    g
  }
  expect_equal(as_array(a$grad), numeric_grad("a"), tolerance = 1e-6)
  expect_equal(as_array(b$grad), numeric_grad("b"), tolerance = 1e-6)
})

test_that("$grad is an undefined tensor before backward, printed and refused as torch for R's", {
  x <- torch_randn(3, requires_grad = TRUE)
  expect_true(is_undefined_tensor(x$grad))
  expect_false(is_undefined_tensor(x))
  expect_output(print(x$grad), "[ Tensor (undefined) ]", fixed = TRUE)
  expect_error(x$grad$shape, "undefined", class = "rcuda_value_error")
  expect_error(x$grad + 1, "undefined", class = "rcuda_value_error")
  (x * 2)$sum()$backward()
  expect_false(is_undefined_tensor(x$grad))
  x$grad <- NULL
  expect_true(is_undefined_tensor(x$grad))
  g <- rnorm(3)
  x$grad <- torch_tensor(g)
  expect_equal(as_array(x$grad), g, tolerance = 1e-6)
  expect_error(x$grad <- torch_zeros(4), "shape", class = "rcuda_shape_error")
})

test_that("grad_fn names the recording node; leaves have none; printing shows the state", {
  x <- dbl(rnorm(3), TRUE)
  expect_null(x$grad_fn)
  y <- x * 2
  expect_output(print(y$grad_fn), "MulBackward")
  expect_identical(y$grad_fn$name(), "MulBackward")
  s <- y$sum()
  nxt <- s$grad_fn$next_functions
  expect_length(nxt, 1)
  expect_identical(nxt[[1]]$name(), "MulBackward")
  expect_false(y$is_leaf)
  expect_output(print(x), "requires_grad = TRUE", fixed = TRUE)
  expect_output(print(y), "grad_fn = <MulBackward>", fixed = TRUE)
})

test_that("detach() shares data without history; detach_() cuts a tensor from its graph", {
  xv <- rnorm(4)
  x <- dbl(xv, TRUE)
  y <- x * 3
  d <- y$detach()
  expect_false(d$requires_grad)
  expect_true(d$is_leaf)
  expect_equal(as_array(d), 3 * xv)
  d$fill_(0)  # shares y's storage
  expect_equal(as_array(y), rep(0, 4))
  z <- x * 2
  z$detach_()
  expect_false(z$requires_grad)
  expect_true(z$is_leaf)
  expect_null(z$grad_fn)
})

test_that("retain_grad() keeps the gradient of a non-leaf", {
  xv <- rnorm(4)
  x <- dbl(xv, TRUE)
  y <- x^2
  y$retain_grad()
  expect_true(y$retains_grad)
  w <- x * 5
  (y * 3 + w)$sum()$backward()
  expect_equal(as_array(y$grad), rep(3, 4))
  expect_true(is_undefined_tensor(w$grad))
  expect_equal(as_array(x$grad), 6 * xv + 5)
})

test_that("hooks see the gradient and may replace it; remove() switches them off", {
  xv <- rnorm(3)
  x <- dbl(xv, TRUE)
  seen <- NULL
  h <- x$register_hook(function(grad) {
    seen <<- as_array(grad)
    grad * 10
  })
  expect_output(print(h), "torch_hook")
  (x * 2)$sum()$backward()
  expect_equal(seen, rep(2, 3))
  expect_equal(as_array(x$grad), rep(20, 3))
  h$remove()
  x$grad <- NULL
  (x * 2)$sum()$backward()
  expect_equal(as_array(x$grad), rep(2, 3))
  # A non-leaf's hook changes what flows below it; a hook returning NULL keeps the gradient.
  x$grad <- NULL
  y <- x * 3
  y$register_hook(function(grad) grad + 1)
  y$register_hook(function(grad) NULL)
  (y^2)$sum()$backward()
  expect_equal(as_array(x$grad), 3 * (2 * 3 * xv + 1))
})

test_that("a hook may remove itself while it runs", {
  x <- dbl(rnorm(3), TRUE)
  calls <- 0
  h <- x$register_hook(function(grad) {
    calls <<- calls + 1
    h$remove()
    grad * 2
  })
  (x * 1)$sum()$backward()
  (x * 1)$sum()$backward()
  expect_equal(calls, 1)
  expect_equal(as_array(x$grad), rep(3, 3))
})

test_that("an R error inside a hook surfaces as an R error and leaves autograd usable", {
  x <- dbl(rnorm(3), TRUE)
  x$register_hook(function(grad) stop("the hook failed on purpose"))
  expect_error((x * 2)$sum()$backward(), "the hook failed on purpose")
  expect_true(autograd_is_grad_enabled())
  y <- dbl(rnorm(3), TRUE)
  (y * 4)$sum()$backward()
  expect_equal(as_array(y$grad), rep(4, 3))
  z <- dbl(rnorm(3), TRUE)
  z$register_hook(function(grad) torch_zeros(5, dtype = torch_double()))
  expect_error((z * 2)$sum()$backward(), "shape", class = "rcuda_shape_error")
  u <- dbl(rnorm(3), TRUE)
  u$register_hook(function(grad) torch_zeros(3))
  expect_error((u * 2)$sum()$backward(), "dtype", class = "rcuda_value_error")
  expect_error(u$register_hook(42), "function", class = "rcuda_value_error")
})

test_that("with_no_grad() and with_enable_grad() switch recording and restore it", {
  x <- torch_randn(3, requires_grad = TRUE)
  expect_false(with_no_grad(x * 2)$requires_grad)
  expect_true(with_no_grad(with_enable_grad(x * 2))$requires_grad)
  expect_error(with_no_grad(stop("inside")), "inside")
  expect_true(autograd_is_grad_enabled())
  f <- function() {
    local_no_grad()
    (x * 2)$requires_grad
  }
  expect_false(f())
  expect_true((x * 2)$requires_grad)
  # In-place updates of a leaf that requires grad need no-grad mode, as in an optimizer step.
  expect_error(x$fill_(0), "in place.*with_no_grad\\(\\)", class = "rcuda_value_error")
  with_no_grad(x$fill_(0))
  expect_equal(as_array(x), rep(0, 3))
  autograd_set_grad_mode(FALSE)
  expect_false(autograd_is_grad_enabled())
  autograd_set_grad_mode(TRUE)
})

test_that("autograd_grad() returns gradients without touching $grad", {
  xv <- rnorm(4)
  yv <- rnorm(4)
  x <- dbl(xv, TRUE)
  y <- dbl(yv, TRUE)
  out <- (x * y + x^3)$sum()
  g <- autograd_grad(out, list(x, y), retain_graph = TRUE)
  expect_equal(as_array(g[[1]]), yv + 3 * xv^2)
  expect_equal(as_array(g[[2]]), xv)
  expect_true(is_undefined_tensor(x$grad))
  unused <- dbl(rnorm(2), TRUE)
  expect_error(autograd_grad(out, list(x, unused), retain_graph = TRUE), "allow_unused = TRUE", class = "rcuda_value_error")
  g2 <- autograd_grad(out, list(x, unused), allow_unused = TRUE, retain_graph = TRUE)
  expect_true(is_undefined_tensor(g2[[2]]))
  # create_graph = TRUE gives a gradient with a history (test-autograd-double.R checks its values).
  expect_false(is.null(autograd_grad(out, x, create_graph = TRUE)[[1]]$grad_fn))
  v <- x * dbl(yv)
  gv <- rnorm(4)
  expect_equal(as_array(autograd_grad(v, x, grad_outputs = dbl(gv))[[1]]), gv * yv)
})

test_that("autograd_backward() runs several outputs at once", {
  xv <- rnorm(3)
  x <- dbl(xv, TRUE)
  a <- x^2
  b <- (x * 4)$sum()
  ga <- rnorm(3)
  autograd_backward(list(a, b), list(dbl(ga), NULL))
  expect_equal(as_array(x$grad), ga * 2 * xv + 4)
  expect_error(torch_randn(2)$sum()$backward(), "does not require grad", class = "rcuda_value_error")
})

test_that("gradients flow through views and indexing", {
  mv <- matrix(rnorm(12), 3, 4)
  m <- dbl(mv, TRUE)
  (m$t()[2:3, ] * 2)$sum()$backward()
  expected <- matrix(0, 3, 4)
  expected[, 2:3] <- 2
  expect_equal(as_array(m$grad), expected)
})

test_that("gradients on CUDA match the CPU's", {
  skip_if_cuda_not_available()
  xv <- matrix(rnorm(20), 4, 5)
  wv <- matrix(rnorm(15), 5, 3)
  grads <- lapply(c("cpu", "cuda"), function(device) {
    x <- dbl(xv, TRUE, device)
    w <- dbl(wv, TRUE, device)
    torch_tanh(torch_matmul(x, w))$pow(2)$sum()$backward()
    list(as_array(x$grad), as_array(w$grad))
  })
  expect_equal(grads[[2]], grads[[1]], tolerance = 1e-10)
  x <- dbl(rnorm(3), TRUE, "cuda")
  x$register_hook(function(grad) grad * 2)
  (x * 3)$sum()$backward()
  expect_equal(as_array(x$grad), rep(6, 3))
})

test_that("requires_grad can be set with [[<- as with $<-", {
  x <- torch_tensor(c(1, 2), requires_grad = FALSE)
  x[["requires_grad"]] <- TRUE
  expect_true(x$requires_grad)
  (x * 3)$sum()$backward()
  expect_equal(as_array(x$grad), c(3, 3))
  x[["requires_grad"]] <- FALSE
  expect_false(x$requires_grad)
  expect_error(x[[1]] <- 2, class = "value_error", regexp = "field name")
  expect_error(x[["shape"]] <- 2, class = "value_error", regexp = "'shape' cannot be assigned")
})
