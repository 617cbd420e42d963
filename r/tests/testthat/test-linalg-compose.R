# torch_einsum and the composed linalg_* functions against base R, on each device, with
# gradients against the analytic ones.

arr <- function(t) as_array(t$cpu())

test_that("torch_einsum matches base R for products, traces, diagonals and sums", {
  for (device in test_devices()) {
    a <- matrix(rnorm(12), 3, 4)
    b <- matrix(rnorm(20), 4, 5)
    c3 <- matrix(rnorm(10), 5, 2)
    sq <- matrix(rnorm(9), 3, 3)
    ta <- torch_tensor(a, dtype = torch_float64(), device = device)
    tb <- torch_tensor(b, dtype = torch_float64(), device = device)
    tc <- torch_tensor(c3, dtype = torch_float64(), device = device)
    tsq <- torch_tensor(sq, dtype = torch_float64(), device = device)
    expect_equal(arr(torch_einsum("ij,jk->ik", list(ta, tb))), a %*% b, tolerance = 1e-12)
    expect_equal(arr(torch_einsum("ij,jk", list(ta, tb))), a %*% b, tolerance = 1e-12)
    expect_equal(arr(torch_einsum("ij,jk,kl->il", list(ta, tb, tc))), a %*% b %*% c3, tolerance = 1e-12)
    expect_equal(arr(torch_einsum("ij->ji", ta)), t(a))
    expect_equal(arr(torch_einsum("ij->", ta)), sum(a), tolerance = 1e-12)
    expect_equal(arr(torch_einsum("ij->j", list(ta))), colSums(a), tolerance = 1e-12)
    expect_equal(arr(torch_einsum("ii", list(tsq))), sum(diag(sq)), tolerance = 1e-12)
    expect_equal(arr(torch_einsum("ii->i", list(tsq))), diag(sq), tolerance = 1e-12)
    expect_equal(arr(torch_einsum("i,j->ij", list(ta[, 1], tb[1, ]))), outer(a[, 1], b[1, ]), tolerance = 1e-12)
    expect_equal(arr(torch_einsum("ij,ij->i", list(ta, ta))), rowSums(a * a), tolerance = 1e-12)
    # Batched, and with broadcast "..." dims (a batch of 1 against a batch of 2).
    x <- array(rnorm(2 * 3 * 4), c(2, 3, 4))
    y <- array(rnorm(2 * 4 * 5), c(2, 4, 5))
    tx <- torch_tensor(x, dtype = torch_float64(), device = device)
    ty <- torch_tensor(y, dtype = torch_float64(), device = device)
    got <- arr(torch_einsum("bij,bjk->bik", list(tx, ty)))
    for (k in 1:2) expect_equal(got[k, , ], x[k, , ] %*% y[k, , ], tolerance = 1e-12)
    got <- arr(torch_einsum("...ij,...jk->...ik", list(tx[1:1, , ], ty)))
    expect_equal(dim(got), c(2, 3, 5))
    for (k in 1:2) expect_equal(got[k, , ], x[1, , ] %*% y[k, , ], tolerance = 1e-12)
    expect_equal(arr(torch_einsum("b...->...", list(tx))), apply(x, c(2, 3), sum), tolerance = 1e-12)
  }
})

test_that("torch_einsum carries gradients", {
  for (device in test_devices()) {
    a <- torch_randn(3, 4, dtype = torch_float64(), device = device, requires_grad = TRUE)
    b <- torch_randn(4, 2, dtype = torch_float64(), device = device, requires_grad = TRUE)
    w <- torch_randn(3, 2, dtype = torch_float64(), device = device)
    (torch_einsum("ij,jk->ik", list(a, b)) * w)$sum()$backward()
    expect_equal(arr(a$grad), arr(w) %*% t(arr(b)), tolerance = 1e-12)
    expect_equal(arr(b$grad), t(arr(a)) %*% arr(w), tolerance = 1e-12)
  }
})

test_that("torch_einsum names what is wrong with its equation", {
  a <- torch_randn(2, 3)
  expect_error(torch_einsum("ij,jk->ik", list(a)), "has 2 operands, tensors has 1", class = "rcuda_value_error")
  expect_error(torch_einsum("ijk->i", list(a)), "has 3 labels for an operand with 2 dims", class = "rcuda_value_error")
  expect_error(torch_einsum("ij,jk->ik", list(a, torch_randn(4, 2))), "label j has size 3 in one operand and 4",
               class = "rcuda_value_error")
  expect_error(torch_einsum("ij->q", list(a)), "output label q is in no operand", class = "rcuda_value_error")
  expect_error(torch_einsum("i1->i", list(a)), "must be letters", class = "rcuda_value_error")
  expect_error(torch_einsum("...i->i", list(a)), "output must have", class = "rcuda_value_error")
  expect_error(torch_einsum(1, list(a)), "equation must be one string", class = "rcuda_value_error")
})

