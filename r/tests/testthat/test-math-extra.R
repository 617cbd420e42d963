# The products, elementwise math, linear algebra aliases, dtypes and random draws of
# math-products.R, math-elementwise.R, linalg-aliases.R, dtype-promotion.R and tensor-random.R,
# each against base R on as_array() values of fresh random tensors.

f64 <- torch_float64()
rnd <- function(..., dtype = f64, requires_grad = FALSE) torch_randn(..., dtype = dtype, requires_grad = requires_grad)
arr <- function(x) as_array(x)
# A non-contiguous [n, m] tensor: the transpose of a fresh [m, n] one.
rnd_t <- function(n, m, dtype = f64) rnd(m, n, dtype = dtype)$t()

test_that("torch_addmm, torch_addmv and torch_addr are beta * self + alpha * product", {
  for (dtype in list(torch_float32(), f64)) {
    tol <- if (dtype == f64) 1e-10 else 1e-5
    s <- rnd(3, 4, dtype = dtype)
    a <- rnd_t(3, 5, dtype = dtype)
    b <- rnd(5, 4, dtype = dtype)
    expect_false(a$is_contiguous())
    expect_equal(arr(torch_addmm(s, a, b, beta = 0.5, alpha = 2)), 0.5 * arr(s) + 2 * arr(a) %*% arr(b), tolerance = tol)
    expect_equal(torch_addmm(s, a, b)$dtype, dtype)
    # self broadcasts along the rows.
    r <- rnd(4, dtype = dtype)
    expect_equal(arr(s$addmm(a, b, alpha = -1)), arr(s) - arr(a) %*% arr(b), tolerance = tol)
    expect_equal(arr(torch_addmm(r, a, b)), matrix(arr(r), 3, 4, byrow = TRUE) + arr(a) %*% arr(b), tolerance = tol)
    v <- rnd(5, dtype = dtype)
    sv <- rnd(3, dtype = dtype)
    expect_equal(arr(torch_addmv(sv, a, v, beta = 2, alpha = 3)), 2 * arr(sv) + 3 * as.vector(arr(a) %*% arr(v)), tolerance = tol)
    expect_equal(arr(torch_mv(a, v)), as.vector(arr(a) %*% arr(v)), tolerance = tol)
    expect_equal(arr(a$mv(v)), as.vector(arr(a) %*% arr(v)), tolerance = tol)
    v1 <- rnd(3, dtype = dtype)
    expect_equal(arr(torch_addr(s, v1, r, beta = -1, alpha = 0.5)), -arr(s) + 0.5 * outer(arr(v1), arr(r)), tolerance = tol)
    expect_equal(arr(s$addr(v1, r)), arr(s) + outer(arr(v1), arr(r)), tolerance = tol)
  }
  # beta = 0 ignores self's NaN, as torch does.
  s <- torch_full(c(2, 2), NaN, dtype = f64)
  a <- rnd(2, 3)
  b <- rnd(3, 2)
  expect_equal(arr(torch_addmm(s, a, b, beta = 0)), arr(a) %*% arr(b))
  # Empty inner dim: the product is zeros.
  expect_equal(arr(torch_addmm(s$nan_to_num(), torch_zeros(2, 0, dtype = f64), torch_zeros(0, 2, dtype = f64))), matrix(0, 2, 2))
  expect_equal(arr(torch_addmm(s, a, b, out_dtype = torch_float32(), beta = 0)$to(dtype = f64)), arr(a) %*% arr(b), tolerance = 1e-6)
  expect_true(torch_addmm(s, a, b, out_dtype = torch_float32())$dtype == torch_float32())
  expect_error(torch_addmm(s, a$flatten(), b), class = "rcuda_shape_error", regexp = "torch_addmm: mat1 must be 2-d, got 1-d")
  expect_error(torch_addmm(rnd(3, 3), a, b), class = "rcuda_shape_error", regexp = "torch_addmm: self of shape \\[3, 3\\]")
  expect_error(torch_addmm(s, a, b, beta = "x"), class = "value_error", regexp = "torch_addmm: beta must be a number")
  expect_error(torch_mv(a, rnd(2)), class = "rcuda_shape_error", regexp = "torch_mv: self has 3 columns but vec has 2")
  expect_error(torch_addr(s, a, b), class = "rcuda_shape_error", regexp = "torch_addr: vec1 must be 1-d")
})

