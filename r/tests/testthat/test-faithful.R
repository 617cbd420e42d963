# Scripts written for torch for R give the same answers here: base generics with tensor
# arguments, $expand/$to, 1-based messages, devices and dtypes, test comparisons, argument
# checks and R values where tensors are expected. References are base R on the same values,
# or torch for R's documented behaviour (its R/operators.R, R/tensor.R, tests/testthat).

random_matrix <- function(n = sample(2:5, 1), m = sample(2:5, 1)) matrix(rnorm(n * m), n, m)

test_that("sum/prod/mean/max/min/any/all with dim and keepdim reduce along the dim (base apply)", {
  x <- random_matrix()
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(as_array(mean(a, dim = 1)), colMeans(x))
  expect_equal(as_array(mean(a, dim = 2)), rowMeans(x))
  expect_equal(as_array(mean(a, dim = 1, keepdim = TRUE)), matrix(colMeans(x), 1))
  expect_equal(as_array(mean(a)), mean(x))
  expect_equal(as_array(sum(a, dim = 1)), colSums(x))
  expect_equal(as_array(sum(a, dim = -1, keepdim = TRUE)), matrix(rowSums(x), ncol = 1))
  expect_equal(as_array(prod(a, dim = 2)), apply(x, 1, prod))
  mx <- max(a, dim = 2)
  expect_equal(as_array(mx[[1]]), apply(x, 1, max))
  expect_equal(as_array(mx[[2]]), apply(x, 1, which.max))
  expect_equal(as_array(min(a, dim = 1)[[1]]), apply(x, 2, min))
  b <- torch_tensor(x > 0)
  expect_equal(as_array(any(b, dim = 1)), apply(x > 0, 2, any))
  expect_equal(as_array(all(b, dim = 2, keepdim = TRUE)), matrix(apply(x > 0, 1, all), ncol = 1))
  # A non-contiguous view reduces the same.
  expect_equal(as_array(sum(a$t(), dim = 1)), rowSums(x))
})

test_that("max(a, b), min(a, b), sum(a, b) and prod(a, b) of tensors reduce over all arguments", {
  x <- rnorm(5)
  y <- rnorm(3)
  a <- torch_tensor(x, dtype = torch_double())
  b <- torch_tensor(y, dtype = torch_double())
  expect_equal(as_array(max(a, b)), max(x, y))
  expect_equal(as_array(min(a, b)), min(x, y))
  expect_equal(as_array(sum(a, b)), sum(x, y))
  expect_equal(as_array(prod(a, b)), prod(x, y))
  expect_equal(as_array(max(a, 10)), 10)
  expect_equal(as_array(range(a, b)), range(x, y))
  expect_error(sum(a, na.rm = TRUE), "na.rm")
  expect_error(sum(a, b, dim = 1), "one tensor")
})

test_that("$expand(size, implicit) reads a logical after the sizes as implicit", {
  v <- rnorm(3)
  x <- torch_tensor(v, dtype = torch_double())$view(c(1, 3))
  e <- x$expand(c(2, 2, 3), TRUE)
  expect_equal(e$shape, c(2L, 2L, 3L))
  expect_equal(as_array(e), aperm(array(rep(v, each = 4), c(2, 2, 3)), c(1, 2, 3)))
  expect_equal(x$expand(c(4, -1), implicit = FALSE)$shape, c(4L, 3L))
  expect_equal(x$expand(2, 3)$shape, c(2L, 3L))
})

test_that("$to(other = y) takes y's dtype and device; a dtype string is a dtype, never a device", {
  x <- torch_tensor(matrix(1:6, 2) + 0.5)
  y <- torch_tensor(1L)
  z <- x$to(other = y)
  expect_true(z$dtype == torch_long())
  expect_equal(as_array(z), matrix(1:6, 2) + 0L)  # a copy to int64 truncates, as torch
  expect_true(x$to(other = torch_tensor(1, dtype = torch_double()))$dtype == torch_double())
  expect_true(x$to(dtype = "double")$dtype == torch_double())
  expect_true(x$to("long")$dtype == torch_long())
  expect_error(x$to(dtype = "doubel"), "dtype \"doubel\" is not one rcuda knows",
               class = "rcuda_dtype_error")
  expect_error(x$to(other = y, dtype = torch_double()), "not both")
  expect_true(x$to(torch_double())$dtype == torch_double())
  expect_true(x$to(device = "cpu")$device == torch_device("cpu"))
  expect_true(x$to("cpu")$dtype == torch_float())
  # copy = TRUE gives new memory even when nothing changes.
  w <- x$to(copy = TRUE)
  w[1, 1] <- 100
  expect_equal(as_array(x)[1, 1], 1.5)
})

