test_that("arithmetic matches base R, with broadcasting and scalars", {
  for (device in test_devices()) {
    x <- random_array(3, 4)
    y <- random_array(3, 4)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    b <- torch_tensor(y, dtype = torch_double(), device = device)
    expect_equal(as.array(a + b), x + y)
    expect_equal(as.array(a - b), x - y)
    expect_equal(as.array(a * b), x * y)
    expect_equal(as.array(a / b), x / y)
    expect_equal(as.array(a + 2), x + 2)
    expect_equal(as.array(2 - a), 2 - x)
    expect_equal(as.array(a^2), x^2)
    expect_equal(as.array(-a), -x)
    expect_equal(as.array(a %% 0.7), x %% 0.7)
    r <- rnorm(4)
    expect_equal(as.array(a + torch_tensor(r, dtype = torch_double(), device = device)), sweep(x, 2, r, "+"))
    expect_equal(as.array(a$add(b)), x + y)
    expect_equal(as.array(a$mul(b)), x * y)
    expect_equal(as.array(torch_add(a, b, alpha = 2)), x + 2 * y)
    expect_equal(as.array(torch_sub(a, b, alpha = 2)), x - 2 * y)
  }
})

test_that("comparisons and logical operators give bool tensors", {
  x <- random_array(5)
  y <- random_array(5)
  a <- torch_tensor(x, dtype = torch_double())
  b <- torch_tensor(y, dtype = torch_double())
  expect_identical(as.array(a > b), x > y)
  expect_identical(as.array(a <= b), x <= y)
  expect_identical(as.array(a == a), rep(TRUE, 5))
  expect_identical(as.array(a != 0), x != 0)
  expect_identical(as.array((a > 0) & (b > 0)), x > 0 & y > 0)
  expect_identical(as.array((a > 0) | (b > 0)), x > 0 | y > 0)
  expect_identical(as.array(!(a > 0)), !(x > 0))
  expect_true((a > b)$dtype == torch_bool())
})

test_that("Math group and torch_* functions match base R", {
  x <- abs(random_array(4, 3)) + 0.1
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(as.array(exp(a)), exp(x))
  expect_equal(as.array(log(a)), log(x))
  expect_equal(as.array(log(a, base = 2)), log(x, 2))
  expect_equal(as.array(log10(a)), log10(x))
  expect_equal(as.array(sqrt(a)), sqrt(x))
  expect_equal(as.array(abs(-a)), x)
  expect_equal(as.array(floor(a)), floor(x))
  expect_equal(as.array(ceiling(a)), ceiling(x))
  expect_equal(as.array(sin(a)), sin(x))
  expect_equal(as.array(cos(a)), cos(x))
  expect_equal(as.array(tanh(a)), tanh(x))
  expect_equal(as.array(torch_exp(a)), exp(x))
  expect_equal(as.array(a$sqrt()), sqrt(x))
  expect_equal(as.array(torch_sigmoid(a)), 1 / (1 + exp(-x)))
  expect_equal(as.array(torch_relu(a - 1)), pmax(x - 1, 0))
  expect_equal(as.array(torch_clamp(a, 0.5, 1)), pmin(pmax(x, 0.5), 1))
  expect_equal(as.array(torch_pow(a, 3)), x^3)
  expect_equal(as.array(torch_maximum(a, a * 0 + 1)), pmax(x, 1))
  expect_equal(as.array(torch_where(a > 1, a, 0)), ifelse(x > 1, x, 0))
  expect_error(trigamma(a), class = "rcuda_value_error")  # a Math member with no engine op
})

test_that("integer tensors promote as torch does", {
  i <- torch_tensor(1:4)
  expect_true((i + 1L)$dtype == torch_long())
  expect_true((i + 1.5)$dtype == torch_float())
  expect_true((i / 2L)$dtype == torch_float())
  expect_identical(as.array(i * 2L), c(2L, 4L, 6L, 8L))
})

