# Named tensors (Note [Named tensors] in R/named-tensors.R): names at creation, $names,
# $has_names(), $rename()/$rename_(), which ops keep them, and dims given by name, against base
# R on the same values.

test_that("the creation functions take one name per dim and the tensor reports them", {
  makers <- list(
    zeros = function(names) torch_zeros(2, 3, names = names),
    ones = function(names) torch_ones(c(2, 3), names = names),
    empty = function(names) torch_empty(2, 3, names = names),
    full = function(names) torch_full(c(2, 3), 7, names = names),
    rand = function(names) torch_rand(2, 3, names = names),
    randn = function(names) torch_randn(2, 3, names = names)
  )
  for (maker in makers) {
    x <- maker(c("W", "H"))
    expect_identical(x$names, c("W", "H"))
    expect_true(x$has_names())
    expect_identical(x$shape, c(2L, 3L))
    y <- maker(NULL)
    expect_null(y$names)
    expect_false(y$has_names())
  }
  expect_identical(as_array(torch_full(c(2, 3), 7, names = c("a", "b"))), matrix(7, 2, 3))
  # NA leaves a dim unnamed; all NA is no names at all.
  expect_identical(torch_zeros(2, 3, names = c("a", NA))$names, c("a", NA))
  expect_null(torch_zeros(2, 3, names = c(NA, NA))$names)
})

test_that("bad names are errors naming the function and the argument", {
  expect_error(torch_randn(2, 3, names = "a"), "torch_randn: names must name each of the tensor's 2 dims, got 1 name",
               fixed = TRUE, class = "value_error")
  expect_error(torch_zeros(2, 3, names = c("a", "a")), "torch_zeros: names must not repeat a name, got \"a\" twice",
               fixed = TRUE)
  expect_error(torch_ones(2, 3, names = c("a", "")), "torch_ones: names must not hold empty names", fixed = TRUE)
  expect_error(torch_full(c(2, 3), 1, names = 1:2), "torch_full: names must be a character vector of dim names, got 1:2",
               fixed = TRUE)
  # Checked before anything is drawn: the random stream is where it was.
  torch_manual_seed(3)
  expect_error(torch_rand(2, names = c("a", "b")), "torch_rand: names")
  after_error <- as_array(torch_rand(2))
  torch_manual_seed(3)
  expect_identical(as_array(torch_rand(2)), after_error)
})

test_that("rename() returns a renamed view, rename_() renames in place", {
  x <- torch_randn(2, 3, names = c("W", "H"))
  y <- x$rename(W = "a")
  expect_identical(y$names, c("a", "H"))
  expect_identical(x$names, c("W", "H"))
  expect_identical(x$rename(W = "a", H = "b")$names, c("a", "b"))
  expect_identical(x$rename("p", "q")$names, c("p", "q"))
  expect_null(x$rename(NULL)$names)
  # A view: writing through it writes x.
  y[1, 1] <- 42
  expect_equal(x[1, 1]$item(), 42)

  alias <- x
  x$rename_(H = "h")
  expect_identical(x$names, c("W", "h"))
  expect_identical(alias$names, c("W", "h"))  # one handle, one set of names
  expect_identical(x$rename_(NULL), x)
  expect_null(x$names)
})

test_that("rename() errors name the dim and the tensor's names", {
  x <- torch_randn(2, 3, names = c("W", "H"))
  expect_error(x$rename(Z = "a"), "rename: \"Z\" is not a dim name of the tensor, whose names are c(\"W\", \"H\")",
               fixed = TRUE)
  expect_error(x$rename("a"), "rename: names must name each of the tensor's 2 dims, got 1 name", fixed = TRUE)
  expect_error(x$rename("a", "a"), "rename: names must not repeat a name", fixed = TRUE)
  expect_error(x$rename(W = "H"), "rename: names must not repeat a name, got \"H\" twice", fixed = TRUE)
  expect_error(x$rename(W = "a", "b"), "not a mix", fixed = TRUE)
  expect_error(x$rename(W = 1), "rename: names must be strings, got 1", fixed = TRUE)
  # torch for R's class for renaming a dim of a tensor without names.
  expect_error(torch_randn(2, 2)$rename(W = "a"), "the tensor has no names, so dim W cannot be renamed",
               class = "runtime_error")
})

