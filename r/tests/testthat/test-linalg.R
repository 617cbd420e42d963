# The factorisations (R/linalg-factor.R) against base R (solve, det, chol, qr, svd, eigen) on
# fresh random inputs, on each device: batched inputs, empty batches, torch's result names,
# gradients against analytic ones, and errors.

arr <- function(t) as_array(t$cpu())
dev_tensor <- function(x, device, dtype = torch_float64()) torch_tensor(x, dtype = dtype, device = device)
well_conditioned <- function(n) matrix(rnorm(n * n), n, n) + diag(n) * n
spd <- function(n) {
  m <- matrix(rnorm(n * n), n, n)
  m %*% t(m) + diag(n)
}

test_that("linalg_solve, linalg_inv and linalg_det match base R, batched and broadcast", {
  for (device in test_devices()) {
    a <- well_conditioned(4)
    b <- matrix(rnorm(8), 4, 2)
    v <- rnorm(4)
    ta <- dev_tensor(a, device)
    expect_equal(arr(linalg_solve(ta, dev_tensor(b, device))), solve(a, b), tolerance = 1e-10)
    expect_equal(arr(linalg_solve(ta, dev_tensor(v, device))), solve(a, v), tolerance = 1e-10)
    expect_equal(arr(linalg_inv(ta)), solve(a), tolerance = 1e-10)
    expect_equal(arr(linalg_det(ta)), det(a), tolerance = 1e-10)
    sl <- linalg_slogdet(ta)
    expect_named(sl, c("sign", "logabsdet"))
    d <- determinant(a)
    expect_equal(arr(sl$sign), as.numeric(d$sign))
    expect_equal(arr(sl$logabsdet), as.numeric(d$modulus), tolerance = 1e-10)
    # A batch of 3 matrices against one right-hand side: batch dims broadcast.
    batch <- array(0, c(3, 4, 4))
    for (i in 1:3) batch[i, , ] <- well_conditioned(4)
    x <- arr(linalg_solve(dev_tensor(batch, device), dev_tensor(b, device)))
    expect_equal(dim(x), c(3, 4, 2))
    for (i in 1:3) expect_equal(x[i, , ], solve(batch[i, , ], b), tolerance = 1e-10)
    dets <- arr(linalg_det(dev_tensor(batch, device)))
    expect_equal(dets, sapply(1:3, function(i) det(batch[i, , ])), tolerance = 1e-10)
    # float32 too.
    expect_equal(arr(linalg_inv(dev_tensor(a, device, torch_float32()))), solve(a), tolerance = 1e-5)
  }
})

test_that("linalg_cholesky, linalg_qr, linalg_svd and linalg_eigh match base R", {
  for (device in test_devices()) {
    s <- spd(5)
    ts <- dev_tensor(s, device)
    expect_equal(arr(linalg_cholesky(ts)), t(chol(s)), tolerance = 1e-10)
    expect_equal(arr(linalg_cholesky(ts, upper = TRUE)), chol(s), tolerance = 1e-10)

    m <- matrix(rnorm(20), 5, 4)
    tm <- dev_tensor(m, device)
    q <- linalg_qr(tm)
    expect_named(q, c("Q", "R"))
    Q <- arr(q$Q)
    R <- arr(q$R)
    expect_equal(dim(Q), c(5, 4))
    expect_equal(Q %*% R, m, tolerance = 1e-10)
    expect_equal(crossprod(Q), diag(4), tolerance = 1e-10)
    expect_equal(abs(R), abs(qr.R(qr(m))), tolerance = 1e-10)  # unique up to the rows' signs
    expect_equal(dim(arr(linalg_qr(tm, mode = "complete")$Q)), c(5, 5))
    expect_equal(abs(arr(linalg_qr(tm, mode = "r")$R)), abs(R), tolerance = 1e-12)

    for (full in c(TRUE, FALSE)) {
      sv <- linalg_svd(tm, full_matrices = full)
      expect_named(sv, c("U", "S", "Vh"))
      ref <- svd(m)
      expect_equal(arr(sv$S), ref$d, tolerance = 1e-10)
      U <- arr(sv$U)
      Vh <- arr(sv$Vh)
      expect_equal(dim(U), if (full) c(5, 5) else c(5, 4))
      expect_equal(U[, 1:4] %*% diag(ref$d) %*% Vh[1:4, ], m, tolerance = 1e-10)
      # Columns agree with base R's up to sign.
      expect_equal(abs(U[, 1:4]), abs(ref$u), tolerance = 1e-8)
    }
    expect_equal(arr(linalg_svdvals(dev_tensor(t(m), device))), svd(m)$d, tolerance = 1e-10)

    e <- linalg_eigh(ts)
    expect_named(e, c("eigenvalues", "eigenvectors"))
    ref <- eigen(s, symmetric = TRUE)
    expect_equal(arr(e$eigenvalues), rev(ref$values), tolerance = 1e-10)
    V <- arr(e$eigenvectors)
    expect_equal(abs(V), abs(ref$vectors[, 5:1]), tolerance = 1e-8)
    expect_equal(arr(linalg_eigvalsh(ts, UPLO = "U")), rev(ref$values), tolerance = 1e-10)
  }
})

