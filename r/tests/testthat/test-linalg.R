test_that("matmul, mm, bmm and %*% match base R", {
  for (device in test_devices()) {
    x <- random_array(4, 3)
    y <- random_array(3, 5)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    b <- torch_tensor(y, dtype = torch_double(), device = device)
    expect_equal(as.array(a %*% b), x %*% y)
    expect_equal(as.array(torch_matmul(a, b)), x %*% y)
    expect_equal(as.array(torch_mm(a, b)), x %*% y)
    expect_equal(as.array(a$matmul(b)), x %*% y)
    expect_equal(as.array(a %*% y), x %*% y)
    p <- random_array(2, 4, 3)
    q <- random_array(2, 3, 5)
    out <- as.array(torch_bmm(torch_tensor(p, dtype = torch_double(), device = device),
                              torch_tensor(q, dtype = torch_double(), device = device)))
    expect_equal(out[2, , ], p[2, , ] %*% q[2, , ])
  }
  expect_error(torch_mm(torch_ones(2, 3), torch_ones(2, 3)), class = "rcuda_shape_error")
  expect_error(torch_mm(torch_ones(2, 2, dtype = torch_int()), torch_ones(2, 2, dtype = torch_int())),
               class = "rcuda_dtype_error")
})

test_that("float32 matmul of a 100 x 100 product is close to double precision", {
  x <- random_array(100, 100)
  expect_equal(as.array(torch_tensor(x) %*% torch_tensor(x)), x %*% x, tolerance = 1e-5)
})

test_that("cat and stack join along 1-based dims", {
  x <- random_array(2, 3)
  y <- random_array(2, 3)
  a <- torch_tensor(x, dtype = torch_double())
  b <- torch_tensor(y, dtype = torch_double())
  expect_equal(as.array(torch_cat(list(a, b))), rbind(x, y))
  expect_equal(as.array(torch_cat(list(a, b), dim = 2)), cbind(x, y))
  s <- as.array(torch_stack(list(a, b)))
  expect_equal(s[1, , ], x)
  expect_equal(s[2, , ], y)
  expect_error(torch_cat(list(a, torch_ones(3, 3, dtype = torch_double())), dim = 2), class = "rcuda_shape_error")
})
