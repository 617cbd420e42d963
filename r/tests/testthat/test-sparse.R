# Sparse COO tensors (docs/sparse.md) against dense matrices built by base R.

# The dense matrix of 1-based indices and values, repeats summed, by a loop.
dense_of <- function(i, v, size) {
  m <- array(0, size)
  for (k in seq_along(v)) m[i[1, k], i[2, k]] <- m[i[1, k], i[2, k]] + v[k]
  m
}

test_that("torch_sparse_coo_tensor takes 1-based indices and to_dense sums repeats", {
  i <- rbind(c(1, 2, 2, 1), c(3, 1, 3, 3))  # (1, 3) twice
  v <- c(1.5, -2, 4, 0.25)
  x <- torch_sparse_coo_tensor(i, v, c(2, 3))
  expect_true(is_torch_tensor(x))
  expect_true(x$is_sparse())
  expect_false(torch_ones(2)$is_sparse())
  expect_equal(x$shape, c(2, 3))
  expect_equal(dim(x), c(2, 3))
  expect_equal(x$nnz, 4)
  expect_equal(x$sparse_dim(), 2)
  expect_equal(x$dense_dim(), 0)
  expect_false(x$is_coalesced())
  expect_equal(as_array(x$to_dense()), dense_of(i, v, c(2, 3)), tolerance = 1e-6)
  # Size inferred from the largest index.
  expect_equal(torch_sparse_coo_tensor(i, v)$shape, c(2, 3))
  # Integer indices, an int64 tensor and double values of dtype float64.
  y <- torch_sparse_coo_tensor(torch_tensor(i, dtype = torch_long()), torch_tensor(v, dtype = torch_float64()), c(3, 4))
  expect_equal(as_array(y$to_dense()), dense_of(i, v, c(3, 4)))
  expect_true(y$dtype == torch_float64())
})

test_that("coalesce sorts the entries and sums repeats; indices() is 1-based", {
  i <- rbind(c(2, 1, 2, 1), c(1, 3, 1, 2))
  v <- c(1, 2, 3, 4)
  x <- torch_sparse_coo_tensor(i, v, c(2, 3))
  expect_error(x$indices(), "uncoalesced")
  c <- x$coalesce()
  expect_true(c$is_coalesced())
  expect_equal(as_array(c$indices()), rbind(c(1, 1, 2), c(2, 3, 1)))
  expect_equal(as_array(c$values()), c(4, 2, 4))
  expect_true(c$indices()$dtype == torch_long())
  expect_equal(as_array(c$to_dense()), dense_of(i, v, c(2, 3)))
})

test_that("to_sparse keeps the nonzeros and round-trips", {
  m <- matrix(c(0, 1, 0, 0, 0, 2.5, -3, 0, 0, 0, 0, 4), 3, 4)
  x <- torch_tensor(m)$to_sparse()
  expect_true(x$is_coalesced())
  expect_equal(x$nnz, sum(m != 0))
  nz <- which(t(m) != 0, arr.ind = TRUE)  # row-major order, as torch's
  expect_equal(as_array(x$indices()), t(nz[, 2:1, drop = FALSE]), ignore_attr = TRUE)
  expect_equal(as_array(x$values()), t(m)[t(m) != 0], tolerance = 1e-6)
  expect_equal(as_array(x$to_dense()), m, tolerance = 1e-6)
  # One sparse dim: rows with any nonzero.
  r <- torch_tensor(m)$to_sparse(sparse_dim = 1)
  expect_equal(r$nnz, sum(rowSums(m != 0) > 0))
  expect_equal(r$dense_dim(), 1)
  expect_equal(as_array(r$to_dense()), m, tolerance = 1e-6)
})

test_that("no entries", {
  x <- torch_sparse_coo_tensor(matrix(0L, 2, 0), numeric(0), c(2, 3))
  expect_equal(x$nnz, 0)
  expect_equal(as_array(x$to_dense()), matrix(0, 2, 3))
  expect_equal(as_array(torch_sparse_mm(x, torch_ones(3, 2))), matrix(0, 2, 2))
})

test_that("sparse-dense products match base R's %*%", {
  set.seed(1)
  n <- 5; m <- 4; k <- 3
  i <- rbind(sample(n, 12, TRUE), sample(m, 12, TRUE))
  v <- rnorm(12)
  b <- matrix(rnorm(m * k), m, k)
  want <- dense_of(i, v, c(n, m)) %*% b
  for (dtype in list(torch_float32(), torch_float64())) {
    x <- torch_sparse_coo_tensor(i, v, c(n, m), dtype = dtype)
    d <- torch_tensor(b, dtype = dtype)
    tol <- if (dtype == torch_float32()) 1e-5 else 1e-12
    expect_equal(as_array(torch_sparse_mm(x, d)), want, tolerance = tol)
    expect_equal(as_array(torch_mm(x, d)), want, tolerance = tol)
    expect_equal(as_array(torch_matmul(x, d)), want, tolerance = tol)
    expect_equal(as_array(x$mm(d)), want, tolerance = tol)
    expect_equal(as_array(x %*% d), want, tolerance = tol)
  }
})