test_that("error messages count dims, tensors and positions from 1", {
  x <- torch_randn(2, 3)
  msg <- function(expr) tryCatch({ expr; NA_character_ }, error = conditionMessage)
  # In torch for R's words, which its tests and scripts match.
  expect_match(msg(x$sum(dim = 3)),
               "sum: Dimension out of range (expected to be in range of [-2, 2], but got 3)", fixed = TRUE)
  expect_match(msg(torch_sum(x, dim = -3)), "(expected to be in range of [-2, 2], but got -3)", fixed = TRUE)
  expect_match(msg(torch_mean(x, dim = 5)), "but got 5)", fixed = TRUE)
  expect_match(msg(torch_max(x, dim = 3)), "but got 3)", fixed = TRUE)
  expect_match(msg(torch_cat(list(x, torch_randn(3, 2)))),
               "except in dim 1: tensor 1 has \\[2, 3\\], tensor 2 has \\[3, 2\\]")
  expect_match(msg(torch_cat(list(x, torch_randn(2, 3), torch_randn(2, 4)), dim = 1)), "tensor 3 has \\[2, 4\\]")
  expect_match(msg(torch_stack(list(x, x), dim = 4)), "but got 4)", fixed = TRUE)
  expect_match(msg(x$transpose(1, 3)), "but got 3)", fixed = TRUE)
  expect_match(msg(x$permute(c(1, 1))), "dim 1 repeated in \\[1, 1\\]")
  expect_match(msg(torch_squeeze(x, 3)), "but got 3)", fixed = TRUE)
  expect_match(msg(torch_unsqueeze(x, 4)), "but got 4)", fixed = TRUE)
  expect_match(msg(torch_softmax(x, 3)), "but got 3)", fixed = TRUE)
  expect_match(msg(torch_narrow(x, 2, 3, 2)), "start 3 and length 2 out of range for dim 2 of size 3")
  expect_match(msg(torch_narrow(x, 3, 1, 1)), "but got 3)", fixed = TRUE)
  expect_match(msg(torch_index_select(x, 3, 1)), "but got 3)", fixed = TRUE)
  expect_match(msg(torch_flatten(x, 2, 1)), "start_dim 2 .*end_dim 1")
  expect_match(msg(torch_ones(2, 1)$expand(c(2, 3, 4))), "at dim")
  expect_false(grepl("dim 0|tensor 0", msg(torch_cat(list(x, torch_randn(3, 2))))))
  # The glue's own messages were 1-based already and stay so.
  expect_match(msg(torch_sum(x, dim = 0)), "dim 0 is not valid; dims start at 1")
})

test_that("`[<-` with two index tensors is an error, as torch for R", {
  x <- torch_zeros(3, 3)
  i <- torch_tensor(c(1L, 3L))
  j <- torch_tensor(c(1L, 2L))
  expect_error(x[i, j] <- 2, "Only one tensor is allowed in the index", class = "rcuda_index_error")
  expect_error(x[i, j] <- torch_tensor(2), "Only one tensor is allowed in the index")
  expect_error(x[torch_tensor(c(TRUE, FALSE, TRUE)), j] <- 1, "Only one tensor")
  expect_equal(as_array(x), matrix(0, 3, 3))  # nothing was written
  # One tensor, beside R vectors, is taken (torch for R's tests: x[mask, 1] <- y).
  m <- matrix(0, 3, 3)
  x[i, c(1, 2)] <- 2
  m[c(1, 3), c(1, 2)] <- 2
  expect_equal(as_array(x), m)
})