test_that("torch_baddbmm and torch_addbmm add batched products", {
  s <- rnd(2, 3, 4)
  b1 <- rnd(2, 5, 3)$transpose(2, 3)
  b2 <- rnd(2, 5, 4)
  expect_false(b1$is_contiguous())
  a1 <- arr(b1)
  a2 <- arr(b2)
  out <- arr(torch_baddbmm(s, b1, b2, beta = 0.5, alpha = 2))
  total <- matrix(0, 3, 4)
  for (i in 1:2) {
    expect_equal(out[i, , ], 0.5 * arr(s)[i, , ] + 2 * a1[i, , ] %*% a2[i, , ])
    total <- total + a1[i, , ] %*% a2[i, , ]
  }
  s2 <- rnd(3, 4)
  expect_equal(arr(torch_addbmm(s2, b1, b2, beta = 2, alpha = -1)), 2 * arr(s2) - total)
  expect_equal(arr(s2$addbmm(b1, b2)), arr(s2) + total)
  expect_equal(arr(s$baddbmm(b1, b2)[2, , ]), arr(s)[2, , ] + a1[2, , ] %*% a2[2, , ])
  f32 <- torch_baddbmm(s$float(), b1$float(), b2$float())
  expect_equal(arr(f32)[1, , ], arr(s)[1, , ] + a1[1, , ] %*% a2[1, , ], tolerance = 1e-5)
  expect_error(torch_baddbmm(s, b1[1, , ], b2), class = "rcuda_shape_error", regexp = "torch_baddbmm: batch1 must be 3-d")
  expect_error(torch_addbmm(s2, b1, b2, alpha = NA), class = "value_error", regexp = "torch_addbmm: alpha must be a number")
})

test_that("gradients of addmm and addcmul match closed forms", {
  s <- rnd(2, 3, requires_grad = TRUE)
  a <- rnd(2, 4, requires_grad = TRUE)
  b <- rnd(4, 3, requires_grad = TRUE)
  torch_addmm(s, a, b, beta = 3, alpha = 2)$sum()$backward()
  expect_equal(arr(s$grad), matrix(3, 2, 3))
  # d sum(A B) / dA = 1 B^T; / dB = A^T 1.
  expect_equal(arr(a$grad), 2 * matrix(1, 2, 3) %*% t(arr(b)))
  expect_equal(arr(b$grad), 2 * t(arr(a)) %*% matrix(1, 2, 3))
  x <- rnd(3, requires_grad = TRUE)
  y <- rnd(3, requires_grad = TRUE)
  z <- rnd(3, requires_grad = TRUE)
  torch_addcmul(x, y, z, value = 0.5)$sum()$backward()
  expect_equal(arr(x$grad), rep(1, 3))
  expect_equal(arr(y$grad), 0.5 * arr(z))
  expect_equal(arr(z$grad), 0.5 * arr(y))
})

test_that("torch_dot, torch_vdot and torch_inner sum products", {
  for (dtype in list(torch_float32(), f64)) {
    x <- rnd(6, dtype = dtype)
    y <- rnd(2, 6, dtype = dtype)[2, ]
    expect_equal(arr(torch_dot(x, y)), sum(arr(x) * arr(y)), tolerance = 1e-5)
    expect_equal(arr(x$vdot(y)), sum(arr(x) * arr(y)), tolerance = 1e-5)
  }
  ints <- torch_tensor(c(1L, -2L, 3L))
  expect_equal(arr(torch_dot(ints, torch_tensor(c(4L, 5L, 6L)))), 1 * 4 - 2 * 5 + 3 * 6)
  expect_equal(arr(torch_dot(torch_zeros(0, dtype = f64), torch_zeros(0, dtype = f64))), 0)
  expect_error(torch_dot(rnd(3), rnd(3)$float()), class = "rcuda_dtype_error", regexp = "torch_dot: self and tensor must have the same dtype")
  expect_error(torch_dot(rnd(3), rnd(4)), class = "rcuda_shape_error", regexp = "same length, got 3 and 4")
  expect_error(torch_vdot(rnd(3, 1), rnd(3)), class = "rcuda_shape_error", regexp = "torch_vdot: self must be 1-d")

  a <- rnd(2, 3, 4)
  b <- rnd_t(5, 4)
  aa <- arr(a)
  bb <- arr(b)
  out <- arr(torch_inner(a, b))
  expect_equal(dim(out), c(2L, 3L, 5L))
  for (i in 1:2) for (j in 1:3) for (k in 1:5) expect_equal(out[i, j, k], sum(aa[i, j, ] * bb[k, ]))
  v <- rnd(4)
  expect_equal(arr(a$inner(v)), apply(aa, c(1, 2), function(r) sum(r * arr(v))))
  expect_equal(arr(torch_inner(torch_tensor(2, dtype = f64)$squeeze(), v)), 2 * arr(v))
  expect_error(torch_inner(a, rnd(3)), class = "rcuda_shape_error", regexp = "torch_inner: the last dims of self and other must match, got 4 and 3")
})

