# In-place methods ($exp_(), $add_(), ...), $stride(), $storage_offset() and the dtype
# conversion methods, against base R on fresh random inputs.

dbl <- function(a, device = "cpu") torch_tensor(a, dtype = torch_double(), device = device)
positive <- function(...) array(runif(prod(c(...)), 0.2, 3), dim = c(...))

# Each in-place unary method, its input's range and base R's value.
unary_refs <- list(
  abs_ = list(rnorm, abs), sign_ = list(rnorm, sign), exp_ = list(rnorm, exp),
  expm1_ = list(rnorm, expm1), log_ = list(positive, log), log1p_ = list(positive, log1p),
  sqrt_ = list(positive, sqrt), rsqrt_ = list(positive, function(a) 1 / sqrt(a)),
  sin_ = list(rnorm, sin), cos_ = list(rnorm, cos), tanh_ = list(rnorm, tanh),
  sigmoid_ = list(rnorm, function(a) 1 / (1 + exp(-a))), relu_ = list(rnorm, function(a) pmax(a, 0)),
  floor_ = list(rnorm, floor), ceil_ = list(rnorm, ceiling), round_ = list(rnorm, round),
  neg_ = list(rnorm, function(a) -a), log2_ = list(positive, log2), log10_ = list(positive, log10),
  trunc_ = list(rnorm, trunc), logit_ = list(function(n) runif(n, 0.05, 0.95), function(a) log(a / (1 - a))),
  logical_not_ = list(function(n) sample(c(0, 0.5, -2), n, replace = TRUE), function(a) (a == 0) + 0)
)

# Each in-place binary method (other is a tensor or a number) and base R's value.
binary_refs <- list(
  mul_ = `*`, div_ = `/`, remainder_ = function(a, b) a - floor(a / b) * b,
  floor_divide_ = function(a, b) floor(a / b),
  eq_ = function(a, b) (a == b) + 0, ne_ = function(a, b) (a != b) + 0,
  lt_ = function(a, b) (a < b) + 0, le_ = function(a, b) (a <= b) + 0,
  gt_ = function(a, b) (a > b) + 0, ge_ = function(a, b) (a >= b) + 0,
  logical_and_ = function(a, b) (a != 0 & b != 0) + 0,
  logical_or_ = function(a, b) (a != 0 | b != 0) + 0,
  logical_xor_ = function(a, b) xor(a != 0, b != 0) + 0,
  pow_ = function(a, b) abs(a)^b, xlogy_ = function(a, b) a * log(abs(b))
)

# Inputs for a binary method: pow_ takes positive bases, xlogy_ positive others; the logical
# and comparison ones see zeros and ties. (Tied or rounded inputs would put remainder_ and
# floor_divide_ on the edge of a step, where a last-bit difference moves a whole step.)
binary_inputs <- function(name, ...) {
  a <- array(rnorm(prod(c(...))), dim = c(...))
  b <- array(rnorm(prod(c(...))), dim = c(...))
  if (name %in% c("logical_and_", "logical_or_", "logical_xor_", "eq_", "ne_", "le_", "ge_")) {
    a[sample(length(a), 3)] <- 0
    b[1:3] <- a[1:3]
  }
  if (name == "pow_") a <- abs(a)
  if (name %in% c("pow_", "xlogy_")) b <- abs(b) + 0.1
  list(a = a, b = b)
}

check_unary_inplace <- function(device, dtype = torch_double()) {
  tol <- if (dtype == torch_double()) testthat_tolerance() else 1e-5
  for (name in names(unary_refs)) {
    a <- array(unary_refs[[name]][[1]](12), dim = c(3, 4))
    # float32 inputs are rounded first, so that floor_ and friends see the same numbers.
    if (dtype == torch_float()) a <- as_array(torch_tensor(a, dtype = dtype))
    x <- torch_tensor(a, dtype = dtype, device = device)
    out <- withVisible(x[[name]]())
    expect_true(out$visible)
    expect_identical(out$value, x)
    expect_equal(as_array(x$cpu()), unary_refs[[name]][[2]](a), tolerance = tol, info = name)
    expect_equal(x$dtype, dtype, info = name)
    empty <- torch_zeros(0, 3, dtype = dtype, device = device)
    expect_equal(dim(empty[[name]]()), c(0L, 3L), info = paste(name, "empty"))
  }
}

