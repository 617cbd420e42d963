# torch_index(), torch_index_put() and torch_index_put_(): index tensors that broadcast
# together (PyTorch's x[i, j]), against base R's matrix indexing of the same array.

# Base R's reference: the elements (and trailing slices) of `a` at the rows of `positions`, a
# matrix with one column per indexed dim (1-based, already broadcast and flattened row-major).
picked_rows <- function(a, positions) {
  rest <- dim(a)[-seq_len(ncol(positions))]
  lapply(seq_len(nrow(positions)), function(r) {
    args <- c(as.list(positions[r, ]), rep(list(quote(expr = )), length(rest)))
    do.call(`[`, c(list(a), args, list(drop = TRUE)))
  })
}

test_that("torch_index gathers the broadcast positions, followed by the remaining dims", {
  a <- array(rnorm(4 * 5 * 3), c(4, 5, 3))
  x <- torch_tensor(a, dtype = torch_float64())
  i <- matrix(sample(4, 6, replace = TRUE), 2, 3)  # [2, 3]
  j <- sample(5, 3)                                 # [3], broadcast along i's first dim
  out <- torch_index(x, list(torch_tensor(i), torch_tensor(j)))
  expect_identical(out$shape, c(2L, 3L, 3L))
  got <- as_array(out)
  for (r in 1:2) for (k in 1:3) expect_identical(got[r, k, ], a[i[r, k], j[k], ])
  # One index tensor: whole slices, as x[i, , ] with the index tensor's shape in front.
  expect_identical(as_array(x$index(list(torch_tensor(c(3L, 1L))))), a[c(3, 1), , ])
  # Negative positions count from the end; R vectors are taken as index tensors.
  expect_identical(as_array(torch_index(x, list(c(-1, 1), c(2, -1)))), rbind(a[4, 2, ], a[1, 5, ]))
  # The test of torch for R's test-gen-namespace.R.
  y <- torch_randn(4, 4)
  expect_equal(torch_index(y, list(torch_tensor(1:2), torch_tensor(1:2))), torch_stack(list(y[1, 1], y[2, 2])))
})

test_that("a bool mask picks its TRUE positions over as many dims as it has", {
  a <- array(rnorm(3 * 4 * 2), c(3, 4, 2))
  mask <- matrix(runif(12) > 0.5, 3, 4)
  mask[2, 3] <- TRUE
  out <- as_array(torch_index(torch_tensor(a, dtype = torch_float64()), list(torch_tensor(mask))))
  rows <- which(t(mask), arr.ind = TRUE)[, 2:1, drop = FALSE]  # row-major order
  expect_identical(out, do.call(rbind, picked_rows(a, rows)))
})

test_that("torch_index_put writes or accumulates values; torch_index_put_ writes in place", {
  a <- matrix(rnorm(20), 4, 5)
  x <- torch_tensor(a, dtype = torch_float64())
  i <- c(1L, 3L, 3L, 4L)
  j <- c(2L, 5L, 5L, 1L)
  v <- c(10, 20, 30, 40)
  added <- a
  for (k in seq_along(i)) added[i[k], j[k]] <- added[i[k], j[k]] + v[k]
  out <- torch_index_put(x, list(torch_tensor(i), torch_tensor(j)), torch_tensor(v, dtype = torch_float64()),
                         accumulate = TRUE)
  expect_equal(as_array(out), added, tolerance = 1e-15)
  expect_identical(as_array(x), a)  # self unchanged

  distinct <- list(torch_tensor(c(1L, 4L)), torch_tensor(c(2L, 3L)))
  written <- a
  written[cbind(c(1, 4), c(2, 3))] <- 0
  expect_identical(as_array(torch_index_put(x, distinct, torch_tensor(0))), written)  # a number broadcasts
  expect_identical(as_array(x$index_put(distinct, 0)), written)
  # Whole rows, with values broadcast along them.
  rows <- a
  rows[c(2, 4), ] <- matrix(1:5, 2, 5, byrow = TRUE)
  expect_identical(as_array(torch_index_put(x, list(torch_tensor(c(2L, 4L))), torch_tensor(1:5))), rows)

  y <- torch_tensor(a, dtype = torch_float64())
  expect_identical(torch_index_put_(y, distinct, torch_tensor(0)), y)
  expect_identical(as_array(y), written)
  y$index_put_(distinct, torch_tensor(c(5, 6), dtype = torch_float64()), accumulate = TRUE)
  written[cbind(c(1, 4), c(2, 3))] <- c(5, 6)
  expect_identical(as_array(y), written)
})

test_that("gradients flow to self and values", {
  x <- torch_randn(3, 4, dtype = torch_float64(), requires_grad = TRUE)
  v <- torch_randn(2, dtype = torch_float64(), requires_grad = TRUE)
  idx <- list(torch_tensor(c(1L, 3L)), torch_tensor(c(2L, 2L)))
  (torch_index(x, idx) * torch_tensor(c(2, 3), dtype = torch_float64()))$sum()$backward()
  expected <- matrix(0, 3, 4)
  expected[1, 2] <- 2
  expected[3, 2] <- 3
  expect_identical(as_array(x$grad), expected)

  x$grad <- NULL
  out <- torch_index_put(x * 1, idx, v)
  out$sum()$backward()
  expected <- matrix(1, 3, 4)
  expected[cbind(c(1, 3), c(2, 2))] <- 0  # overwritten elements get no gradient
  expect_identical(as_array(x$grad), expected)
  expect_identical(as_array(v$grad), c(1, 1))
})

test_that("bad indices are errors naming the function, the entry and the value", {
  x <- torch_randn(3, 4)
  expect_error(torch_index(x, list()), "torch_index: indices must be a non-empty list", fixed = TRUE)
  expect_error(torch_index(x, list(torch_tensor(c(1L, 0L)))), "torch_index: indices for dim 1 count from 1: Indexing starts at 1 but found a 0.",
               fixed = TRUE)
  expect_error(torch_index(x, list(torch_tensor(1L), torch_tensor(5L))),
               "torch_index: index 5 is out of bounds for dimension 2 with size 4", fixed = TRUE)
  expect_error(torch_index(x, list(torch_tensor(1.5))), "torch_index: indices[[1]] must be an integer or bool tensor, got float32",
               fixed = TRUE)
  expect_error(torch_index(x, list(NULL, torch_tensor(1L))), "torch_index: indices[[1]] is NULL", fixed = TRUE)
  expect_error(torch_index(x, list(1L, 1L, 1L)), "torch_index: too many indices (3) for a tensor of 2 dims", fixed = TRUE)
  expect_error(torch_index(x, list(torch_tensor(1:2), torch_tensor(1:3))), "torch_index: shapes cannot be broadcast")
  expect_error(torch_index(x, list(torch_tensor(c(TRUE, FALSE)))), "torch_index: the mask indices[[1]] of shape [2] does not match",
               fixed = TRUE)
  expect_error(torch_index_put(x, list(torch_tensor(1:2)), torch_ones(3)),
               "torch_index_put: values of shape [3] cannot be broadcast to the selection's shape [2, 4]", fixed = TRUE)
  expect_error(torch_index_put(x, list(1L), 0, accumulate = NA), "torch_index_put: accumulate must be TRUE or FALSE, got NA",
               fixed = TRUE)
})