test_that("torch_lerp interpolates with a number or a tensor weight", {
  for (dtype in list(torch_float32(), f64)) {
    s <- rnd(3, 4, dtype = dtype)
    e <- rnd_t(3, 4, dtype = dtype)
    for (w in c(-0.3, 0.25, 0.8, 1)) {
      expect_equal(arr(torch_lerp(s, e, w)), arr(s) + w * (arr(e) - arr(s)), tolerance = 1e-6)
    }
    expect_equal(arr(torch_lerp(s, e, 1)), arr(e))
    w <- torch_rand(4, dtype = dtype) * 2 - 0.5  # broadcast along the rows
    expect_equal(arr(s$lerp(e, w)), arr(s) + matrix(arr(w), 3, 4, byrow = TRUE) * (arr(e) - arr(s)), tolerance = 1e-6)
  }
  s <- rnd(3, requires_grad = TRUE)
  e <- rnd(3, requires_grad = TRUE)
  torch_lerp(s, e, 0.7)$sum()$backward()
  expect_equal(arr(s$grad), rep(0.3, 3))
  expect_equal(arr(e$grad), rep(0.7, 3))
  expect_error(torch_lerp(s, e, "a"), class = "value_error", regexp = "torch_lerp: weight must be a number")
})

test_that("torch_addcmul and torch_addcdiv add a scaled product or quotient", {
  for (dtype in list(torch_float32(), f64)) {
    s <- rnd(2, 3, dtype = dtype)
    t1 <- rnd_t(2, 3, dtype = dtype)
    t2 <- rnd(3, dtype = dtype)
    t2r <- matrix(arr(t2), 2, 3, byrow = TRUE)
    expect_equal(arr(torch_addcmul(s, t1, t2, value = -2)), arr(s) - 2 * arr(t1) * t2r, tolerance = 1e-6)
    expect_equal(arr(s$addcdiv(t1, t2, value = 0.5)), arr(s) + 0.5 * arr(t1) / t2r, tolerance = 1e-5)
    expect_equal(arr(torch_addcdiv(s, t1, t2)), arr(s) + arr(t1) / t2r, tolerance = 1e-5)
  }
  i <- torch_tensor(c(1L, 2L))
  expect_equal(arr(torch_addcmul(i, i, i, value = 3)), c(1, 2) + 3 * c(1, 4))
  expect_true(torch_addcmul(i, i, i, value = 3)$dtype == torch_long())
  expect_error(torch_addcdiv(i, i, i), class = "rcuda_dtype_error", regexp = "torch_addcdiv: integer division is not supported")
  expect_error(torch_addcmul(i, i, i, value = c(1, 2)), class = "value_error", regexp = "torch_addcmul: value must be a number")
})

test_that("torch_clip clamps to numbers and tensors", {
  x <- rnd(3, 4)
  a <- arr(x)
  expect_equal(arr(torch_clip(x, -0.5, 0.5)), pmin(pmax(a, -0.5), 0.5))
  expect_equal(arr(x$clip(min = 0)), pmax(a, 0))
  expect_equal(arr(x$t()$clip(max = 0.1)), t(pmin(a, 0.1)))
  lo <- rnd(4) - 1
  expect_equal(arr(torch_clip(x, lo, 0.3)), pmin(pmax(a, matrix(arr(lo), 3, 4, byrow = TRUE)), 0.3))
  ints <- torch_tensor(c(-3L, 0L, 5L))
  expect_equal(arr(torch_clip(ints, -1L, 2L)), c(-1, 0, 2))
})