check_binary_inplace <- function(device) {
  for (name in names(binary_refs)) {
    ab <- binary_inputs(name, 3, 4)
    ref <- binary_refs[[name]](ab$a, ab$b)
    x <- dbl(ab$a, device)
    expect_identical(x[[name]](dbl(ab$b, device)), x)
    expect_equal(as_array(x$cpu()), ref, info = name)
    # A number as other, and a row broadcast over self's rows.
    x <- dbl(ab$a, device)
    x[[name]](ab$b[2, 3])
    expect_equal(as_array(x$cpu()), binary_refs[[name]](ab$a, ab$b[2, 3]), info = paste(name, "number"))
    x <- dbl(ab$a, device)
    x[[name]](dbl(ab$b[2, , drop = FALSE], device))
    expect_equal(as_array(x$cpu()), binary_refs[[name]](ab$a, ab$b[rep(2, 3), ]), info = paste(name, "row"))
  }
}

test_that("in-place unary methods write base R's values into self and return it", {
  check_unary_inplace("cpu")
  check_unary_inplace("cpu", torch_float())
})

test_that("in-place binary methods write base R's values into self", {
  check_binary_inplace("cpu")
})

test_that("add_ and sub_ scale other by alpha; clamp_, tril_, triu_, cumsum_ as their twins", {
  a <- random_array(3, 4)
  b <- random_array(3, 4)
  x <- dbl(a)
  x$add_(dbl(b), alpha = 2.5)
  expect_equal(as_array(x), a + 2.5 * b)
  x <- dbl(a)
  x$sub_(dbl(b), alpha = -3)
  expect_equal(as_array(x), a + 3 * b)
  x <- dbl(a)
  x$add_(1.5)$sub_(0.25, alpha = 2)
  expect_equal(as_array(x), a + 1)
  x <- dbl(a)
  x$clamp_(min = -0.3, max = 0.4)
  expect_equal(as_array(x), pmin(pmax(a, -0.3), 0.4))
  x <- dbl(a)
  x$clamp_(max = 0.1)
  expect_equal(as_array(x), pmin(a, 0.1))
  x <- dbl(a)
  x$tril_(1)
  expect_equal(as_array(x), a * (col(a) - row(a) <= 1))
  x <- dbl(a)
  x$triu_()
  expect_equal(as_array(x), a * upper.tri(a, diag = TRUE))
  x <- dbl(a)
  x$cumsum_(2)
  expect_equal(as_array(x), t(apply(a, 1, cumsum)))
  x <- dbl(a)
  x$masked_fill_(torch_tensor(a > 0), -7)
  expect_equal(as_array(x), ifelse(a > 0, -7, a))
  v <- c(rnorm(3), NaN, Inf, -Inf)
  x <- dbl(v)
  x$nan_to_num_(nan = 1, posinf = 2, neginf = -2)
  expect_equal(as_array(x), c(v[1:3], 1, 2, -2))
})

test_that("copy_, fill_ and zero_ write into self", {
  a <- random_array(2, 3)
  x <- torch_zeros(2, 3, dtype = torch_double())
  x$copy_(dbl(a))
  expect_equal(as_array(x), a)
  x$fill_(2.5)
  expect_equal(as_array(x), matrix(2.5, 2, 3))
  x$zero_()
  expect_equal(as_array(x), matrix(0, 2, 3))
})

test_that("an in-place method on a view writes into the tensor it views", {
  m <- random_array(3, 5)
  base <- dbl(m)
  v <- base$t()
  expect_false(v$is_contiguous())
  v$exp_()
  expect_equal(as_array(base), exp(m))
  expect_equal(as_array(v), t(exp(m)))
  base <- dbl(m)
  rows <- base$narrow(1, 2, 2)
  rows$mul_(dbl(c(1, 2, 3, 4, 5))$unsqueeze(1))
  expect_equal(as_array(base), rbind(m[1, ], sweep(m[2:3, ], 2, 1:5, `*`)))
  base <- dbl(m)
  col <- base[, 4]
  col$add_(10)
  expected <- m
  expected[, 4] <- m[, 4] + 10
  expect_equal(as_array(base), expected)
  # A transposed self with a transposed other.
  o <- random_array(3, 5)
  base <- dbl(m)
  base$t()$sub_(dbl(o)$t(), alpha = 2)
  expect_equal(as_array(base), m - 2 * o)
})

