# Complex tensors (R/complex.R) against base R's complex arithmetic, on fresh random values,
# with broadcasting and views, on every device; linalg_eig against base R's eigen().

random_complex <- function(...) {
  dims <- c(...)
  values <- complex(real = rnorm(prod(dims)), imaginary = rnorm(prod(dims)))
  if (length(dims) == 1) values else array(values, dims)
}

# Eigenvalues in one order whatever order a solver gave them.
sort_by_value <- function(z, digits = 6) z[order(round(Re(z), digits), round(Im(z), digits))]

test_that("complex tensors come from R complex values and go back", {
  for (device in test_devices()) {
    z <- random_complex(3, 4)
    x <- torch_tensor(z, device = device)
    expect_true(x$dtype == torch_cfloat())
    expect_true(x$is_complex())
    expect_true(torch_is_complex(x))
    expect_false(x$is_floating_point())
    expect_equal(as_array(x), z, tolerance = 1e-6)
    y <- torch_tensor(z, dtype = torch_cdouble(), device = device)
    expect_true(y$dtype == torch_cfloat128())
    expect_identical(as_array(y), z)
    expect_identical(as.complex(torch_tensor(3 + 2i, dtype = "cdouble")), 3 + 2i)
    expect_identical(y[1, 2]$item(), z[1, 2])
    expect_equal(y$element_size(), 16)
    expect_identical(as_array(torch_tensor(c(1, 2), dtype = torch_cdouble())), complex(real = c(1, 2), imaginary = 0))
    expect_error(y$to(dtype = torch_float()), "would discard the imaginary part", class = "rcuda_dtype_error")
    expect_identical(as_array(y$to(dtype = "cfloat")$to(dtype = torch_cdouble())), as_array(x$to(dtype = torch_cdouble())))
    # Joining copies bytes: complex tensors stack and concatenate.
    expect_identical(as_array(torch_stack(list(y, y$t()$t()))), aperm(array(c(z, z), c(3, 4, 2)), c(3, 1, 2)))
    expect_identical(as_array(torch_cat(list(y, y), dim = 2)), cbind(z, z))
  }
})

test_that("torch_complex, $real and $imag are torch for R's, and assignment writes through", {
  for (device in test_devices()) {
    re <- torch_randn(10, 10, device = device)
    im <- torch_randn(10, 10, device = device)
    x <- torch_complex(re, im)
    expect_equal(as_array(x$real), as_array(re))
    expect_equal(as_array(x$imag), as_array(im))
    re2 <- torch_randn(10, 10, device = device)
    im2 <- torch_randn(10, 10, device = device)
    x$real <- re2
    x$imag <- im2
    expect_equal(as_array(x), as_array(re2) + 1i * as_array(im2))
    x$imag <- 0
    expect_true(all(Im(as_array(x)) == 0))
    expect_equal(as_array(torch_real(x)), as_array(re2))
    expect_identical(as_array(torch_complex(1, 1)), 1 + 1i)
    # Broadcasting parts, and torch_polar.
    b <- torch_complex(torch_ones(3, 1, device = device), torch_tensor(c(1, 2), device = device))
    expect_equal(as_array(b), matrix(complex(real = 1, imaginary = rep(c(1, 2), each = 3)), 3, 2))
    p <- torch_polar(torch_tensor(2, device = device), torch_tensor(pi / 2, device = device))
    expect_equal(as_array(p), 2i, tolerance = 1e-6)
  }
  expect_error(torch_imag(torch_ones(2)), "non-complex", class = "rcuda_dtype_error")
  expect_error(torch_complex(torch_ones(2), torch_ones(2, dtype = torch_double())), "both float32 or both float64",
               class = "rcuda_dtype_error")
})

test_that("view_as_real and view_as_complex share memory", {
  z <- random_complex(2, 3)
  x <- torch_tensor(z, dtype = torch_cdouble())
  r <- torch_view_as_real(x)
  expect_equal(r$shape, c(2, 3, 2))
  expect_identical(as_array(r)[, , 1], Re(z))
  expect_identical(as_array(r)[, , 2], Im(z))
  r[1, 1, 2] <- 10
  expect_identical(as_array(x)[1, 1], complex(real = Re(z[1, 1]), imaginary = 10))
  expect_identical(as_array(torch_view_as_complex(r)), as_array(x))
  expect_error(torch_view_as_complex(torch_ones(3, 3)), "size 2", class = "rcuda_shape_error")
})