test_that("shape mismatches raise rcuda_shape_error with the engine's message", {
  expect_error(torch_ones(2, 3) + torch_ones(4, 5), class = "rcuda_shape_error")
  err <- tryCatch(torch_matmul(torch_ones(2, 3), torch_ones(4, 5)), error = identity)
  expect_s3_class(err, c("rcuda_shape_error", "rcuda_error", "error", "condition"))
  expect_match(conditionMessage(err), "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)", fixed = TRUE)
})

test_that("value errors, from the engine and from R, also carry torch for R's class value_error", {
  from_engine <- tryCatch(torch_eye(-1), error = identity)
  from_r <- tryCatch(nn_linear(2, 1)$clone(deep = "yes"), error = identity)
  for (err in list(from_engine, from_r)) {
    expect_identical(class(err), c("rcuda_value_error", "value_error", "rcuda_error", "error",
                                   "condition"))
  }
  expect_identical(tryCatch(torch_eye(-1), value_error = function(e) "caught"),
                   "caught")
  shape <- tryCatch(torch_ones(2, 3) + torch_ones(4, 5), error = identity)
  expect_false(inherits(shape, "value_error"))
})

test_that("%/% floors as base R on doubles, with tensors or numbers on either side", {
  for (device in test_devices()) {
    x <- random_array(4, 5) * 10
    y <- random_array(4, 5)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    b <- torch_tensor(y, dtype = torch_double(), device = device)
    expect_equal(as.array(a %/% b), x %/% y)
    expect_equal(as.array(a %/% 0.7), x %/% 0.7)
    expect_equal(as.array(a %/% -0.7), x %/% -0.7)
    expect_equal(as.array(3.3 %/% b), 3.3 %/% y)
    r <- rnorm(5)
    expect_equal(as.array(a %/% r), sweep(x, 2, r, "%/%"))  # an R vector broadcasts
    expect_equal(as.array(torch_floor_divide(a, b)), x %/% y)
    expect_equal(as.array(a$floor_divide(b)), x %/% y)
    # floor and remainder agree: a == (a %/% b) * b + a %% b
    expect_equal(as.array((a %/% b) * b + a %% b), x)
    expect_true((a %/% b)$dtype == torch_double())
    expect_true((torch_tensor(x, device = device) %/% 2)$dtype == torch_float())
    # floor(1 / 0.1) would be 10; the exact quotient is below 10
    expect_equal(as.array(torch_tensor(1, dtype = torch_double(), device = device) %/% 0.1), 1 %/% 0.1)
  }
})

test_that("%/% of integer tensors stays integral and floors negative quotients", {
  for (device in test_devices()) {
    x <- sample(-50:50, 24, replace = TRUE)
    y <- sample(c(-7:-1, 1:7), 24, replace = TRUE)
    for (dtype in list(torch_long(), torch_int())) {
      a <- torch_tensor(x, dtype = dtype, device = device)
      b <- torch_tensor(y, dtype = dtype, device = device)
      expect_identical(as.array(a %/% b), x %/% y)
      expect_identical(as.array(a %/% 3L), x %/% 3L)
      expect_identical(as.array(-17L %/% b), -17L %/% y)
      expect_true((a %/% b)$dtype == dtype)
      expect_true((a %/% 3L)$dtype == dtype)
    }
    i <- torch_tensor(x, device = device)
    expect_true((i %/% 2)$dtype == torch_float())  # a double divisor, as torch
    expect_equal(as.array(i %/% 2), x %/% 2)
    u <- torch_tensor(c(0L, 7L, 200L, 255L), dtype = torch_uint8(), device = device)
    expect_identical(as.integer(u %/% 4L), c(0L, 7L, 200L, 255L) %/% 4L)
    # mixed widths promote: int32 by int64 gives int64
    expect_true((torch_tensor(x, dtype = torch_int(), device = device) %/% torch_tensor(y, device = device))$dtype == torch_long())
  }
})