test_that("linalg norms, multi_dot, cross and matrix_power match base R", {
  for (device in test_devices()) {
    m <- matrix(rnorm(12), 3, 4)
    t <- torch_tensor(m, dtype = torch_float64(), device = device)
    v <- as.vector(m)
    expect_equal(arr(linalg_vector_norm(t)), sqrt(sum(v^2)), tolerance = 1e-12)
    expect_equal(arr(linalg_vector_norm(t, ord = 3)), sum(abs(v)^3)^(1 / 3), tolerance = 1e-12)
    expect_equal(arr(linalg_vector_norm(t, ord = 1, dim = 2)), rowSums(abs(m)), tolerance = 1e-12)
    expect_equal(arr(linalg_vector_norm(t, ord = Inf)), max(abs(v)))
    expect_equal(arr(linalg_vector_norm(t, ord = -Inf, dim = 1, keepdim = TRUE)),
                 matrix(apply(abs(m), 2, min), 1))
    expect_equal(arr(linalg_vector_norm(t * (t > 0), ord = 0)), sum(v > 0))
    expect_equal(arr(linalg_matrix_norm(t)), norm(m, "F"), tolerance = 1e-12)
    expect_equal(arr(linalg_matrix_norm(t, ord = 1)), norm(m, "O"), tolerance = 1e-12)
    expect_equal(arr(linalg_matrix_norm(t, ord = Inf)), norm(m, "I"), tolerance = 1e-12)
    expect_equal(arr(linalg_matrix_norm(t, ord = -1)), min(colSums(abs(m))), tolerance = 1e-12)
    expect_equal(arr(linalg_norm(t)), norm(m, "F"), tolerance = 1e-12)
    expect_equal(arr(linalg_norm(t, ord = Inf)), norm(m, "I"), tolerance = 1e-12)
    expect_equal(arr(linalg_norm(t[1, ], ord = 1)), sum(abs(m[1, ])), tolerance = 1e-12)
    b <- matrix(rnorm(8), 4, 2)
    c3 <- matrix(rnorm(6), 2, 3)
    tb <- torch_tensor(b, dtype = torch_float64(), device = device)
    tc <- torch_tensor(c3, dtype = torch_float64(), device = device)
    expect_equal(arr(linalg_multi_dot(list(t, tb, tc))), m %*% b %*% c3, tolerance = 1e-12)
    expect_equal(arr(linalg_multi_dot(list(t[1, ], tb))), as.vector(m[1, ] %*% b), tolerance = 1e-12)
    x <- matrix(rnorm(6), 2, 3)
    y <- matrix(rnorm(6), 2, 3)
    cr <- arr(linalg_cross(torch_tensor(x, device = device), torch_tensor(y, device = device)))
    expect_equal(cr[1, ], c(x[1, 2] * y[1, 3] - x[1, 3] * y[1, 2], x[1, 3] * y[1, 1] - x[1, 1] * y[1, 3],
                            x[1, 1] * y[1, 2] - x[1, 2] * y[1, 1]), tolerance = 1e-6)
    s <- matrix(rnorm(9), 3, 3)
    ts <- torch_tensor(s, dtype = torch_float64(), device = device)
    expect_equal(arr(linalg_matrix_power(ts, 5)), s %*% s %*% s %*% s %*% s, tolerance = 1e-10)
    expect_equal(arr(linalg_matrix_power(ts, 1)), s)
    expect_equal(arr(linalg_matrix_power(ts, 0)), diag(3))
  }
})

test_that("negative matrix powers and the singular-value norms use the factorisations", {
  for (device in test_devices()) {
    m <- matrix(rnorm(9), 3, 3) + diag(3) * 3
    t <- torch_tensor(m, dtype = torch_float64(), device = device)
    expect_equal(arr(linalg_matrix_power(t, -1)), solve(m), tolerance = 1e-10)
    expect_equal(arr(linalg_matrix_power(t, -3)), solve(m %*% m %*% m), tolerance = 1e-10)
    d <- svd(m)$d
    expect_equal(arr(linalg_matrix_norm(t, "nuc")), sum(d), tolerance = 1e-10)
    expect_equal(arr(linalg_matrix_norm(t, 2)), max(d), tolerance = 1e-10)
    expect_equal(arr(linalg_matrix_norm(t, -2)), min(d), tolerance = 1e-10)
    expect_equal(arr(linalg_norm(t, 2)), norm(m, "2"), tolerance = 1e-10)
    # Batched, over chosen dims, keepdim.
    b <- array(rnorm(24), c(2, 3, 4))
    tb <- torch_tensor(b, dtype = torch_float64(), device = device)
    nuc <- arr(linalg_matrix_norm(tb, "nuc", dim = c(1, 3), keepdim = TRUE))
    expect_equal(dim(nuc), c(1, 3, 1))
    expect_equal(as.vector(nuc), sapply(1:3, function(j) sum(svd(b[, j, ])$d)), tolerance = 1e-10)
    # The nuclear norm's gradient is U Vh (for distinct nonzero singular values).
    x <- torch_tensor(m, dtype = torch_float64(), requires_grad = TRUE)
    linalg_matrix_norm(x, "nuc")$backward()
    s <- svd(m)
    expect_equal(as_array(x$grad), s$u %*% t(s$v), tolerance = 1e-8)
  }
})

test_that("linalg functions refuse what they cannot do, naming it", {
  a <- torch_randn(3, 3)
  expect_error(linalg_matrix_power(torch_randn(2, 3), 2), "square matrices", class = "rcuda_value_error")
  expect_error(linalg_matrix_norm(a, 3), "ord must be", class = "rcuda_value_error")
  expect_error(linalg_matrix_norm(torch_randn(3)), "at least 2 dims", class = "rcuda_value_error")
  expect_error(linalg_multi_dot(list(a)), "at least two tensors", class = "rcuda_value_error")
  expect_error(linalg_multi_dot(list(a, torch_randn(3, 3, 3), a)), "tensor 2 must be 2-d", class = "rcuda_value_error")
  expect_error(linalg_vector_norm(torch_tensor(1:3)), "floating", class = "rcuda_value_error")
  expect_equal(as_array(linalg_vector_norm(torch_tensor(c(3L, 4L)), dtype = torch_float64())), 5)
})