test_that("linalg_lu_factor and linalg_lu return torch's names, 1-based pivots and A = P L U", {
  for (device in test_devices()) {
    m <- matrix(rnorm(16), 4, 4)
    f <- linalg_lu_factor(dev_tensor(m, device))
    expect_named(f, c("LU", "pivots"))
    piv <- arr(f$pivots)
    expect_true(all(piv >= 1:4 & piv <= 4))
    expect_true(f$pivots$dtype == torch_int32())
    l <- linalg_lu(dev_tensor(m, device))
    expect_named(l, c("P", "L", "U"))
    expect_equal(arr(l$P) %*% arr(l$L) %*% arr(l$U), m, tolerance = 1e-10)
    # The pivots replay LAPACK's row swaps: applied to the identity they give P's transpose.
    perm <- 1:4
    for (j in 1:4) perm[c(j, piv[j])] <- perm[c(piv[j], j)]
    expect_equal(arr(l$P)[cbind(perm, 1:4)], rep(1, 4))
  }
})

test_that("linalg_lstsq, linalg_pinv, linalg_matrix_rank and linalg_cond match base R", {
  for (device in test_devices()) {
    a <- matrix(rnorm(24), 6, 4)
    b <- matrix(rnorm(12), 6, 2)
    ls <- linalg_lstsq(dev_tensor(a, device), dev_tensor(b, device))
    expect_named(ls, c("solution", "residuals", "rank", "singular_values"))
    ref <- qr.solve(a, b)
    expect_equal(arr(ls$solution), ref, tolerance = 1e-10)
    expect_equal(arr(ls$residuals), colSums((a %*% ref - b)^2), tolerance = 1e-10)
    expect_equal(arr(ls$rank), 4)
    expect_equal(arr(ls$singular_values), svd(a)$d, tolerance = 1e-10)

    p <- arr(linalg_pinv(dev_tensor(a, device)))
    expect_equal(p, solve(crossprod(a), t(a)), tolerance = 1e-10)
    low <- matrix(rnorm(6), 6, 1) %*% matrix(rnorm(4), 1, 4)
    expect_equal(arr(linalg_matrix_rank(dev_tensor(low, device))), 1)
    expect_equal(arr(linalg_matrix_rank(dev_tensor(a, device))), qr(a)$rank)
    sq <- well_conditioned(4)
    d <- svd(sq)$d
    expect_equal(arr(linalg_cond(dev_tensor(sq, device))), max(d) / min(d), tolerance = 1e-10)
    expect_equal(arr(linalg_cond(dev_tensor(sq, device), "fro")), norm(sq, "F") * norm(solve(sq), "F"), tolerance = 1e-10)
    expect_equal(arr(linalg_cond(dev_tensor(sq, device), 1)), norm(sq, "O") * norm(solve(sq), "O"), tolerance = 1e-10)
  }
})