test_that("in-place methods keep self's dtype", {
  x <- torch_tensor(c(1.5, 2.25), dtype = torch_float())
  x$add_(torch_tensor(c(0.25, 1e-9), dtype = torch_double()))
  expect_equal(x$dtype, torch_float())
  expect_equal(as_array(x), c(1.75, 2.25), tolerance = 1e-6)
  i <- torch_tensor(c(3L, -4L, 7L), dtype = torch_int())
  i$mul_(torch_tensor(c(2, 3, -1), dtype = torch_long()))$add_(5L)
  expect_equal(i$dtype, torch_int())
  expect_identical(as_array(i), c(11L, -7L, -2L))
  i$abs_()$neg_()
  expect_identical(as_array(i), c(-11L, -7L, -2L))
  i$clamp_(-8L, -3L)
  expect_identical(as_array(i), c(-8L, -7L, -3L))
  f <- dbl(c(1, 2, 3))
  f$gt_(2)
  expect_equal(f$dtype, torch_double())
  expect_equal(as_array(f), c(0, 0, 1))
  b <- torch_tensor(c(TRUE, FALSE, TRUE))
  b$logical_and_(torch_tensor(c(TRUE, TRUE, FALSE)))
  expect_equal(b$dtype, torch_bool())
  expect_identical(as_array(b), c(TRUE, FALSE, FALSE))
})

test_that("a floating result cannot be written into an integer tensor", {
  i <- torch_tensor(c(3L, 4L), dtype = torch_int())
  expect_error(i$div_(2L), "div_: result type Float can't be cast to self's dtype Int", class = "rcuda_dtype_error")
  expect_error(i$sqrt_(), "sqrt_: result type Float can't be cast to self's dtype Int", class = "rcuda_dtype_error")
  expect_error(i$add_(0.5), "add_: result type .* can't be cast to self's dtype Int", class = "rcuda_dtype_error")
  expect_error(i$mul_(dbl(c(1, 2))), "mul_: result type Double can't be cast to self's dtype Int", class = "rcuda_dtype_error")
  expect_identical(as_array(i), c(3L, 4L))
  b <- torch_tensor(c(TRUE, FALSE))
  expect_error(b$add_(torch_tensor(c(1L, 2L), dtype = torch_int())), "add_: result type Int can't be cast to self's dtype Bool", class = "rcuda_dtype_error")
  expect_identical(as_array(b), c(TRUE, FALSE))
})

test_that("an in-place method cannot grow self by broadcasting", {
  x <- dbl(c(1, 2, 3))
  expect_error(x$add_(dbl(matrix(1, 2, 3))), "add_: the result has shape \\[2, 3\\] but self has shape \\[3\\]",
               class = "rcuda_shape_error")
  expect_equal(as_array(x), c(1, 2, 3))
})

test_that("a leaf that requires grad cannot be changed in place while grad mode is on", {
  w <- torch_tensor(c(0.5, -1), dtype = torch_double(), requires_grad = TRUE)
  expect_error(w$exp_(), "exp_: a leaf Variable that requires grad is being used in an in-place operation",
               class = "rcuda_value_error")
  expect_error(w$add_(1), "add_: a leaf Variable that requires grad", class = "rcuda_value_error")
  expect_equal(as_array(w), c(0.5, -1))
  with_no_grad(w$mul_(4))
  expect_equal(as_array(w), c(2, -4))
  expect_true(w$is_leaf)
  expect_true(w$requires_grad)
})

