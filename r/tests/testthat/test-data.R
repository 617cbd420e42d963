# dataset(), tensor_dataset(), dataset_subset(): torch for R's semantics (Note [Dataset objects]
# in R/data.R), checked against base R indexing of the same values.

test_that("a dataset generator makes instances with self, private and active members", {
  counter <- 0
  squares <- dataset(
    name = "squares",
    initialize = function(n, offset = 0) {
      self$n <- n
      private$offset <- offset
      counter <<- counter + 1  # parent_env: the caller's variables are visible
    },
    .getitem = function(i) list(x = (i + private$offset)^2, i = i),
    .length = function() self$n,
    scale = 10,
    private = list(offset = NA),
    active = list(double_n = function() 2 * self$n)
  )
  expect_s3_class(squares, "dataset_generator")
  ds <- squares(5, offset = 1)
  expect_s3_class(ds, c("squares", "dataset"))
  expect_identical(counter, 1)
  expect_equal(length(ds), 5)
  expect_identical(ds[[3]], list(x = 16, i = 3L))
  expect_identical(ds[3], list(x = 16, i = 3L))  # no .getbatch: .getitem
  expect_identical(ds$scale, 10)
  expect_identical(ds$double_n, 10)
  ds$n <- 7
  expect_identical(ds$double_n, 14)
  expect_identical(ds[["scale"]], 10)
  expect_null(ds$private)  # private members stay private
  other <- squares(2)
  expect_equal(length(other), 2)
  expect_equal(length(ds), 7)  # instances do not share state
  expect_output(print(ds), "<dataset: squares> 7 samples")
})

test_that("inherit gives the parent's members, super its methods, and overrides win", {
  base <- dataset(
    name = "base",
    initialize = function(n) self$n <- n,
    .getitem = function(i) i,
    .length = function() self$n,
    describe = function() paste("base of", self$n)
  )
  child <- dataset(
    name = "child",
    inherit = base,
    initialize = function(n, k) {
      super$initialize(n)
      self$k <- k
    },
    .getitem = function(i) super$.getitem(i) * self$k,
    describe = function() paste("child;", super$describe())
  )
  grandchild <- dataset(name = "grandchild", inherit = child,
                        .getitem = function(i) -super$.getitem(i))
  ds <- child(4, 10)
  expect_s3_class(ds, c("child", "base", "dataset"))
  expect_equal(ds[[2]], 20)
  expect_equal(length(ds), 4)
  expect_identical(ds$describe(), "child; base of 4")
  g <- grandchild(3, 2)
  expect_identical(class(g), c("grandchild", "child", "base", "dataset"))
  expect_equal(g[[3]], -6)
  expect_identical(g$describe(), "child; base of 3")  # inherited through two levels
  expect_error(dataset(inherit = list()), "dataset generator", class = "rcuda_value_error")
})

test_that("`[` uses .getbatch when the dataset has one", {
  calls <- character()
  batched <- dataset(
    .getitem = function(i) { calls <<- c(calls, "item"); i },
    .getbatch = function(i) { calls <<- c(calls, "batch"); rev(i) },
    .length = function() 10
  )
  ds <- batched()
  expect_identical(ds[c(1, 4)], c(4L, 1L))
  expect_identical(ds[[2]], 2L)
  expect_identical(calls, c("batch", "item"))
  no_length <- dataset(.getitem = function(i) i)()
  expect_error(length(no_length), ".length", class = "rcuda_value_error")
})

test_that("tensor_dataset indexes every tensor along its first dim", {
  xa <- random_array(6, 3, 2)
  ya <- sample(1:6)
  ds <- tensor_dataset(x = torch_tensor(xa), y = torch_tensor(ya))
  expect_identical(length(ds), 6L)
  item <- ds[[4]]
  expect_named(item, c("x", "y"))
  expect_equal(as_array(item$x), xa[4, , ], tolerance = 1e-6)
  expect_identical(item$y$shape, integer(0))  # the sample drops the batch dim
  expect_identical(as_array(item$y), ya[4])
  batch <- ds[c(5, 2, 5)]
  expect_identical(batch$x$shape, c(3L, 3L, 2L))
  expect_equal(as_array(batch$x), xa[c(5, 2, 5), , ], tolerance = 1e-6)
  expect_identical(as_array(batch$y), ya[c(5, 2, 5)])
  one <- ds$.getbatch(3)  # a batch of one keeps its batch dim
  expect_identical(one$x$shape, c(1L, 3L, 2L))
  unnamed <- tensor_dataset(torch_tensor(xa), torch_tensor(ya))
  expect_null(names(unnamed[[1]]))
  expect_length(unnamed[[1]], 2)
})

test_that("tensor_dataset works on views and empty sample shapes", {
  m <- random_array(4, 5)
  ds <- tensor_dataset(torch_tensor(m)$t(), torch_zeros(5, 0))  # 5 samples of a transposed view
  expect_equal(as_array(ds[c(2, 5)][[1]]), t(m)[c(2, 5), ], tolerance = 1e-6)
  expect_identical(ds[c(2, 5)][[2]]$shape, c(2L, 0L))
})

test_that("tensor_dataset refuses bad tensors and indices, with 1-based messages", {
  expect_error(tensor_dataset(torch_zeros(3, 2), torch_zeros(4)), "same size", class = "rcuda_shape_error")
  expect_error(tensor_dataset(torch_zeros(3), 1:3), "tensor", class = "rcuda_value_error")
  expect_error(tensor_dataset(), "at least one", class = "rcuda_value_error")
  ds <- tensor_dataset(torch_zeros(3, 2))
  expect_error(ds[c(1, 4)], "index 4 is out of range for 3 samples", class = "rcuda_index_error")
  expect_error(ds[[0]], "index 0", class = "rcuda_index_error")
  expect_error(ds$.getitem(1.5), "index 1.5", class = "rcuda_index_error")
})

test_that("dataset_subset selects samples, keeping .getbatch", {
  xa <- random_array(8, 2)
  ds <- tensor_dataset(x = torch_tensor(xa))
  sub <- dataset_subset(ds, c(7, 2, 4))
  expect_identical(length(sub), 3L)
  expect_s3_class(sub, "tensor_dataset_subset")
  expect_true(is.function(sub$.getbatch))
  expect_equal(as_array(sub[c(1, 3)]$x), xa[c(7, 4), ], tolerance = 1e-6)
  # As in torch for R, a subset's sample comes through the dataset's `[`, so .getbatch's shape.
  expect_equal(as_array(sub[[2]]$x), xa[2, , drop = FALSE], tolerance = 1e-6)
  plain <- dataset(.getitem = function(i) i * 100, .length = function() 5)()
  psub <- dataset_subset(plain, c(5, 1))
  expect_null(psub$.getbatch)
  expect_identical(psub[[1]], 500)
  expect_error(dataset_subset(ds, c(1, 9)), "1..8", class = "rcuda_index_error")
})