test_that("linalg_householder_product, linalg_tensorinv and linalg_tensorsolve", {
  for (device in test_devices()) {
    a <- matrix(rnorm(15), 5, 3)
    tau <- runif(3, 0.5, 1.5)
    h <- diag(5)
    for (i in 1:3) {
      v <- c(rep(0, i - 1), 1, if (i < 5) a[(i + 1):5, i] else numeric())
      h <- h %*% (diag(5) - tau[i] * v %*% t(v))
    }
    expect_equal(arr(linalg_householder_product(dev_tensor(a, device), dev_tensor(tau, device))), h[, 1:3], tolerance = 1e-12)
    # torch for R's ind = 3: the first two dims are the rows.
    m <- well_conditioned(6)
    t4 <- dev_tensor(m, device)$reshape(c(2, 3, 6))
    inv <- linalg_tensorinv(t4, ind = 3)
    expect_equal(inv$shape, c(6, 2, 3))
    expect_equal(arr(inv$reshape(c(6, 6))), solve(m), tolerance = 1e-10)
    b <- rnorm(6)
    x <- linalg_tensorsolve(dev_tensor(m, device)$reshape(c(6, 2, 3)), dev_tensor(b, device))
    expect_equal(x$shape, c(2, 3))
    expect_equal(as.vector(t(arr(x))), solve(m, b), tolerance = 1e-10)
  }
})

test_that("empty batches give empty results of the right shapes", {
  for (device in test_devices()) {
    e <- torch_empty(0, 3, 3, dtype = torch_float64(), device = device)
    expect_equal(linalg_inv(e)$shape, c(0, 3, 3))
    expect_equal(linalg_det(e)$shape, 0)
    expect_equal(linalg_svd(e)$S$shape, c(0, 3))
    expect_equal(linalg_eigh(e)$eigenvectors$shape, c(0, 3, 3))
    expect_equal(linalg_cholesky(e)$shape, c(0, 3, 3))
    expect_equal(linalg_qr(e)$Q$shape, c(0, 3, 3))
  }
})

test_that("gradients flow through the factorisations", {
  a <- well_conditioned(3)
  x <- torch_tensor(a, dtype = torch_float64(), requires_grad = TRUE)
  linalg_det(x)$backward()
  expect_equal(as_array(x$grad), det(a) * t(solve(a)), tolerance = 1e-10)
  x <- torch_tensor(a, dtype = torch_float64(), requires_grad = TRUE)
  linalg_slogdet(x)$logabsdet$backward()
  expect_equal(as_array(x$grad), t(solve(a)), tolerance = 1e-10)
  x <- torch_tensor(a, dtype = torch_float64(), requires_grad = TRUE)
  linalg_inv(x)$sum()$backward()
  ai <- solve(a)
  expect_equal(as_array(x$grad), -t(ai) %*% matrix(1, 3, 3) %*% t(ai), tolerance = 1e-10)
  x <- torch_tensor(a, dtype = torch_float64(), requires_grad = TRUE)
  b <- rnorm(3)
  linalg_solve(x, torch_tensor(b, dtype = torch_float64()))$sum()$backward()
  g <- solve(t(a), rep(1, 3))
  expect_equal(as_array(x$grad), -g %*% t(solve(a, b)), tolerance = 1e-10)
  # d sum(svdvals(A)) / dA = U Vh.
  x <- torch_tensor(a, dtype = torch_float64(), requires_grad = TRUE)
  linalg_svdvals(x)$sum()$backward()
  s <- svd(a)
  expect_equal(as_array(x$grad), s$u %*% t(s$v), tolerance = 1e-8)
  # d sum(eigvalsh(A)) / dA = I (the trace).
  sp <- spd(3)
  x <- torch_tensor(sp, dtype = torch_float64(), requires_grad = TRUE)
  linalg_eigvalsh(x)$sum()$backward()
  expect_equal(as_array(x$grad), diag(3), tolerance = 1e-8)
  x <- torch_tensor(sp, dtype = torch_float64(), requires_grad = TRUE)
  expect_false(is.null(linalg_cholesky(x)$grad_fn))
  expect_false(is.null(linalg_qr(x)$R$grad_fn))
})

