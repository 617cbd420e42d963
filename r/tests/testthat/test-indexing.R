test_that("indexing follows torch for R's 1-based rules", {
  for (device in test_devices()) {
    x <- random_array(4, 5, 6)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    expect_equal(as.array(a[1, 2, 3]), x[1, 2, 3])
    expect_equal(as.array(a[1:2, 2:4, 1]), x[1:2, 2:4, 1])
    expect_equal(as.array(a[2, , ]), x[2, , ])
    expect_equal(as.array(a[, , 6]), x[, , 6])
    expect_equal(as.array(a[-1, 1, 1]), x[4, 1, 1])        # negative: from the end
    expect_equal(as.array(a[c(1, 3), 1, 1]), x[c(1, 3), 1, 1])  # evenly spaced: a slice
    expect_equal(as.array(a[c(4, 1, 2), 1, 1]), x[c(4, 1, 2), 1, 1])  # any order: a copy
    expect_equal(as.array(a[1:2, seq(1, 5, by = 2), 1]), x[1:2, seq(1, 5, by = 2), 1])
    expect_equal(as.array(a[.., 2]), x[, , 2])
    expect_equal(a[1, , , drop = FALSE]$shape, c(1L, 5L, 6L))
    expect_equal(a[2:3]$shape, c(2L, 5L, 6L))
  }
})

test_that("masks select elements", {
  x <- random_array(3, 4)
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(sort(as.array(a[a > 0])), sort(x[x > 0]))
})

test_that("out-of-range and zero indices are rcuda_index_error", {
  a <- torch_ones(3, 3)
  expect_error(a[4, 1], class = "rcuda_index_error")
  expect_error(a[0, 1], class = "rcuda_index_error")
  expect_error(a[1, 1, 1], class = "rcuda_index_error")
})

test_that("assignment writes in place through views", {
  x <- random_array(3, 4)
  a <- torch_tensor(x, dtype = torch_double())
  a[1, ] <- 0
  x[1, ] <- 0
  expect_equal(as.array(a), x)
  a[2:3, 2] <- torch_tensor(c(7, 8), dtype = torch_double())
  x[2:3, 2] <- c(7, 8)
  expect_equal(as.array(a), x)
  a[a > 1] <- 1
  x[x > 1] <- 1
  expect_equal(as.array(a), x)
})

test_that("views and shape methods", {
  x <- random_array(2, 3, 4)
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(a$size(), c(2L, 3L, 4L))
  expect_equal(a$size(-1), 4L)
  expect_equal(a$dim(), 3L)
  expect_equal(a$numel(), 24)
  expect_equal(length(a), 24)
  expect_equal(dim(a), c(2L, 3L, 4L))
  expect_equal(a$view(c(6, 4))$shape, c(6L, 4L))
  expect_equal(a$reshape(c(-1, 2))$shape, c(12L, 2L))
  expect_equal(as.array(a$permute(c(3, 1, 2))), aperm(x, c(3, 1, 2)))
  expect_equal(as.array(a$transpose(1, 3)), aperm(x, c(3, 2, 1)))
  m <- a[1, , ]
  expect_equal(as.array(m$t()), t(x[1, , ]))
  expect_false(m$t()$is_contiguous())
  expect_true(m$t()$contiguous()$is_contiguous())
  expect_equal(a$unsqueeze(1)$shape, c(1L, 2L, 3L, 4L))
  expect_equal(a$unsqueeze(1)$squeeze()$shape, c(2L, 3L, 4L))
  expect_equal(a$flatten()$shape, 24L)
  expect_equal(torch_ones(1, 3)$expand(c(2, 3))$shape, c(2L, 3L))
  b <- a$clone()
  b[1, 1, 1] <- 100
  expect_equal(as.array(a[1, 1, 1]), x[1, 1, 1])
  expect_error(a$view(c(5, 5)), class = "rcuda_shape_error")
  expect_error(a$nonexistent, class = "rcuda_value_error")
})