test_that("torch_square, torch_deg2rad, torch_rad2deg and torch_frac", {
  for (dtype in list(torch_float32(), f64)) {
    x <- rnd_t(3, 2, dtype = dtype) * 4
    a <- arr(x)
    expect_equal(arr(torch_square(x)), a^2, tolerance = 1e-6)
    expect_equal(arr(x$deg2rad()), a * pi / 180, tolerance = 1e-6)
    expect_equal(arr(torch_rad2deg(x)), a * 180 / pi, tolerance = 1e-6)
    expect_equal(arr(x$frac()), a - trunc(a), tolerance = 1e-6)
  }
  expect_equal(arr(torch_square(torch_tensor(c(-3L, 4L)))), c(9, 16))
  expect_true(torch_square(torch_tensor(c(TRUE, FALSE)))$dtype == torch_long())
  expect_true(torch_deg2rad(torch_tensor(180L))$dtype == torch_float32())
  expect_equal(dim(torch_square(torch_zeros(0, 3))), c(0L, 3L))
  expect_error(torch_frac(torch_tensor(1:3)), class = "rcuda_dtype_error", regexp = "torch_frac: self must have a floating dtype, got int64")
  x <- rnd(4, requires_grad = TRUE)
  torch_square(x)$sum()$backward()
  expect_equal(arr(x$grad), 2 * arr(x))
})

test_that("torch_fmod takes the sign of self", {
  fmod_ref <- function(a, b) a - trunc(a / b) * b
  for (dtype in list(torch_float32(), f64)) {
    x <- rnd(3, 4, dtype = dtype) * 5
    y <- rnd_t(3, 4, dtype = dtype) * 2
    expect_equal(arr(torch_fmod(x, y)), fmod_ref(arr(x), arr(y)), tolerance = 1e-5)
    expect_equal(arr(x$fmod(1.5)), fmod_ref(arr(x), 1.5), tolerance = 1e-5)
    expect_equal(arr(x$fmod(-1.5)), fmod_ref(arr(x), -1.5), tolerance = 1e-5)
  }
  a <- c(-7L, -3L, 0L, 3L, 7L, 8L)
  i <- torch_tensor(a)
  expect_equal(arr(torch_fmod(i, 3L)), fmod_ref(a, 3))
  expect_equal(arr(torch_fmod(i, torch_tensor(rep(-3L, 6)))), fmod_ref(a, -3))
  expect_true(torch_fmod(i, 3L)$dtype == torch_long())
  x <- rnd(5, requires_grad = TRUE)
  y <- torch_tensor(c(0.7, -0.9, 1.3, -1.1, 0.6), dtype = f64, requires_grad = TRUE)
  torch_fmod(x * 3, y)$sum()$backward()
  expect_equal(arr(x$grad), rep(3, 5))
  expect_equal(arr(y$grad), -trunc(3 * arr(x) / arr(y)))
})

test_that("torch_logaddexp and torch_logaddexp2 are stable and exact at infinities", {
  for (dtype in list(torch_float32(), f64)) {
    x <- rnd(3, 4, dtype = dtype) * 10
    y <- rnd(4, dtype = dtype) * 10
    yr <- matrix(arr(y), 3, 4, byrow = TRUE)
    expect_equal(arr(torch_logaddexp(x, y)), log(exp(arr(x)) + exp(yr)), tolerance = 1e-6)
    expect_equal(arr(x$logaddexp2(y)), log2(2^arr(x) + 2^yr), tolerance = 1e-6)
  }
  big <- torch_tensor(c(1000, -1000, Inf, -Inf, -Inf, Inf), dtype = f64)
  other <- torch_tensor(c(1000, -1001, Inf, -Inf, 3, -Inf), dtype = f64)
  expect_equal(arr(torch_logaddexp(big, other)),
               c(1000 + log(2), -1000 + log1p(exp(-1)), Inf, -Inf, 3, Inf))
  x <- rnd(4, requires_grad = TRUE)
  y <- rnd(4, requires_grad = TRUE)
  torch_logaddexp(x, y)$sum()$backward()
  expect_equal(arr(x$grad), exp(arr(x)) / (exp(arr(x)) + exp(arr(y))))
  expect_equal(arr(y$grad), exp(arr(y)) / (exp(arr(x)) + exp(arr(y))))
})