test_that("errors name the function and say what is wrong, as torch's", {
  singular <- torch_tensor(matrix(c(1, 2, 2, 4), 2), dtype = torch_float64())
  expect_error(linalg_solve(singular, torch_ones(2, dtype = torch_float64())), "singular", class = "rcuda_value_error")
  expect_error(linalg_inv(singular), "The diagonal element 2 is zero", class = "rcuda_value_error")
  expect_equal(arr(linalg_det(singular)), 0)
  indefinite <- torch_tensor(diag(c(2, 1, -1)), dtype = torch_float64())
  expect_error(linalg_cholesky(indefinite), "the leading minor of order 3 is not positive-definite",
               class = "rcuda_value_error")
  batch <- torch_stack(list(torch_eye(3, dtype = torch_float64()), indefinite))
  expect_error(linalg_cholesky(batch), "Batch element 1", class = "rcuda_value_error")
  expect_error(linalg_inv(torch_randn(2, 3)), "square matrices", class = "rcuda_shape_error")
  expect_error(linalg_det(torch_ones(3, 3, dtype = torch_long())), "floating point", class = "rcuda_dtype_error")
  expect_error(linalg_qr(torch_randn(3, 3), mode = "full"), "unrecognized mode 'full'", class = "rcuda_value_error")
  expect_error(linalg_eigh(torch_randn(3, 3), UPLO = "X"), "UPLO", class = "rcuda_value_error")
  expect_error(linalg_eig(torch_randn(3, 4)), "square matrices", class = "rcuda_shape_error")
  expect_error(linalg_eigvals(torch_ones(3, 3, dtype = torch_long())), "Expected a float32, float64, complex64",
               class = "rcuda_dtype_error")
  expect_error(linalg_lu(torch_randn(3, 3), pivot = FALSE), "without pivoting", class = "rcuda_value_error")
  expect_error(linalg_lstsq(torch_randn(3, 2), torch_randn(3, 1), driver = "gelsy"), "gelsd", class = "rcuda_value_error")
  expect_error(linalg_solve(torch_randn(3, 3), "a"), "B must be a tensor", class = "rcuda_value_error")
})

test_that("linalg_solve_triangular reads one triangle and matches base R's backsolve", {
  for (device in test_devices()) {
    n <- 5
    a <- matrix(rnorm(n * n), n) + diag(4, n)
    b <- matrix(rnorm(n * 3), n)
    A <- torch_tensor(a, dtype = torch_float64(), device = device)
    B <- torch_tensor(b, dtype = torch_float64(), device = device)
    up <- a
    up[lower.tri(up)] <- 0
    lo <- a
    lo[upper.tri(lo)] <- 0
    expect_equal(as_array(linalg_solve_triangular(A, B, upper = TRUE)), backsolve(up, b), tolerance = 1e-10)
    expect_equal(as_array(linalg_solve_triangular(A, B, upper = FALSE)), forwardsolve(lo, b), tolerance = 1e-10)
    unit <- up
    diag(unit) <- 1
    expect_equal(as_array(linalg_solve_triangular(A, B, upper = TRUE, unitriangular = TRUE)),
                 backsolve(unit, b), tolerance = 1e-10)
    # X A = B.
    c <- matrix(rnorm(2 * n), 2)
    C <- torch_tensor(c, dtype = torch_float64(), device = device)
    expect_equal(as_array(linalg_solve_triangular(A, C, upper = FALSE, left = FALSE)),
                 c %*% solve(lo), tolerance = 1e-10)
    # Gradients flow to A's triangle and to B.
    Ar <- A$clone()$requires_grad_(TRUE)
    Br <- B$clone()$requires_grad_(TRUE)
    linalg_solve_triangular(Ar, Br, upper = TRUE)$sum()$backward()
    g <- as_array(Ar$grad)
    expect_true(all(g[lower.tri(g)] == 0))
    expect_equal(as_array(Br$grad), matrix(rowSums(t(solve(up))), n, 3), tolerance = 1e-10)
  }
  expect_error(linalg_solve_triangular(torch_eye(2), torch_ones(2, 1)), "upper must be given",
               class = "rcuda_value_error")
})