test_that("clone, detach, to, contiguous and the conversions keep names; other ops drop them", {
  x <- torch_randn(2, 3, names = c("W", "H"), requires_grad = TRUE)
  keep <- list(x$clone(), x$detach(), x$to(dtype = torch_float64()), x$cpu(), x$contiguous(), x$double(),
               x$float(), x$long())
  for (y in keep) expect_identical(y$names, c("W", "H"))
  expect_equal(as_array(x$double()), as_array(x$detach()), tolerance = 0)
  for (y in list(x + 1, x * x, -x, exp(x), x$t(), x$sum(dim = 1), x[1, ], x$reshape(6))) expect_null(y$names)
  # The source keeps its names whatever its results do.
  expect_identical(x$names, c("W", "H"))
})

test_that("a dim given by name is its index in the reductions and torch_cat", {
  a <- array(rnorm(24), c(2, 3, 4))
  x <- torch_tensor(a, dtype = torch_float64())$rename("A", "B", "C")
  expect_equal(as_array(torch_sum(x, dim = "B")), apply(a, c(1, 3), sum), tolerance = 1e-12)
  expect_equal(as_array(x$mean(dim = c("A", "C"))), apply(a, 2, mean), tolerance = 1e-12)
  expect_equal(as_array(torch_var(x, dim = "C")), apply(a, c(1, 2), var), tolerance = 1e-12)
  expect_equal(as_array(torch_var_mean(x, dim = "A")[[2]]), apply(a, c(2, 3), mean), tolerance = 1e-12)
  expect_equal(as_array(torch_max(x, dim = "C")[[1]]), apply(a, c(1, 2), max), tolerance = 0)
  expect_equal(as_array(torch_argmax(x, dim = "A")), apply(a, c(2, 3), which.max), ignore_attr = TRUE)
  expect_equal(as_array(torch_softmax(x, dim = "C")), aperm(apply(a, c(1, 2), function(v) exp(v) / sum(exp(v))), c(2, 3, 1)),
               tolerance = 1e-12)

  b <- array(rnorm(32), c(2, 4, 4))
  y <- torch_tensor(b, dtype = torch_float64())$rename("A", "B", "C")
  joined <- torch_cat(list(x, y), dim = "B")
  expect_identical(joined$shape, c(2L, 7L, 4L))
  expect_equal(as_array(joined)[, 4:7, ], b, tolerance = 0)
  expect_identical(joined$names, c("A", "B", "C"))
  # Tensors with different names join, without names.
  expect_null(torch_cat(list(x, y$rename(C = "D")), dim = 2)$names)
})

test_that("a dim name the tensor lacks is an error naming it", {
  x <- torch_randn(2, 3, names = c("W", "H"))
  expect_error(torch_sum(x, dim = "Q"), "torch_sum: dim \"Q\" is not a dim name of the tensor, whose names are c(\"W\", \"H\")",
               fixed = TRUE)
  expect_error(torch_mean(torch_randn(2, 3), dim = "W"), "torch_mean: dim must be whole numbers (1-based; negative from the end) or names of a named tensor's dims; got \"W\", but the tensor has no names",
               fixed = TRUE)
  expect_error(torch_cat(list(x, x), dim = "Z"), "torch_cat: dim \"Z\" is not a dim name", fixed = TRUE)
  # As LibTorch: no norm over named dims.
  expect_error(torch_norm(x, dim = "W"), "not yet supported with named tensors", fixed = TRUE)
  expect_error(x$norm(dim = "H"), "not yet supported with named tensors", fixed = TRUE)
})