test_that("gradients of the product: the dense side against finite differences, the values exactly", {
  set.seed(2)
  i <- rbind(c(1, 3, 2, 3, 1), c(2, 1, 2, 2, 2))
  v <- rnorm(5)
  b <- matrix(rnorm(6), 2, 3)
  w <- matrix(rnorm(9), 3, 3)
  x <- torch_sparse_coo_tensor(i, v, c(3, 2), dtype = torch_float64(), requires_grad = TRUE)
  expect_true(x$requires_grad)
  d <- torch_tensor(b, dtype = torch_float64(), requires_grad = TRUE)
  loss <- (torch_sparse_mm(x, d) * torch_tensor(w, dtype = torch_float64()))$sum()
  loss$backward()
  a <- dense_of(i, v, c(3, 2))
  f <- function(bb) sum((a %*% bb) * w)
  expect_equal(as_array(d$grad), numeric_grad(f, b), tolerance = 1e-6)  # (helper-gradcheck.R)
  want_v <- vapply(seq_along(v), function(e) sum(w[i[1, e], ] * b[i[2, e], ]), numeric(1))
  expect_equal(as_array(x$`_values`()$grad), want_v, tolerance = 1e-10)
})

test_that("nn_embedding(sparse = TRUE) trains with the dense gradient", {
  torch_manual_seed(3)
  e <- nn_embedding(5, 2, sparse = TRUE)
  input <- torch_tensor(c(1L, 3L, 3L), dtype = torch_long())
  e(input)$sum()$backward()
  expect_equal(as_array(e$weight$grad), rbind(c(1, 1), c(0, 0), c(2, 2), c(0, 0), c(0, 0)))
})

test_that("bad input is a clear error naming the function and the argument", {
  i <- rbind(c(1, 2), c(3, 4))
  expect_error(torch_sparse_coo_tensor(i, c(1, 2), c(2, 3)),
               "torch_sparse_coo_tensor: indices\\[2, 2\\] = 4 is out of range for size 3 of dim 2")
  expect_error(torch_sparse_coo_tensor(rbind(c(0, 1), c(1, 1)), c(1, 2)),
               "torch_sparse_coo_tensor: indices\\[1, 1\\] = 0 is out of range: indices count from 1")
  expect_error(torch_sparse_coo_tensor(torch_tensor(i, dtype = torch_float()), c(1, 2)),
               "torch_sparse_coo_tensor: indices must be an integer tensor")
  expect_error(torch_sparse_coo_tensor(i, c(1, 2, 3)), "values must have one row per column of indices")
  expect_error(torch_sparse_coo_tensor(i, c(1, 2), c(2, 4, 5)), "size \\[2, 4, 5\\] must have 2 entries")
  expect_error(torch_sparse_coo_tensor(i, c(1, 2), c(2, -4)), "size must be a vector of non-negative")
  x <- torch_sparse_coo_tensor(i, c(1, 2), c(2, 4))
  expect_error(torch_sparse_mm(x, torch_ones(3, 2)), "sparse_mm: shapes \\[2, 4\\] and \\[3, 2\\] cannot be multiplied")
  expect_error(torch_sparse_mm(x, torch_ones(4, 2, dtype = torch_float64())), "one dtype")
  expect_error(torch_sparse_mm(torch_ones(2, 4), torch_ones(4, 2)), "torch_sparse_mm: sparse must be a sparse tensor")
  expect_error(x$sum(), "sparse tensors have no method or field 'sum'; call \\$to_dense\\(\\) first")
  expect_error(x[1, 1], "cannot be indexed")
  expect_error(x + 1, "sparse tensors support no operator `\\+`")
  expect_error(torch_ones(2, 2)$to_sparse(sparse_dim = 3), "sparse_dim must be in \\[1, 2\\]")
})

test_that("printing shows the indices (1-based), the values and a sparse footer", {
  x <- torch_sparse_coo_tensor(rbind(c(1, 2), c(2, 1)), c(5, 6), c(2, 2))
  out <- capture.output(print(x))
  expect_equal(out[1], "torch_tensor")
  expect_equal(out[2], "[ SparseCPUFloatType{2,2} ]")
  expect_true(any(grepl("values:", out)))
})

test_that("sparse tensors move between devices", {
  skip_if(!cuda_is_available(), "no CUDA device")
  i <- rbind(c(1, 2, 2), c(3, 1, 3))
  x <- torch_sparse_coo_tensor(i, c(1, 2, 3), c(2, 3))$cuda()
  expect_true(x$is_cuda)
  expect_equal(as_array(torch_sparse_mm(x, torch_ones(3, 2, device = "cuda"))$cpu()),
               dense_of(i, c(1, 2, 3), c(2, 3)) %*% matrix(1, 3, 2), tolerance = 1e-6)
  expect_error(torch_sparse_mm(x, torch_ones(3, 2)), "device")
})