test_that("arithmetic, abs, angle and conj match base R, with broadcasting", {
  for (device in test_devices()) {
    for (dtype in list(torch_cfloat(), torch_cdouble())) {
      tol <- if (dtype == torch_cfloat()) 1e-5 else 1e-12
      a <- random_complex(3, 1, 4)
      b <- random_complex(2, 4)
      r <- rnorm(4)
      ta <- torch_tensor(a, dtype = dtype, device = device)
      tb <- torch_tensor(b, dtype = dtype, device = device)
      tr <- torch_tensor(r, dtype = if (dtype == torch_cfloat()) torch_float() else torch_double(), device = device)
      # Broadcasting as torch: [3, 1, 4] with [2, 4] gives [3, 2, 4].
      ref <- function(f, x, y) {
        out <- array(0i, c(3, 2, 4))
        for (i in 1:3) for (j in 1:2) out[i, j, ] <- f(x[i, 1, ], if (is.matrix(y)) y[j, ] else y)
        out
      }
      expect_equal(as_array(ta + tb), ref(`+`, a, b), tolerance = tol)
      expect_equal(as_array(ta - tb), ref(`-`, a, b), tolerance = tol)
      expect_equal(as_array(ta * tb), ref(`*`, a, b), tolerance = tol)
      expect_equal(as_array(ta / tb), ref(`/`, a, b), tolerance = tol)
      expect_equal(as_array(ta * tr), array(rep(a, 1) * rep(r, each = 3), c(3, 1, 4)), tolerance = tol)
      expect_equal(as_array(2 * ta), 2 * a, tolerance = tol)
      expect_equal(as_array(ta * 1i), a * 1i, tolerance = tol)
      expect_equal(as_array(-ta), -a, tolerance = tol)
      expect_equal(as_array(abs(ta)), Mod(a), tolerance = tol)
      expect_equal(as_array(ta$abs()), Mod(a), tolerance = tol)
      expect_equal(as_array(torch_angle(ta)), Arg(a), tolerance = tol)
      expect_equal(as_array(ta$conj()), Conj(a), tolerance = tol)
      expect_true(as_array(torch_all(ta == ta$conj()$conj())))
      expect_true(torch_allclose(ta, torch_tensor(a, dtype = dtype, device = device)))
      expect_false(torch_allclose(ta, ta$conj()))
      expect_true(torch_equal(tb, tb * 1))
    }
  }
})

test_that("ops without complex support say so, and complex tensors record no gradients", {
  x <- torch_tensor(random_complex(3))
  expect_error(torch_exp(x), "exp: not supported for complex64", class = "rcuda_dtype_error")
  expect_error(torch_sum(x), "does not support complex64", class = "rcuda_dtype_error")
  expect_error(x > x, "not supported for complex tensors", class = "rcuda_dtype_error")
  expect_error(x$requires_grad_(TRUE), class = "rcuda_dtype_error")
  w <- torch_ones(3, requires_grad = TRUE)
  expect_error(x * w, "record no gradients", class = "rcuda_dtype_error")
})

test_that("complex tensors print their values and save as safetensors' C64", {
  x <- torch_complex(torch_tensor(c(1, -2)), torch_tensor(c(0.5, 3)))
  out <- capture.output(print(x))
  expect_equal(out[1], "torch_tensor")
  expect_match(out[length(out)], "[ CPUComplexFloatType{2} ]", fixed = TRUE)
  expect_true(any(grepl("1+0.5i -2+3.0i", out, fixed = TRUE)))
  path <- tempfile(fileext = ".safetensors")
  z <- torch_randn(10, 10)$to(dtype = "cfloat")
  torch_save(z, path)
  back <- torch_load(path)
  expect_true(back$dtype == torch_cfloat())
  expect_true(torch_allclose(back$real, z$real))
  expect_true(torch_allclose(back$imag, z$imag))
  expect_error(torch_save(z$to(dtype = torch_cdouble()), tempfile()), "no complex128", class = "rcuda_dtype_error")
})

test_that("linalg_eig and linalg_eigvals match base R's eigen()", {
  for (device in test_devices()) {
    a <- matrix(rnorm(25), 5, 5)
    e <- linalg_eig(torch_tensor(a, dtype = torch_double(), device = device))
    expect_length(e, 2)
    expect_true(e$eigenvalues$dtype == torch_cdouble())
    expect_equal(e$eigenvalues$device$type, device)
    w <- as_array(e$eigenvalues)
    v <- as_array(e$eigenvectors)
    ref <- as.complex(eigen(a)$values)  # (a double vector when every eigenvalue is real)
    # Both come from LAPACK's geev, but in its order for rcuda and by modulus for eigen().
    expect_equal(sort_by_value(w), sort_by_value(ref), tolerance = 1e-10)
    expect_equal(a %*% v, v %*% diag(w), tolerance = 1e-10)
    expect_equal(colSums(Mod(v)^2), rep(1, 5), tolerance = 1e-10)
    expect_equal(sort_by_value(as_array(linalg_eigvals(torch_tensor(a, device = device))), 3), sort_by_value(w, 3),
                 tolerance = 1e-4)
    # Complex input, batched.
    zs <- array(random_complex(2 * 3 * 3), c(2, 3, 3))
    ez <- linalg_eig(torch_tensor(zs, dtype = torch_cdouble(), device = device))
    for (b in 1:2) {
      vb <- as_array(ez$eigenvectors)[b, , ]
      expect_equal(zs[b, , ] %*% vb, vb %*% diag(as_array(ez$eigenvalues)[b, ]), tolerance = 1e-10)
      expect_equal(sort_by_value(as_array(ez$eigenvalues)[b, ]), sort_by_value(eigen(zs[b, , ])$values), tolerance = 1e-10)
    }
  }
  # torch for R's own checks.
  expect_equal(linalg_eigvals(torch_randn(2, 2))$shape, 2)
  expect_error(linalg_eig(torch_tensor(matrix(c(1, NaN, 0, 1), 2))), "non-finite", class = "rcuda_value_error")
})