test_that("gradients flow through in-place methods on non-leaves", {
  a <- random_array(2, 3)
  b <- positive(2, 3)
  w <- random_array(2, 3)
  x <- dbl(a)$requires_grad_()
  z <- dbl(b)$requires_grad_()
  y <- x * 2
  y$exp_()
  y$mul_(z)
  expect_false(y$is_leaf)
  g <- autograd_grad(sum(y * dbl(w)), list(x, z))
  expect_equal(as_array(g[[1]]), 2 * exp(2 * a) * b * w)
  expect_equal(as_array(g[[2]]), exp(2 * a) * w)

  # Self as other: y * y.
  y <- x * 1
  y$mul_(y)
  expect_equal(as_array(autograd_grad(sum(y * dbl(w)), list(x))[[1]]), 2 * a * w)

  # add_ with alpha, div_ by a tensor that requires grad, clamp_.
  y <- x * 1
  y$add_(z, alpha = 3)$div_(z)
  g <- autograd_grad(sum(y * dbl(w)), list(x, z))
  expect_equal(as_array(g[[1]]), w / b)
  expect_equal(as_array(g[[2]]), w * (3 / b - (a + 3 * b) / b^2))
  y <- x$mul(1)
  y$clamp_(-0.5, 0.5)$sigmoid_()
  s <- 1 / (1 + exp(-pmin(pmax(a, -0.5), 0.5)))
  y$sum()$backward()
  expect_equal(as_array(x$grad), s * (1 - s) * (abs(a) < 0.5))

  # A plain tensor written from one that requires grad joins the graph.
  p <- dbl(a)
  p$add_(z)
  expect_true(p$requires_grad)
  expect_equal(as_array(autograd_grad(sum(p * dbl(w)), list(z))[[1]]), w)
})

test_that("an in-place write is seen by autograd: a tensor saved before it refuses backward", {
  x <- dbl(random_array(3))$requires_grad_()
  y <- x * 2
  z <- y * y
  y$exp_()
  expect_error(sum(z)$backward(), "modified by an in-place operation")
})

test_that("a view of a tensor that requires grad cannot be changed in place while recording", {
  x <- dbl(random_array(2, 3))$requires_grad_()
  y <- x * 2
  expect_error(y$t()$exp_(), "exp_: in-place changes of a view are not recorded")
  expect_silent(with_no_grad(y$t()$exp_()))
})

test_that("$stride() and $storage_offset() give torch's layout in elements (numbers, as torch for R's)", {
  x <- torch_zeros(2, 3, 4)
  expect_identical(x$stride(), c(12, 4, 1))
  expect_identical(x$stride(2), 4)
  expect_identical(x$stride(-1), 1)
  expect_identical(x$storage_offset(), 0L)
  expect_identical(x$permute(c(3, 1, 2))$stride(), c(1, 12, 4))
  expect_identical(x$transpose(1, 3)$stride(), c(1, 4, 12))
  m <- torch_zeros(3, 5)
  expect_identical(m$t()$stride(), c(1, 5))
  s <- m$narrow(2, 3, 2)
  expect_identical(s$stride(), c(5, 1))
  expect_identical(s$storage_offset(), 2L)
  r <- m[2:3, ]
  expect_identical(r$stride(), c(5, 1))
  expect_identical(r$storage_offset(), 5L)
  col <- m[, 4]
  expect_identical(col$stride(), 5)
  expect_identical(col$storage_offset(), 3L)
  expect_identical(m[3, 2]$storage_offset(), 11L)
  expect_identical(torch_zeros(1, 3)$expand(c(4, 3))$stride(), c(0, 1))
  cl <- torch_zeros(2, 3, 4, 5)$contiguous(memory_format = torch_channels_last_format())
  expect_identical(cl$stride(), c(60, 1, 15, 3))
  expect_identical(torch_tensor(1)$squeeze()$stride(), numeric(0))
  expect_error(x$stride(4), "stride: dim: Dimension out of range (expected to be in range of [-3, 3], but got 4)", fixed = TRUE, class = "rcuda_index_error")
  expect_error(x$stride(0), "stride: dim: Dimension is 1-based, but found 0.", fixed = TRUE, class = "value_error")
})

test_that("clone copies and the dtype methods convert", {
  a <- random_array(2, 3)
  x <- dbl(a)
  cl <- x$clone()
  x$add_(1)
  expect_equal(as_array(cl), a)
  expect_equal(as_array(torch_clone(a)), a, tolerance = 1e-6)  # torch_tensor(a) is float32
  expect_equal(x$float()$dtype, torch_float())
  expect_equal(x$double()$dtype, torch_double())
  expect_equal(x$int()$dtype, torch_int())
  expect_equal(x$long()$dtype, torch_long())
  expect_equal(x$bool()$dtype, torch_bool())
  expect_equal(x$half()$dtype, torch_half())
  u <- torch_tensor(c(3.7, 200.2, 0))$byte()
  expect_equal(u$dtype, torch_uint8())
  expect_identical(as_array(u$int()), c(3L, 200L, 0L))
  expect_identical(as_array(dbl(c(-2.7, 0, 3.2))$int()), c(-2L, 0L, 3L))
})