test_that("devices: index 0 is kept, length() is 1, $ refuses unknown names", {
  d <- torch_device("cpu", 0)
  expect_identical(d$index, 0L)
  expect_equal(d$type, "cpu")
  expect_equal(as.character(d), "cpu:0")
  expect_null(torch_device("cpu")$index)
  expect_null(torch_device("cuda")$index)
  expect_identical(torch_device("cuda:1")$index, 1L)
  expect_equal(length(torch_device("cpu")), 1L)
  expect_error(torch_device("cpu")$indx, "no field 'indx'")
  expect_true(torch_zeros(2, device = d)$device == torch_device("cpu"))
  expect_error(torch_device("cpu", 1), "cpu device index must be 0")
})

test_that("dtypes: == with a non-dtype is an error; $is_floating_point works; unknown $ is an error", {
  expect_error(NULL == torch_float64(), "not a dtype")
  expect_error(torch_float64() == "float64", "not a dtype")
  expect_true(torch_float() == torch_float32())
  expect_false(torch_float() != torch_float32())
  expect_true(torch_float()$is_floating_point)
  expect_true(torch_double()$is_floating_point)
  expect_true(torch_half()$is_floating_point)
  expect_false(torch_long()$is_floating_point)
  expect_false(torch_bool()$is_floating_point)
  expect_error(torch_float()$is_floating, "no field 'is_floating'")
  expect_equal(length(torch_float()), 1L)
})

test_that("a failing CPU allocation runs R's garbage collector before it fails", {
  collected <- new.env()
  collected$done <- FALSE
  local({
    e <- new.env()
    reg.finalizer(e, function(e) collected$done <- TRUE)
  })
  # More than any address space (512 PiB): it fails at once, after one full collection.
  expect_error(torch_empty(2^59, dtype = torch_uint8()), "could not allocate", class = "rcuda_oom_error")
  expect_true(collected$done)
})

test_that("all.equal() and testthat's expect_equal compare tensor values (editions 2 and 3)", {
  x <- rnorm(4)
  a <- torch_tensor(x, dtype = torch_double())
  expect_true(isTRUE(all.equal(a, torch_tensor(x, dtype = torch_double()))))
  expect_match(all.equal(a, torch_tensor(x + 1, dtype = torch_double())), "Mean relative difference")
  expect_true(isTRUE(all.equal(a, x)))
  local({
    local_edition(2)
    expect_failure(expect_equal(torch_tensor(1), torch_tensor(2)))
    expect_success(expect_equal(torch_tensor(c(1, 2)), torch_tensor(c(1, 2))))
  })
  skip_if_not_installed("waldo")
  local({
    local_edition(3)
    expect_success(expect_equal(torch_tensor(x), torch_tensor(x)))
    expect_success(expect_equal(torch_tensor(x)$t(), torch_tensor(x)))
  })
  # What waldo compares for a difference (a reported one would load diffobj, whose S4 `[`
  # methods change how later test files' indices are evaluated: Note [Eagerly evaluated indices]).
  proxy <- function(t) waldo::compare_proxy(t, "x")$object
  expect_equal(proxy(torch_tensor(x, dtype = torch_double())), list(x = x, device = "cpu", requires_grad = FALSE))
  expect_false(identical(proxy(torch_tensor(1)), proxy(torch_tensor(2))))
  expect_true(proxy(torch_tensor(1, requires_grad = TRUE))$requires_grad)
})