test_that("%/% by zero: inf or NaN for floating dtypes, an rcuda error for integers", {
  for (device in test_devices()) {
    x <- c(-2.5, 0, 3)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    expect_identical(as.array(a %/% 0), x %/% 0)
    expect_identical(as.array(a %/% torch_zeros(3, dtype = torch_double(), device = device)), x %/% 0)
    i <- torch_tensor(c(5L, -3L), device = device)
    expect_error(i %/% 0L, class = "rcuda_value_error")
    expect_error(i %/% torch_tensor(c(1L, 0L), device = device), "floor_divide: integer division by zero")
    expect_error(torch_floor_divide(i, torch_tensor(0L, dtype = torch_int(), device = device)),
                 "divisor, of dtype int32, holds a 0")
    expect_error(torch_tensor(c(TRUE, FALSE)) %/% torch_tensor(c(TRUE, TRUE)),
                 "floor_divide: not supported for bool tensors", class = "rcuda_dtype_error")
  }
})

test_that("%/% on empty tensors and broadcast shapes", {
  e <- torch_zeros(0, 3, dtype = torch_double()) %/% torch_ones(3, dtype = torch_double())
  expect_equal(e$shape, c(0L, 3L))
  z <- torch_tensor(integer(0)) %/% 0L  # nothing is divided, so no division by zero
  expect_equal(z$shape, 0L)
  expect_true(z$dtype == torch_long())
  x <- random_array(3, 1)
  y <- random_array(1, 4)
  out <- torch_tensor(x, dtype = torch_double()) %/% torch_tensor(y, dtype = torch_double())
  expect_equal(as.array(out), outer(as.vector(x), as.vector(y), "%/%"))
  expect_error(torch_ones(2, 3) %/% torch_ones(4), class = "rcuda_shape_error")
})

test_that("a number on the left keeps its precision and promotes as torch", {
  x <- random_array(6)
  a <- torch_tensor(x, dtype = torch_double())
  expect_identical(as.array(0.7 - a), 0.7 - x)
  expect_identical(as.array(0.3 / a), 0.3 / x)
  expect_identical(as.array(torch_maximum(a, 0.1)), pmax(x, 0.1))
  i <- torch_tensor(1:4)
  expect_true((2.5 - i)$dtype == torch_float())
  expect_true((2L - i)$dtype == torch_long())
  expect_true((2.5 - torch_tensor(x, dtype = torch_float16()))$dtype == torch_float16())
})

test_that("every operator matches base R with tensors, numbers and R arrays on either side", {
  # Operators reach rcuda through S4 methods (Note [Operator dispatch] in R/s4.R), one per
  # operator and pair of sides; each pair is exercised here.
  x <- random_array(3, 4) + 2
  y <- random_array(3, 4) + 2
  a <- torch_tensor(x, dtype = torch_double())
  b <- torch_tensor(y, dtype = torch_double())
  for (op in c("+", "-", "*", "/", "^", "%%", "%/%", "==", "!=", "<", "<=", ">", ">=")) {
    f <- match.fun(op)
    expect_equal(as.array(f(a, b)), f(x, y), info = op)
    expect_equal(as.array(f(a, 1.5)), f(x, 1.5), info = op)
    expect_equal(as.array(f(1.5, b)), f(1.5, y), info = op)
    expect_equal(as.array(f(a, y)), f(x, y), info = op)  # an R array on one side
    expect_equal(as.array(f(x, b)), f(x, y), info = op)
  }
  p <- a > 2.5
  q <- b > 2.5
  expect_identical(as.array(p & q), x > 2.5 & y > 2.5)
  expect_identical(as.array(p | q), x > 2.5 | y > 2.5)
  expect_identical(as.array(p & TRUE), x > 2.5)
  expect_identical(as.array(FALSE | q), y > 2.5)
  expect_identical(as.array(!p), !(x > 2.5))
  expect_equal(as.array(-a), -x)
  expect_identical(+a, a)
  expect_true(isS4(a))
  expect_true(methods::existsMethod("+", c("rcuda_tensor", "rcuda_tensor"), where = rcuda:::operator_methods))
  # The hook that sets them is there once, whatever other hooks users add for the event.
  hooks <- getHook(packageEvent("rcuda", "onLoad"))
  expect_equal(sum(vapply(hooks, function(h) isTRUE(attr(h, "rcuda_operator_hook")), logical(1))), 1)
})