# ---- CUDA ---------------------------------------------------------------------------------

test_that("CUDA: in-place methods match base R", {
  skip_if_cuda_not_available()
  check_unary_inplace("cuda")
  check_unary_inplace("cuda", torch_float())
  check_binary_inplace("cuda")
})

test_that("CUDA: in-place methods on views, dtypes, errors and gradients", {
  skip_if_cuda_not_available()
  m <- random_array(3, 5)
  base <- dbl(m, "cuda")
  base$t()$mul_(dbl(t(m), "cuda"))
  expect_equal(as_array(base$cpu()), m * m)
  base$narrow(1, 2, 1)$zero_()
  expect_equal(as_array(base$cpu()), rbind(m[1, ]^2, 0, m[3, ]^2))
  f <- torch_tensor(m, dtype = torch_float(), device = "cuda")
  f$add_(dbl(m, "cuda"))
  expect_equal(f$dtype, torch_float())
  expect_equal(as_array(f$cpu()), 2 * m, tolerance = 1e-6)
  i <- torch_tensor(c(3L, 4L), dtype = torch_int(), device = "cuda")
  expect_error(i$div_(2L), "div_: result type Float can't be cast to self's dtype Int", class = "rcuda_dtype_error")
  w <- torch_tensor(c(1, 2), device = "cuda", requires_grad = TRUE)
  expect_error(w$relu_(), "relu_: a leaf Variable that requires grad", class = "rcuda_value_error")
  a <- random_array(2, 3)
  x <- dbl(a, "cuda")$requires_grad_()
  y <- x * 2
  y$exp_()
  y$sum()$backward()
  expect_equal(as_array(x$grad$cpu()), 2 * exp(2 * a))
  expect_identical(torch_zeros(3, 5, device = "cuda")$t()$stride(), c(1, 5))
  expect_identical(torch_zeros(3, 5, device = "cuda")[2:3, ]$storage_offset(), 5L)
})

test_that("in-place views change the tensor itself, share its storage and carry gradients", {
  for (dev in test_devices()) {
    v <- matrix(rnorm(6), 2, 3)
    x <- torch_tensor(v, dtype = torch_double(), device = dev)
    same <- x                # the same R object
    flat <- x$view(6)        # a view made before: keeps its shape
    expect_identical(x$t_(), x)
    expect_equal(x$shape, c(3, 2))
    expect_equal(same$shape, c(3, 2))
    expect_equal(as.array(x$cpu()), t(v))
    expect_equal(flat$shape, 6)
    x[1, 2] <- 100           # x[1, 2] is the original's [2, 1]: the storage is shared
    expect_equal(as.array(flat$cpu())[4], 100)
    y <- torch_zeros(2, 1, 3, device = dev)
    y$squeeze_(2)
    expect_equal(y$shape, c(2, 3))
    y$unsqueeze_(1)
    expect_equal(y$shape, c(1, 2, 3))
    y$squeeze_()
    expect_equal(y$shape, c(2, 3))
    z <- torch_tensor(array(1:24, c(2, 3, 4)), device = dev)
    z$transpose_(1, 3)
    expect_equal(as.array(z$cpu()), aperm(array(1:24, c(2, 3, 4)), c(3, 2, 1)))
    z$swapdims_(1, 3)$swapaxes_(2, 3)
    expect_equal(z$shape, c(2, 4, 3))
    # A non-leaf: the view records, and the gradient reaches the leaf behind it.
    a <- torch_tensor(v, dtype = torch_double(), device = dev, requires_grad = TRUE)
    w <- matrix(rnorm(6), 3, 2)
    b <- a * 2
    b$t_()
    (b * torch_tensor(w, dtype = torch_double(), device = dev))$sum()$backward()
    expect_equal(as.array(a$grad$cpu()), 2 * t(w))
    # A leaf that requires grad keeps its shape, in either grad mode.
    expect_error(a$t_(), "t_: a leaf that requires grad cannot change its shape in place",
                 class = "rcuda_value_error")
    expect_error(with_no_grad(a$unsqueeze_(1)), "unsqueeze_: a leaf", class = "rcuda_value_error")
    expect_equal(a$shape, c(2, 3))
    expect_error(torch_ones(2, 3, device = dev)$transpose_(1, 4), class = "rcuda_error")
  }
})