test_that("creation and reduction arguments are checked, naming the function and the argument", {
  r <- torch_randint(0, 10, size = list(32, 5))
  expect_equal(r$shape, c(32L, 5L))
  expect_true(all(as_array(r) >= 0 & as_array(r) < 10))
  expect_equal(torch_zeros(list(2, 3))$shape, c(2L, 3L))
  expect_equal(torch_full(list(2, 2), 7)$shape, c(2L, 2L))
  expect_equal(torch_randn(2, 3)$view(list(3, 2))$shape, c(3L, 2L))
  x <- torch_randn(3, 4)
  expect_error(torch_var(x, dim = "a"), "torch_var: dim must be whole numbers")
  expect_error(torch_sum(x, dim = "a"), "torch_sum: dim")
  expect_error(torch_max(x, dim = 1.5), "torch_max: dim must be a whole number")
  expect_error(torch_softmax(x, dim = c(1, 2)), "torch_softmax: dim must be a single number")
  # Named tensors (test-named-tensors.R): names are kept, never dropped; a wrong count is an error.
  expect_equal(torch_zeros(2, names = c("a"))$names, "a")
  expect_equal(torch_randn(2, 2, names = c("a", "b"))$names, c("a", "b"))
  expect_error(torch_full(2, 1, names = c("a", "b")), "torch_full: names must name each of the tensor's 1 dims")
  expect_error(torch_zeros("a"), "torch_zeros: size must be numbers")
  expect_error(torch_ones(2.5), "torch_ones: size must be whole numbers")
  expect_error(torch_ones(NA), "torch_ones: size must be")
  expect_error(torch_randint(0, 10, size = list("a")), "torch_randint: size must be numbers")
  expect_error(torch_randint(0, 10), "size is required")
  expect_error(x$reshape(list("a")), "size: expected a vector of whole numbers")
  expect_error(torch_linspace(0, 1, "a"), "torch_linspace: steps must be a whole number")
  expect_error(torch_arange("a", 3), "torch_arange: expected a number")
  expect_error(torch_squeeze(x, "a"), "squeeze: dim must be a number")
  expect_error(x$sum(dim = list("a")), "dim")
  for (e in list(tryCatch(torch_var(x, dim = "a"), error = identity),
                 tryCatch(torch_randint(0, 3, size = list(2, "b")), error = identity))) {
    expect_false(grepl("REAL()", conditionMessage(e), fixed = TRUE))
  }
})

test_that("R vectors and arrays where a tensor is expected become tensors, as torch_tensor() makes them", {
  expect_equal(as_array(torch_max(c(2, 1), other = c(1, 2))), pmax(c(2, 1), c(1, 2)))
  expect_equal(as_array(torch_min(c(2, 1), other = torch_tensor(c(1, 2)))), pmin(c(2, 1), c(1, 2)))
  m1 <- matrix(rnorm(6), 2)
  m2 <- matrix(rnorm(6), 2)
  s <- torch_stack(list(m1, m2))
  expect_equal(s$shape, c(2L, 2L, 3L))
  expect_equal(as_array(s[1, , ]), m1, tolerance = 1e-6)
  expect_equal(as_array(torch_cat(list(m1, torch_tensor(m2)), dim = 2)), cbind(m1, m2), tolerance = 1e-6)
  expect_equal(as_array(torch_exp(c(0, 1))), exp(c(0, 1)), tolerance = 1e-6)
  # float32 sums of a few normals: absolute bounds (a sum near 0 has no useful relative one).
  expect_lt(max(abs(as_array(torch_sum(m1, dim = 1)) - colSums(m1))), 1e-6)
  expect_lt(abs(as_array(torch_mean(m1)) - mean(m1)), 1e-6)
  expect_equal(as_array(torch_matmul(m1, t(m2))), m1 %*% t(m2), tolerance = 1e-5)
  expect_equal(as_array(torch_mul(c(1, 2, 3), 2)), c(2, 4, 6))
  expect_equal(as_array(torch_reshape(1:6, c(3, 2))), matrix(1:6, 3, byrow = TRUE))
  expect_equal(as_array(torch_where(c(TRUE, FALSE, TRUE), c(1, 2, 3), c(-1, -2, -3))), c(1, -2, 3))
  expect_equal(torch_zeros_like(m1)$shape, c(2L, 3L))
  expect_true(torch_tensor(1:3)$dtype == torch_long())
  expect_true(torch_abs(-2:2)$dtype == torch_long())  # integer data stays int64, as torch_tensor()
})

test_that("dtype arguments take torch for R's strings as well as dtypes", {
  strings <- list(float32 = torch_float32(), float = torch_float(), float64 = torch_float64(),
                  double = torch_double(), float16 = torch_float16(), half = torch_half(),
                  bfloat16 = torch_bfloat16(), uint8 = torch_uint8(), int8 = torch_int8(),
                  int16 = torch_int16(), short = torch_short(), int32 = torch_int32(),
                  int = torch_int(), int64 = torch_int64(), long = torch_long(),
                  bool = torch_bool())
  for (name in names(strings)) {
    expect_true(torch_empty(2, 3, dtype = name)$dtype == strings[[name]])
    expect_true(torch_tensor(c(1, 0), dtype = name)$dtype == strings[[name]])
  }
  expect_identical(as_array(torch_tensor(c(1.7, -2.2), dtype = "long")), c(1L, -2L))
  m <- nn_linear(2, 1)
  m$to(dtype = "double")
  expect_true(m$weight$dtype == torch_double())
  expect_true(torch_zeros(2, dtype = "cfloat")$dtype == torch_cfloat())
  expect_error(torch_zeros(2, dtype = "chalf"), "dtype \"chalf\" is not one rcuda knows",
               class = "rcuda_dtype_error")
  expect_error(torch_zeros(2, dtype = c("float", "double")), "dtype must be a torch dtype")
})