test_that("linalg_cholesky_ex gives base R's factor and info, the first failing minor, without an error", {
  for (device in test_devices()) {
    n <- 5
    spd <- function() {
      m <- matrix(rnorm(n * n), n)
      crossprod(m) + diag(n)
    }
    good <- spd()
    bad <- spd()
    bad[4, 4] <- -50  # the leading minors of order 1-3 stay positive-definite; order 4 fails
    A <- torch_tensor(array(c(t(good), t(bad)), c(n, n, 2)), dtype = torch_float64(), device = device)$permute(c(3, 2, 1))
    expect_equal(as_array(A[1, , ]), good)
    out <- linalg_cholesky_ex(A)
    expect_named(out, c("L", "info"))
    expect_equal(as_array(out$info), c(0L, 4L))
    expect_equal(out$info$dtype$.type(), "Int")
    expect_equal(as_array(out$L[1, , ]), t(chol(good)), tolerance = 1e-10)
    partial <- matrix(0, n, n)
    partial[1:3, 1:3] <- t(chol(bad[1:3, 1:3]))
    expect_equal(as_array(out$L[2, , ]), partial, tolerance = 1e-10)
    up <- linalg_cholesky_ex(A[1, , ], upper = TRUE)
    expect_equal(as_array(up$L), chol(good), tolerance = 1e-10)
    expect_equal(as_array(up$info), 0L)
    expect_equal(up$info$dim(), 0)
    first <- linalg_cholesky_ex(torch_tensor(-diag(2), dtype = torch_float64(), device = device))
    expect_equal(as_array(first$info), 1L)
    expect_equal(as_array(first$L), matrix(0, 2, 2))
    expect_error(linalg_cholesky_ex(A, check_errors = TRUE), "positive-definite")
  }
})

test_that("torch_geqrf gives LAPACK's reflectors and R: Q from them rebuilds A (base R products)", {
  for (shape in list(c(5, 3), c(4, 4), c(2, 3, 6))) {
    A <- torch_randn(shape, dtype = torch_float64())
    out <- torch_geqrf(A)
    expect_length(out, 2)
    expect_identical(out[[1]]$shape, as.integer(shape))
    expect_identical(out[[2]]$shape, as.integer(c(shape[-(length(shape) - 0:1)], min(tail(shape, 2)))))
    if (length(shape) == 2 && shape[1] >= shape[2]) {
      a <- as_array(out[[1]])
      q <- as_array(linalg_householder_product(out[[1]], out[[2]]))
      r <- a[seq_len(shape[2]), , drop = FALSE]
      r[lower.tri(r)] <- 0
      expect_equal(crossprod(q), diag(shape[2]), tolerance = 1e-12)
      expect_equal(q %*% r, as_array(A), tolerance = 1e-12)
      expect_equal(abs(diag(r)), abs(diag(qr.R(qr(as_array(A))))), tolerance = 1e-12)
    }
  }
  expect_identical(A$geqrf()[[2]]$shape, c(2L, 3L))
  expect_error(torch_geqrf(torch_randn(3)), "geqrf")
})
