# Sparse CSR tensors (docs/sparse.md) against matrices and CSR arrays built by base R loops.

# The dense matrix of 0-based CSR arrays, by a loop over the rows.
dense_of_csr <- function(crow, col, v, size) {
  m <- matrix(0, size[1], size[2])
  for (r in seq_len(size[1])) {
    for (k in seq_len(crow[r + 1] - crow[r]) + crow[r]) m[r, col[k] + 1] <- v[k]
  }
  m
}

# The 0-based CSR arrays of an R matrix, row by row.
csr_of_dense <- function(m) {
  crow <- 0
  col <- integer(0)
  v <- numeric(0)
  for (r in seq_len(nrow(m))) {
    at <- which(m[r, ] != 0)
    col <- c(col, at - 1)
    v <- c(v, m[r, at])
    crow <- c(crow, length(col))
  }
  list(crow = crow, col = col, v = v)
}

# A random matrix with about half its entries zero and its second row (if any) all zero.
random_sparse_matrix <- function(n, m) {
  x <- matrix(rnorm(n * m) * (runif(n * m) < 0.5), n, m)
  if (n >= 2) x[2, ] <- 0
  x
}

test_that("torch_sparse_csr_tensor takes 0-based indices and to_dense matches a base R loop", {
  crow <- c(0, 2, 2, 3, 5)  # row 2 empty
  col <- c(0, 3, 1, 0, 2)
  v <- c(1.5, -2, 4, 0.25, 3)
  for (dtype in list(torch_float64(), torch_float32())) {
    x <- torch_sparse_csr_tensor(crow, col, v, c(4, 4), dtype = dtype)
    expect_true(is_torch_tensor(x))
    expect_true(x$is_sparse_csr())
    expect_false(x$is_sparse())
    expect_true(x$dtype == dtype)
    expect_equal(x$shape, c(4, 4))
    expect_equal(x$size(), c(4, 4))
    expect_equal(x$size(2), 4)
    expect_equal(dim(x), c(4, 4))
    expect_equal(x$nnz, 5)
    expect_equal(x$`_nnz`(), 5)
    expect_equal(x$ndim, 2)
    expect_equal(x$layout$name, "sparse_csr")
    expect_false(x$is_cuda)
    expect_equal(as_array(x$crow_indices()), crow)
    expect_equal(as_array(x$col_indices()), col)
    expect_true(x$crow_indices()$dtype == torch_long())
    expect_equal(as_array(x$values()), v, tolerance = 1e-6)
    expect_equal(as_array(x$to_dense()), dense_of_csr(crow, col, v, c(4, 4)), tolerance = 1e-6)
  }
  # Size inferred (rows from crow_indices, columns from the largest column); integer tensors.
  y <- torch_sparse_csr_tensor(torch_tensor(crow, dtype = torch_long()), torch_tensor(as.integer(col)),
                               torch_tensor(v, dtype = torch_float64()))
  expect_equal(y$shape, c(4, 4))
  expect_true(y$dtype == torch_float64())
  expect_equal(as_array(y$to_dense()), dense_of_csr(crow, col, v, c(4, 4)))
  expect_equal(as_array(y$to_dense(dtype = torch_float32())), dense_of_csr(crow, col, v, c(4, 4)), tolerance = 1e-6)
})

test_that("to_sparse_csr of random dense matrices gives the arrays a base R loop gives", {
  for (trial in 1:5) {
    n <- sample(1:7, 1)
    m <- sample(1:7, 1)
    a <- random_sparse_matrix(n, m)
    want <- csr_of_dense(a)
    x <- torch_tensor(a, dtype = torch_float64())$to_sparse_csr()
    expect_equal(as_array(x$crow_indices()), want$crow)
    expect_equal(as_array(x$col_indices()), want$col)
    expect_equal(as_array(x$values()), want$v)
    expect_equal(as_array(x$to_dense()), a)
    # The arrays back through the constructor give the same matrix, in float32 too.
    y <- torch_sparse_csr_tensor(want$crow, want$col, want$v, c(n, m), dtype = torch_float32())
    expect_equal(as_array(y$to_dense()), a, tolerance = 1e-6)
  }
})

test_that("all-zero, 0x0, 0-row and 0-column matrices convert and multiply", {
  z <- torch_zeros(3, 4, dtype = torch_float64())$to_sparse_csr()
  expect_equal(as_array(z$crow_indices()), c(0, 0, 0, 0))
  expect_equal(z$nnz, 0)
  expect_equal(as_array(z$to_dense()), matrix(0, 3, 4))
  expect_equal(as_array(torch_mm(z, torch_ones(4, 2, dtype = torch_float64()))), matrix(0, 3, 2))
  expect_equal(z$to_sparse()$nnz, 0)
  for (size in list(c(0, 0), c(0, 3), c(3, 0))) {
    x <- torch_zeros(size[1], size[2])$to_sparse_csr()
    expect_equal(x$shape, size)
    expect_equal(as_array(x$crow_indices()), rep(0, size[1] + 1))
    expect_equal(dim(as_array(x$to_dense())), size)
    y <- torch_sparse_csr_tensor(rep(0, size[1] + 1), integer(0), numeric(0), size)
    expect_equal(dim(as_array(y$to_dense())), size)
  }
  expect_equal(torch_sparse_csr_tensor(0, integer(0), numeric(0))$shape, c(0, 0))
})