test_that("torch_isclose compares elementwise", {
  a <- c(1, 1, NaN, Inf, -Inf, 0, 1e-9)
  b <- c(1 + 1e-6, 1.1, NaN, Inf, Inf, 1e-9, 0)
  x <- torch_tensor(a, dtype = f64)
  y <- torch_tensor(b, dtype = f64)
  ref <- function(rtol, atol, equal_nan) {
    out <- (a == b) | (abs(a - b) <= atol + rtol * abs(b))
    out[is.na(out)] <- FALSE
    if (equal_nan) out <- out | (is.nan(a) & is.nan(b))
    out
  }
  expect_equal(arr(torch_isclose(x, y)), ref(1e-5, 1e-8, FALSE))
  expect_equal(arr(x$isclose(y, equal_nan = TRUE)), ref(1e-5, 1e-8, TRUE))
  expect_equal(arr(torch_isclose(x, y, rtol = 0.2, atol = 0)), ref(0.2, 0, FALSE))
  m <- rnd(3, 4)
  expect_equal(arr(torch_isclose(m$t(), m$t() + 1e-12)), matrix(TRUE, 4, 3))
  expect_equal(arr(torch_isclose(torch_tensor(c(1L, 5L)), torch_tensor(c(1L, 6L)))), c(TRUE, FALSE))
  expect_error(torch_isclose(x, y, rtol = -1), class = "value_error", regexp = "torch_isclose: rtol must be non-negative")
  expect_error(torch_isclose(x, y$float()), class = "rcuda_dtype_error", regexp = "same dtype")
})

test_that("torch_signbit, torch_sgn and torch_heaviside", {
  x <- torch_tensor(c(-2, -0, 0, 3, -Inf, Inf), dtype = f64)
  expect_equal(arr(torch_signbit(x)), c(TRUE, TRUE, FALSE, FALSE, TRUE, FALSE))
  expect_equal(arr(torch_signbit(torch_tensor(c(-1L, 0L, 2L)))), c(TRUE, FALSE, FALSE))
  r <- rnd(3, 4)
  expect_equal(arr(r$t()$signbit()), t(arr(r) < 0))
  expect_equal(arr(torch_sgn(r)), sign(arr(r)))
  expect_equal(arr(torch_sgn(torch_tensor(c(-4L, 0L, 9L)))), c(-1, 0, 1))
  for (dtype in list(torch_float32(), f64)) {
    s <- torch_tensor(c(-1.5, 0, 2, 0), dtype = dtype)
    v <- torch_tensor(c(7, 8, 9, 0.5), dtype = dtype)
    expect_equal(arr(torch_heaviside(s, v)), c(0, 8, 1, 0.5))
    expect_equal(arr(s$heaviside(torch_tensor(0.25, dtype = dtype))), c(0, 0.25, 1, 0.25))
  }
  expect_error(torch_heaviside(r, torch_tensor(1L)), class = "rcuda_dtype_error", regexp = "torch_heaviside: self and values must have the same dtype")
})

