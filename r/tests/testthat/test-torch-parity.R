# Small matches of torch for R's behaviour that its own test suite asserts (scripts/torch-suite.R,
# docs/torch-parity.md).

test_that("backends_mps_is_available() is FALSE: rcuda has no Metal backend", {
  expect_identical(backends_mps_is_available(), FALSE)
})

test_that("assigning a module's parameters or modules list is torch's runtime_error, with its words", {
  m <- nn_linear(2, 2)
  assignments <- list(parameters = quote(m$parameters <- list()), buffers = quote(m$buffers <- list()),
                      children = quote(m$children <- list()), modules = quote(m$modules <- list()))
  for (field in names(assignments)) {
    err <- tryCatch(eval(assignments[[field]]), error = identity)
    expect_s3_class(err, c("rcuda_value_error", "value_error", "runtime_error", "rcuda_error"))
    expect_match(conditionMessage(err), paste0("nn_module: \\$", field, " cannot be assigned. It's not possible to modify the ",
                                               field, " list"))
  }
  expect_error(m$parameters$weight <- torch_tensor(1), "It's not possible", class = "runtime_error")
})

test_that("edition 3 comparisons of tensors see grad_fn, as torch for R's", {
  skip_if_not_installed("waldo")
  local_edition(3)
  x <- torch_tensor(c(1, 2), requires_grad = TRUE)
  proxy <- function(t) waldo::compare_proxy(t, "x")$object
  expect_null(proxy(x)$grad_fn)
  y <- x$clone()
  expect_equal(proxy(y)$grad_fn, y$grad_fn$name())
  expect_false(identical(proxy(x), proxy(x$clone())))
  expect_equal(proxy(torch_tensor(1)), list(x = 1, device = "cpu", requires_grad = FALSE))
})

test_that("integer64 values cross into int64 tensors and back exactly, as torch for R's", {
  skip_if_not_installed("bit64")
  values <- c("0", "-1", "9007199254740993", "-9223372036854775807", "4294967296", "2147483648", "-2147483648")
  x <- bit64::as.integer64(values)
  t <- torch_tensor(x)
  expect_equal(t$dtype, torch_int64())
  # Past 2^53, checked in the engine's int64 arithmetic rather than through doubles.
  expect_equal(as.numeric(as_array((t - torch_tensor(bit64::as.integer64("9007199254740992")))[3])), 1)
  back <- bit64::as.integer64(t)
  expect_s3_class(back, "integer64")
  expect_identical(as.character(back), values)
  expect_identical(as.character(bit64::as.integer64(torch_tensor(bit64::NA_integer64_))), NA_character_)
  m <- bit64::as.integer64(array(1:8, c(2, 2, 2)))
  dim(m) <- c(2, 2, 2)
  a <- bit64::as.integer64(torch_tensor(m))
  expect_s3_class(a, c("integer64", "array"))
  expect_equal(dim(a), c(2, 2, 2))
  expect_equal(as.integer(a), 1:8)
  expect_equal(torch_tensor(x, dtype = torch_float64())$dtype, torch_float64())
})

test_that("torch for R's words where its tests match them: conversions, deprecations", {
  words <- dataset(initialize = function() NULL, .getbatch = function(i) "a", .length = function() 4)
  expect_error(dataloader_next(dataloader_make_iter(dataloader(words(), batch_size = 2))),
               "dataloader: Can't convert data of class 'character' to a tensor", class = "value_error")
  a <- torch_eye(4, dtype = torch_float64())
  expect_warning(r <- linalg_matrix_rank(a, tol = 0.5), "`tol` is deprecated in favor of `atol` and `rtol`")
  expect_equal(as_array(r), 4)
  m <- matrix(c(2, 1, 1, 3), 2)
  expect_warning(p <- linalg_pinv(torch_tensor(m, dtype = torch_float64()), rcond = 1e-15), "`rcond` is deprecated")
  expect_equal(as_array(p), solve(m), tolerance = 1e-12)
})