test_that("round trips: dense -> CSR -> dense and COO -> CSR -> COO", {
  for (device in test_devices()) {
    a <- random_sparse_matrix(5, 6)
    d <- torch_tensor(a, dtype = torch_float64(), device = device)
    x <- d$to_sparse_csr()
    expect_equal(x$device$type, device)
    expect_equal(as_array(x$to_dense()$cpu()), a)
    # An uncoalesced COO tensor with a repeated entry: CSR sums it, as coalesce() does.
    i <- rbind(c(3, 1, 3, 2, 1), c(2, 4, 2, 1, 1))
    v <- c(1, 2, 3, 4, 5)
    coo <- torch_sparse_coo_tensor(i, v, c(4, 4), dtype = torch_float64(), device = device)
    csr <- coo$to_sparse_csr()
    expect_true(csr$is_sparse_csr())
    expect_equal(as_array(csr$crow_indices()$cpu()), c(0, 2, 3, 4, 4))
    expect_equal(as_array(csr$col_indices()$cpu()), c(0, 3, 0, 1))
    expect_equal(as_array(csr$values()$cpu()), c(5, 2, 4, 4))
    back <- csr$to_sparse()
    expect_true(back$is_sparse())
    expect_false(back$is_sparse_csr())
    expect_true(back$is_coalesced())
    expect_equal(as_array(back$indices()$cpu()), as_array(coo$coalesce()$indices()$cpu()))
    expect_equal(as_array(back$values()$cpu()), as_array(coo$coalesce()$values()$cpu()))
    expect_equal(as_array(csr$to_sparse(sparse_dim = 2)$to_dense()$cpu()), as_array(coo$to_dense()$cpu()))
    expect_true(identical(csr$to_sparse_csr(), csr))
  }
})

test_that("the product with a dense matrix matches base R %*%", {
  for (device in test_devices()) {
    for (dtype in list(torch_float64(), torch_float32())) {
      tol <- if (dtype == torch_float64()) 1e-10 else 1e-5
      a <- random_sparse_matrix(6, 5)
      b <- matrix(rnorm(5 * 3), 5, 3)
      want <- csr_of_dense(a)
      x <- torch_sparse_csr_tensor(want$crow, want$col, want$v, c(6, 5), dtype = dtype, device = device)
      d <- torch_tensor(b, dtype = dtype, device = device)
      expect_equal(as_array(torch_mm(x, d)$cpu()), a %*% b, tolerance = tol)
      expect_equal(as_array(x$mm(d)$cpu()), a %*% b, tolerance = tol)
      expect_equal(as_array(torch_matmul(x, d)$cpu()), a %*% b, tolerance = tol)
      expect_equal(as_array(x$matmul(d)$cpu()), a %*% b, tolerance = tol)
      expect_equal(as_array(torch_sparse_mm(x, d)$cpu()), a %*% b, tolerance = tol)
      expect_equal(as_array((x %*% d)$cpu()), a %*% b, tolerance = tol)
    }
  }
})

test_that("gradients: the dense side against finite differences, the values exactly", {
  crow <- c(0, 2, 2, 3)
  col <- c(0, 1, 1)
  v <- c(2, -1, 3)
  b <- matrix(rnorm(4), 2, 2)
  w <- matrix(rnorm(6), 3, 2)  # weights of the loss sum(w * (S %*% b))
  x <- torch_sparse_csr_tensor(crow, col, v, c(3, 2), dtype = torch_float64(), requires_grad = TRUE)
  expect_true(x$requires_grad)
  expect_true(x$values()$requires_grad)
  d <- torch_tensor(b, dtype = torch_float64(), requires_grad = TRUE)
  loss <- (torch_mm(x, d) * torch_tensor(w, dtype = torch_float64()))$sum()
  loss$backward()
  s <- dense_of_csr(crow, col, v, c(3, 2))
  f <- function(bb) sum(w * (s %*% bb))
  expect_equal(as_array(d$grad), numeric_grad(f, b), tolerance = 1e-6)  # (helper-gradcheck.R)
  # d loss / d v_k = sum_j w[row_k, j] * b[col_k, j].
  row <- rep(seq_len(3), diff(crow))
  want_v <- vapply(seq_along(v), function(k) sum(w[row[k], ] * b[col[k] + 1, ]), numeric(1))
  expect_equal(as_array(x$values()$grad), want_v, tolerance = 1e-10)

  # Through to_dense: d sum(w2 * dense) / d v_k = w2[row_k, col_k].
  y <- torch_sparse_csr_tensor(crow, col, v, c(3, 2), dtype = torch_float64(), requires_grad = TRUE)
  w2 <- matrix(rnorm(6), 3, 2)
  (y$to_dense() * torch_tensor(w2, dtype = torch_float64()))$sum()$backward()
  expect_equal(as_array(y$values()$grad), w2[cbind(row, col + 1)], tolerance = 1e-12)
  expect_false(y$detach()$requires_grad)
})