test_that("unbind, select, stride and arange over tensors follow torch for R", {
  xv <- random_array(3, 4)
  x <- torch_tensor(xv)
  parts <- torch_unbind(x, 2)
  expect_length(parts, 4)
  for (j in 1:4) expect_equal(as_array(parts[[j]]), xv[, j], tolerance = 1e-6)
  rows <- x$unbind()
  expect_length(rows, 3)
  expect_equal(as_array(rows[[3]]), xv[3, ], tolerance = 1e-6)
  expect_equal(as_array(x$select(2, 4)), xv[, 4], tolerance = 1e-6)
  expect_equal(as_array(torch_select(x, -1, 1)), xv[, 1], tolerance = 1e-6)
  expect_identical(x$stride(), c(4, 1))
  expect_identical(x$t()$stride(2), 4)
  expect_identical(as_array(torch_arange(torch_tensor(1), torch_tensor(10), torch_tensor(2))),
                   as_array(torch_arange(1, 10, 2)))
  expect_length(as_array(torch_arange(torch_tensor(10), torch_tensor(1), torch_tensor(-1))), 10)
  expect_error(torch_unbind(x, 3), "torch_unbind: dim: Dimension out of range (expected to be in range of [-2, 2], but got 3)", fixed = TRUE)
})

test_that("$uniform_(), $normal_() and $data() fill and reach a parameter as torch for R's", {
  torch_manual_seed(11)
  w <- torch_zeros(20000, requires_grad = TRUE)
  expect_error(w$uniform_(-1, 1), "uniform_: a leaf Variable that requires grad", class = "rcuda_value_error")
  with_no_grad(w$uniform_(-2, 3))
  u <- as_array(w)
  expect_true(all(u >= -2 & u < 3))
  expect_equal(mean(u), 0.5, tolerance = 0.05)
  expect_true(w$requires_grad)
  # $data() shares the values outside the graph: filling it fills the parameter.
  d <- w$data()
  expect_false(d$requires_grad)
  d$normal_(5, 0.5)
  n <- as_array(w)
  expect_equal(c(mean(n), sd(n)), c(5, 0.5), tolerance = 0.02)
  expect_error(w$normal_(generator = 1), "generator is not supported")
})

test_that("nnf_normalize(out =) writes the result into out, and refuses what it cannot do", {
  xv <- matrix(rnorm(12), 3, 4)
  x <- torch_tensor(xv, dtype = torch_float64())
  out <- torch_empty(3, 4, dtype = torch_float64())
  returned <- nnf_normalize(x, p = 1, dim = 1, out = out)
  expect_equal(as_array(out), sweep(xv, 2, pmax(colSums(abs(xv)), 1e-12), "/"), tolerance = 1e-12)
  expect_identical(as_array(returned), as_array(out))
  expect_error(nnf_normalize(x, out = torch_empty(4, 3)), "out has shape \\[4, 3\\] but the result has shape \\[3, 4\\]")
  expect_error(nnf_normalize(x, out = 1), "out must be a tensor")
  expect_error(nnf_normalize(x$requires_grad_(TRUE), out = out), "records no gradient")
})

test_that("nnf_normalize divides by the p-norm along dim, at least eps", {
  xv <- rbind(random_array(4), rep(0, 4), random_array(4))
  x <- torch_tensor(xv, dtype = torch_float64())
  expect_equal(as_array(nnf_normalize(x)), xv / pmax(sqrt(rowSums(xv^2)), 1e-12))
  expect_equal(as_array(nnf_normalize(x, p = 1, dim = 1)),
               sweep(xv, 2, pmax(colSums(abs(xv)), 1e-12), "/"))
  expect_identical(as_array(nnf_normalize(x))[2, ], rep(0, 4))
})