test_that("NA beside a tensor: NaN in floating arithmetic, a clear error elsewhere", {
  a <- torch_tensor(c(1, 2))
  for (na in list(NA, NA_integer_, NA_real_)) {
    expect_true(all(is.nan(as.array(a + na))))
    expect_true(all(is.nan(as.array(na * a))))
  }
  expect_error(torch_tensor(1:2) + NA, "NA cannot be combined with a tensor of dtype int64",
               class = "rcuda_value_error")
  expect_error(a == NA, "bool result cannot hold NA", class = "rcuda_value_error")
  expect_error(a & NA, class = "rcuda_value_error")
  expect_error("x" + a, "add: cannot combine a tensor with an R character", class = "rcuda_dtype_error")
  expect_error(a - list(1), "sub: cannot combine a tensor with an R list", class = "rcuda_dtype_error")
})

test_that("a number on either side: every operator and its gradient on every device", {
  # The number reaches the kernel by value (Note [Numbers as operands] in the engine); the values
  # match base R and the gradients their derivatives, on each side.
  x <- random_array(3, 4)^2 + 0.5
  grads <- list(
    "+" = list(function(x) 1 + 0 * x, function(x) 1 + 0 * x),
    "-" = list(function(x) 1 + 0 * x, function(x) -1 + 0 * x),
    "*" = list(function(x) 1.5 + 0 * x, function(x) 1.5 + 0 * x),
    "/" = list(function(x) 1 / 1.5 + 0 * x, function(x) -1.5 / x^2),
    "^" = list(function(x) 1.5 * x^0.5, function(x) 1.5^x * log(1.5)),
    "%%" = list(function(x) 1 + 0 * x, function(x) -floor(1.5 / x))
  )
  for (dev in test_devices()) {
    for (op in names(grads)) {
      f <- match.fun(op)
      a <- torch_tensor(x, dtype = torch_double(), device = dev, requires_grad = TRUE)
      out <- f(a, 1.5)
      expect_equal(as.array(out$cpu()), f(x, 1.5), info = paste(op, dev))
      out$sum()$backward()
      expect_equal(as.array(a$grad$cpu()), grads[[op]][[1]](x), info = paste(op, dev))
      b <- torch_tensor(x, dtype = torch_double(), device = dev, requires_grad = TRUE)
      out <- f(1.5, b)
      expect_equal(as.array(out$cpu()), f(1.5, x), info = paste(op, dev, "number first"))
      out$sum()$backward()
      expect_equal(as.array(b$grad$cpu()), grads[[op]][[2]](x), info = paste(op, dev, "number first"))
    }
    for (op in c("%/%", "==", "!=", "<", "<=", ">", ">=")) {
      f <- match.fun(op)
      a <- torch_tensor(x, dtype = torch_double(), device = dev)
      expect_equal(as.array(f(a, 1.5)$cpu()), f(x, 1.5), info = paste(op, dev))
      expect_equal(as.array(f(1.5, a)$cpu()), f(1.5, x), info = paste(op, dev))
    }
    i <- torch_tensor(c(5L, -7L, 9L), device = dev)
    expect_identical(as.array((i %% 4L)$cpu()), c(5L, -7L, 9L) %% 4L)
    expect_identical(as.array((i * 2L)$cpu()), c(10L, -14L, 18L))
    expect_true((i * 2.5)$dtype == torch_float())
    expect_error(i %% 0L, "remainder: integer division by zero", class = "rcuda_value_error")
    m <- torch_tensor(c(TRUE, FALSE), device = dev)
    expect_error(1 - m, "sub: subtraction with a bool tensor", class = "rcuda_dtype_error")
    expect_error(m - 1L, "sub: subtraction with a bool tensor", class = "rcuda_dtype_error")
    expect_equal(as.array((torch_ones(0, 3, device = dev) * 2)$cpu()), array(0, c(0, 3)))
  }
})