test_that("is_sparse_csr is FALSE for dense and COO tensors; layouts differ", {
  expect_false(torch_randn(3, 3)$is_sparse_csr())
  coo <- torch_randn(3, 3)$to_sparse()
  expect_false(coo$is_sparse_csr())
  expect_equal(coo$layout$name, "sparse_coo")
  expect_equal(torch_sparse_csr()$name, "sparse_csr")
  expect_output(print(torch_sparse_csr()), "torch_sparse_csr")
})

test_that("print, $to(), head/tail and what CSR tensors refuse", {
  x <- torch_tensor(rbind(c(1, 0, 2), c(0, 0, 0), c(0, 3, 0)))$to_sparse_csr()
  out <- capture.output(print(x))
  expect_equal(out[1], "torch_tensor")
  expect_equal(out[2], "[ SparseCsrCPUFloatType{3,3} ]")
  expect_true(all(c("crow_indices:", "col_indices:", "values:") %in% out))
  expect_output(print(x$detach()$requires_grad_(TRUE)), "SparseCsrCPUFloatType\\{3,3\\} requires_grad")
  y <- x$to(dtype = torch_float64())
  expect_true(y$is_sparse_csr())
  expect_true(y$dtype == torch_float64())
  expect_equal(y$cpu()$device$type, "cpu")
  expect_equal(as_array(head(x, 2)$to_dense()), rbind(c(1, 0, 2), c(0, 0, 0)))
  expect_equal(as_array(tail(x, 1)$to_dense()), rbind(c(0, 3, 0)))
  expect_true(head(x, 2)$is_sparse_csr())
  for (f in list(as_array, as.array, as.matrix)) {
    expect_error(f(x), "Sparse tensors are not supported for as_array conversion.", fixed = TRUE)
  }
  expect_error(x + 1, "no operator `\\+`")
  expect_error(x[1, 1], "cannot be indexed")
  expect_error(x$abs(), "'abs'; call \\$to_dense\\(\\) first")
  expect_error(x$coalesce(), "'coalesce'; call \\$to_sparse\\(\\) first")
  expect_error(torch_mm(x, x), "sparse-sparse")
  expect_error(torch_randn(2, 2, 2)$to_sparse_csr(), "to_sparse_csr: only 2-D tensors .* got 3 dims")
  expect_error(torch_randn(2, 2)$to_sparse_csr(dense_dim = 1), "dense_dim must be NULL or 0")
  expect_error(torch_randn(2, 3, 2)$to_sparse()$to_sparse_csr(), "only 2-D sparse tensors")
  expect_error(x$to_sparse(sparse_dim = 1), "sparse_dim NULL or 2")
})

test_that("torch_sparse_csr_tensor refuses bad arrays, naming the argument and the values", {
  f <- function(crow, col, v = seq_along(col), size = NULL) torch_sparse_csr_tensor(crow, col, v, size)
  expect_error(f(c(1, 2, 3), c(0, 1)), "crow_indices must start at 0 .* got 1")
  expect_error(f(c(0, 2, 1, 3), c(0, 1, 2)), "crow_indices must not decrease, but entry 3 is 1 after 2")
  expect_error(f(c(0, 1, 3), c(0, 1)), "crow_indices must end at nnz = length\\(col_indices\\) = 2, got 3")
  expect_error(f(c(0, 1, 2), c(0, 3), size = c(2, 3)), "col_indices must be in \\[0, 3\\) .* entry 2 is 3")
  expect_error(f(c(0, 1, 2), c(0, -1)), "col_indices must be in \\[0, 1\\) .* entry 2 is -1")
  expect_error(f(c(0, 2), c(1, 0)), "must increase .* entries 1 and 2, both in row 1, are 1 then 0")
  expect_error(f(c(0, 2), c(1, 1)), "must increase .* are 1 then 1")
  expect_error(f(c(0, 1, 2), c(0, 1), v = c(1, 2, 3)), "one entry per column index \\(2\\), got 3")
  expect_error(f(c(0, 1, 2), c(0, 1), size = c(3, 2)), "crow_indices must have nrows \\+ 1 = 4 entries, got 3")
  expect_error(f(c(0, 1, 2), c(0, 1), size = c(2, 2, 2)), "size must have 2 entries")
  expect_error(f(numeric(0), integer(0)), "crow_indices must have nrows \\+ 1 entries, got none")
  expect_error(f(c(0, 1.5), 0), "crow_indices must be a vector of whole numbers")
  expect_error(f(c(0, 1), "a"), "col_indices must be a vector of whole numbers")
  expect_error(f(torch_tensor(c(0, 1)), 0), "crow_indices must be an integer tensor")
  expect_error(f(c(0, 1), torch_tensor(matrix(0L, 1, 1))), "col_indices must be 1-D")
  expect_error(torch_sparse_csr_tensor(c(0, 1), 0, torch_ones(1, 2)), "values must be 1-D")
  expect_error(torch_sparse_mm(torch_ones(2, 2), torch_ones(2, 2)), "sparse must be a sparse tensor")
})