test_that("torch_det, torch_logdet, torch_inverse, torch_pinverse, torch_cholesky and torch_matrix_power", {
  for (dtype in list(torch_float32(), f64)) {
    tol <- if (dtype == f64) 1e-8 else 1e-4
    a <- rnd_t(3, 3, dtype = dtype)
    m <- arr(a)
    expect_equal(arr(torch_det(a)), det(m), tolerance = tol)
    expect_equal(arr(a$inverse()), solve(m), tolerance = tol)
    expect_equal(arr(torch_matrix_power(a, 3)), m %*% m %*% m, tolerance = tol)
    expect_equal(arr(a$matrix_power(-1)), solve(m), tolerance = tol)
    spd <- crossprod(m) + diag(3)
    expect_equal(arr(torch_cholesky(torch_tensor(spd, dtype = dtype))), t(chol(spd)), tolerance = tol)
    expect_equal(arr(torch_tensor(spd, dtype = dtype)$cholesky(upper = TRUE)), chol(spd), tolerance = tol)
    r <- rnd(4, 2, dtype = dtype)
    expect_equal(arr(torch_pinverse(r)), solve(crossprod(arr(r)), t(arr(r))), tolerance = tol)
  }
  batch <- rnd(2, 3, 3)
  expect_equal(arr(batch$det()), c(det(arr(batch)[1, , ]), det(arr(batch)[2, , ])))
  pos <- torch_tensor(diag(c(2, 3)), dtype = f64)
  expect_equal(arr(torch_logdet(pos)), log(6))
  expect_true(is.nan(arr(torch_logdet(torch_tensor(diag(c(-2, 3)), dtype = f64)))))
  expect_equal(arr(torch_logdet(torch_zeros(2, 2, dtype = f64))), -Inf)
  x <- torch_tensor(matrix(c(2, 1, 0.5, 3), 2), dtype = f64, requires_grad = TRUE)
  torch_logdet(x)$backward()
  expect_equal(arr(x$grad), t(solve(arr(x))))
  expect_error(torch_cholesky(pos, upper = NA), class = "value_error", regexp = "torch_cholesky: upper must be TRUE or FALSE")
  expect_error(torch_matrix_power(pos, 1.5), class = "value_error", regexp = "torch_matrix_power: n must be a whole number")
})

test_that("torch_dist and torch_cosine_similarity", {
  for (dtype in list(torch_float32(), f64)) {
    x <- rnd(3, 4, dtype = dtype)
    y <- rnd(4, dtype = dtype)
    d <- arr(x) - matrix(arr(y), 3, 4, byrow = TRUE)
    expect_equal(arr(torch_dist(x, y)), sqrt(sum(d^2)), tolerance = 1e-6)
    expect_equal(arr(x$dist(y, p = 1)), sum(abs(d)), tolerance = 1e-6)
    expect_equal(arr(x$t()$dist(y$unsqueeze(2), p = Inf)), max(abs(d)), tolerance = 1e-6)
    a <- rnd(3, 5, dtype = dtype)
    b <- rnd_t(3, 5, dtype = dtype)
    cosine <- function(u, v) sum(u * v) / sqrt(sum(u^2) * sum(v^2))
    expect_equal(arr(torch_cosine_similarity(a, b)), sapply(1:3, function(i) cosine(arr(a)[i, ], arr(b)[i, ])), tolerance = 1e-5)
    expect_equal(arr(torch_cosine_similarity(a, b, dim = 1)), sapply(1:5, function(j) cosine(arr(a)[, j], arr(b)[, j])), tolerance = 1e-5)
  }
  # A zero vector's norm is taken as eps, giving 0.
  expect_equal(arr(torch_cosine_similarity(torch_zeros(1, 3), torch_ones(1, 3))), 0)
  expect_error(torch_cosine_similarity(rnd(2, 3), rnd(2, 3), dim = 3), class = "rcuda_index_error", regexp = "torch_cosine_similarity: dim: Dimension out of range (expected to be in range of [-2, 2], but got 3)", fixed = TRUE)
  expect_error(torch_dist(rnd(2), rnd(2), p = "two"), class = "value_error", regexp = "torch_dist: p must be a number")
  x <- rnd(4, requires_grad = TRUE)
  y <- rnd(4)
  torch_dist(x, y)$backward()
  expect_equal(arr(x$grad), (arr(x) - arr(y)) / sqrt(sum((arr(x) - arr(y))^2)))
})

test_that("torch_result_type follows torch's promotion", {
  expect_true(torch_result_type(torch_tensor(c(1, 2), dtype = torch_int()), 1) == torch_float())
  expect_true(torch_result_type(torch_tensor(c(1, 2), dtype = torch_int()), torch_tensor(1:2)) == torch_long())
  expect_true(torch_result_type(1, torch_tensor(1:2)) == torch_float())
  expect_true(torch_result_type(1, 2L) == torch_float())
  expect_true(torch_result_type(2L, 3L) == torch_long())
  expect_true(torch_result_type(TRUE, FALSE) == torch_bool())
  expect_true(torch_result_type(torch_zeros(2, dtype = torch_uint8()), torch_zeros(2, dtype = torch_int8())) == torch_int16())
  # A 0-d tensor of a higher dtype of the same category does not promote.
  expect_true(torch_result_type(torch_tensor(1, dtype = f64)$squeeze(), torch_zeros(3)) == torch_float())
  expect_true(torch_result_type(torch_zeros(3), torch_zeros(3, dtype = f64)) == f64)
  expect_true(torch_result_type(torch_tensor(c(TRUE, FALSE)), 2L) == torch_long())
  expect_error(torch_result_type("a", 1), class = "value_error", regexp = "torch_result_type: tensor1 must be a tensor or a number")
})

test_that("torch_randint_like draws integers in [low, high) with input's shape", {
  x <- torch_zeros(20, 30, dtype = torch_long())
  y <- torch_randint_like(x, 3, 7)
  expect_equal(dim(y), c(20L, 30L))
  expect_true(y$dtype == torch_long())
  v <- arr(y)
  expect_true(all(v >= 3 & v <= 6))
  expect_setequal(unique(as.vector(v)), 3:6)
  expect_true(all(arr(torch_randint_like(x, 2)) %in% 0:1))
  expect_true(torch_randint_like(x, 0, 5, dtype = f64)$dtype == f64)
  expect_equal(dim(torch_randint_like(torch_zeros(0, 2), 0, 3)), c(0L, 2L))
  expect_error(torch_randint_like(x, 0, 5, layout = "sparse"), class = "value_error", regexp = "torch_randint_like: layout must be NULL or torch_strided")
})

test_that("torch_normal draws from rcuda's generator with the given mean and std", {
  torch_manual_seed(7)
  a <- torch_normal(2, 3, size = c(200, 100))
  torch_manual_seed(7)
  b <- torch_normal(2, 3, size = list(200, 100))
  expect_equal(arr(a), arr(b))
  expect_true(a$dtype == torch_float())
  v <- as.vector(arr(a))
  # 20000 draws: the mean is within 5 standard errors, the sd within 5%.
  expect_lt(abs(mean(v) - 2), 5 * 3 / sqrt(length(v)))
  expect_lt(abs(sd(v) / 3 - 1), 0.05)
  expect_true(torch_normal(0, 1, size = c(2, 2), dtype = f64)$dtype == f64)
  expect_true(torch_normal(0, 1, size = 3, requires_grad = TRUE)$requires_grad)
  mean <- torch_tensor(c(-100, 0, 100), dtype = f64)$unsqueeze(2)
  std <- torch_tensor(c(0, 1e-3), dtype = f64)
  d <- arr(torch_normal(mean, std))
  expect_equal(dim(d), c(3L, 2L))
  expect_equal(d[, 1], c(-100, 0, 100))
  expect_true(all(abs(d[, 2] - c(-100, 0, 100)) < 0.01))
  expect_equal(arr(torch_normal(mean = torch_zeros(2, 2), std = 0)), matrix(0, 2, 2))
  expect_equal(dim(torch_normal(std = torch_ones(4))), 4L)
  expect_error(torch_normal(torch_zeros(2), 1, c(2, 2)), class = "value_error", regexp = "size is set")
  expect_error(torch_normal(1, torch_zeros(2), dtype = f64), class = "value_error", regexp = "options is set")
  expect_error(torch_normal(0, 1), class = "value_error", regexp = "size is not set")
  expect_error(torch_normal(0, -1, size = 2), class = "value_error", regexp = "torch_normal: std must be non-negative")
})

test_that("torch_bincount counts 1-based values, or sums weights", {
  v <- sample(1:6, 40, replace = TRUE)
  x <- torch_tensor(v)
  expect_equal(arr(torch_bincount(x)), tabulate(v, max(v)))
  expect_true(torch_bincount(x)$dtype == torch_long())
  expect_equal(arr(x$bincount(minlength = 10)), tabulate(v, 10))
  w <- rnd(40)
  wsum <- vapply(seq_len(max(v)), function(k) sum(arr(w)[v == k]), numeric(1))
  expect_equal(arr(torch_bincount(x, weights = w)), wsum)
  expect_true(torch_bincount(x, w$float())$dtype == torch_float32())
  expect_equal(arr(torch_bincount(x, w$float())), wsum, tolerance = 1e-5)
  expect_equal(arr(torch_bincount(torch_tensor(integer(0)), minlength = 3)), c(0, 0, 0))
  expect_equal(arr(torch_bincount(torch_tensor(c(2L, 2L), dtype = torch_int32()))), c(0, 2))
  expect_error(torch_bincount(torch_tensor(c(1L, 0L))), class = "value_error", regexp = "Indexing starts at 1 but found a 0")
  expect_error(torch_bincount(rnd(3)), class = "rcuda_dtype_error", regexp = "torch_bincount: self must hold integers")
  expect_error(torch_bincount(x, weights = rnd(3)), class = "rcuda_shape_error", regexp = "weights must have one element per element of self \\(40\\)")
})

test_that("torch_trapezoid and torch_cumulative_trapezoid integrate along dim", {
  trap <- function(y, x) sum(diff(x) * (head(y, -1) + tail(y, -1)) / 2)
  ctrap <- function(y, x) cumsum(diff(x) * (head(y, -1) + tail(y, -1)) / 2)
  for (dtype in list(torch_float32(), f64)) {
    y <- rnd(3, 5, dtype = dtype)
    a <- arr(y)
    expect_equal(arr(torch_trapezoid(y)), apply(a, 1, trap, x = 0:4), tolerance = 1e-5)
    expect_equal(arr(torch_trapezoid(y, dx = 0.5, dim = 1)), apply(a, 2, trap, x = c(0, 0.5, 1)), tolerance = 1e-5)
    xs <- sort(runif(5)) * 3
    expect_equal(arr(torch_trapezoid(y, x = torch_tensor(xs, dtype = dtype))), apply(a, 1, trap, x = xs), tolerance = 1e-5)
    expect_equal(arr(torch_cumulative_trapezoid(y$t(), dim = 1)), apply(a, 1, ctrap, x = 0:4), tolerance = 1e-5)
    xm <- torch_tensor(t(apply(matrix(runif(15), 3), 1, cumsum)), dtype = dtype)
    expect_equal(arr(torch_cumulative_trapezoid(y, x = xm)),
                 t(sapply(1:3, function(i) ctrap(a[i, ], arr(xm)[i, ]))), tolerance = 1e-5)
  }
  expect_equal(arr(torch_trapezoid(torch_zeros(2, 0))), c(0, 0))
  expect_equal(dim(torch_cumulative_trapezoid(torch_zeros(2, 1))), c(2L, 0L))
  expect_error(torch_trapezoid(rnd(3, 4), x = rnd(3)), class = "rcuda_shape_error", regexp = "torch_trapezoid: a 1-d x must have y's size along dim \\(4\\)")
})

test_that("in-place forms write into self", {
  s <- rnd(2, 3)
  a <- rnd(2, 4)
  b <- rnd(4, 3)
  expected <- 0.5 * arr(s) + arr(a) %*% arr(b)
  out <- s$addmm_(a, b, beta = 0.5)
  expect_equal(arr(s), expected)
  expect_identical(out, s)
  x <- rnd(5)
  e <- rnd(5)
  ref <- arr(x) + 0.3 * (arr(e) - arr(x))
  x$lerp_(e, 0.3)
  expect_equal(arr(x), ref)
  ref <- arr(x) + 2 * arr(e) * arr(e)
  x$addcmul_(e, e, value = 2)
  expect_equal(arr(x), ref)
  ref <- arr(x) - arr(x) / arr(e)
  x$addcdiv_(x, e, value = -1)
  expect_equal(arr(x), ref)
  ref <- pmin(pmax(arr(x), -0.2), 0.2)
  x$clip_(-0.2, 0.2)
  expect_equal(arr(x), ref)
  x$square_()
  expect_equal(arr(x), ref^2)
  i <- torch_tensor(c(-7L, 7L))
  i$fmod_(3L)
  expect_equal(arr(i), c(-1, 1))
  expect_error(i$square_()$fmod_(1.5), class = "rcuda_dtype_error", regexp = "fmod_: result type Float can't be cast")
  leaf <- rnd(2, requires_grad = TRUE)
  expect_error(leaf$square_(), class = "value_error", regexp = "square_: a leaf Variable that requires grad")
  # A non-leaf gets the gradient of the out-of-place op.
  x <- rnd(3, requires_grad = TRUE)
  y <- x * 1
  y$square_()
  y$sum()$backward()
  expect_equal(arr(x$grad), 2 * arr(x))
})
