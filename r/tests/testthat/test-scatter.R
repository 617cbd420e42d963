# gather, scatter, scatter_add and index_add against loops in base R, on fresh random inputs:
# 1-based dims and index values, as torch for R's.

long <- function(x) torch_tensor(x, dtype = torch_long())

# gather's definition: out[i, j] = x[index[i, j], j] (dim 1) or x[i, index[i, j]] (dim 2).
gather_ref <- function(x, dim, index) {
  out <- index + 0
  for (i in seq_len(nrow(index))) for (j in seq_len(ncol(index))) {
    out[i, j] <- if (dim == 1) x[index[i, j], j] else x[i, index[i, j]]
  }
  out
}

# scatter(_add)'s definition: out[index[i, j], j] = (+=) src[i, j] (dim 1), likewise for dim 2.
scatter_ref <- function(x, dim, index, src, add = FALSE) {
  for (i in seq_len(nrow(index))) for (j in seq_len(ncol(index))) {
    at <- if (dim == 1) cbind(index[i, j], j) else cbind(i, index[i, j])
    x[at] <- if (add) x[at] + src[i, j] else src[i, j]
  }
  x
}

test_that("torch_gather and $gather read what the definition reads, on every device", {
  for (device in test_devices()) {
    x <- random_array(4, 5)
    for (dim in 1:2) {
      n <- dim(x)[dim]
      index <- matrix(sample.int(n, 12, replace = TRUE), 3, 4)
      out <- torch_gather(torch_tensor(x, device = device), dim, long(index)$to(device = device))
      expect_equal(as_array(out$cpu()), gather_ref(x, dim, index), tolerance = 1e-6)
    }
    # A non-contiguous input (a transposed view) and a negative dim.
    xt <- torch_tensor(t(x), device = device)$t()
    index <- matrix(sample.int(5, 8, replace = TRUE), 4, 2)
    expect_equal(as_array(xt$gather(-1, long(index)$to(device = device))$cpu()),
                 gather_ref(x, 2, index), tolerance = 1e-6)
  }
})

test_that("scatter writes src or a value, scatter_add sums repeated positions", {
  for (device in test_devices()) {
    x <- random_array(4, 3)
    src <- random_array(2, 3)
    index <- rbind(c(1, 4, 2), c(3, 4, 2))  # column 2 and 3 hit one row twice
    unique_index <- rbind(c(1, 4, 2), c(3, 2, 1))
    on <- function(a) torch_tensor(a, device = device)
    expect_equal(as_array(torch_scatter(on(x), 1, long(unique_index)$to(device = device), on(src))$cpu()),
                 scatter_ref(x, 1, unique_index, src), tolerance = 1e-6)
    expect_equal(as_array(on(x)$scatter(1, long(unique_index)$to(device = device), -2.5)$cpu()),
                 scatter_ref(x, 1, unique_index, matrix(-2.5, 2, 3)), tolerance = 1e-6)
    expect_equal(as_array(on(x)$scatter(1, long(unique_index)$to(device = device), value = 7)$cpu()),
                 scatter_ref(x, 1, unique_index, matrix(7, 2, 3)), tolerance = 1e-6)
    expect_equal(as_array(torch_scatter_add(on(x), 1, long(index)$to(device = device), on(src))$cpu()),
                 scatter_ref(x, 1, index, src, add = TRUE), tolerance = 1e-6)
    index2 <- rbind(c(3, 3), c(1, 2), c(2, 1), c(3, 1))  # along dim 2
    src2 <- random_array(4, 2)
    expect_equal(as_array(on(x)$scatter_add(2, long(index2)$to(device = device), on(src2))$cpu()),
                 scatter_ref(x, 2, index2, src2, add = TRUE), tolerance = 1e-6)
  }
})

test_that("index_add adds alpha times the source's slices at the indexed positions", {
  for (device in test_devices()) {
    x <- random_array(5, 3)
    source <- random_array(4, 3)
    index <- c(2, 5, 2, 1)
    expected <- x
    for (j in seq_along(index)) expected[index[j], ] <- expected[index[j], ] + 0.5 * source[j, ]
    on <- function(a) torch_tensor(a, device = device)
    out <- torch_index_add(on(x), 1, long(index)$to(device = device), on(source), alpha = 0.5)
    expect_equal(as_array(out$cpu()), expected, tolerance = 1e-6)
    # Along dim 2, alpha 1.
    source2 <- random_array(5, 2)
    expected2 <- x
    for (j in 1:2) expected2[, c(3, 1)[j]] <- expected2[, c(3, 1)[j]] + source2[, j]
    expect_equal(as_array(on(x)$index_add(2, long(c(3, 1))$to(device = device), on(source2))$cpu()),
                 expected2, tolerance = 1e-6)
  }
})

test_that("the in-place forms write into self and keep it", {
  z <- torch_zeros(3, 5)
  same <- z$scatter_(1, long(matrix(c(1, 2), ncol = 1)), 1)
  expect_identical(as_array(z), rbind(c(1, 0, 0, 0, 0), c(1, 0, 0, 0, 0), rep(0, 5)))
  expect_identical(as_array(same), as_array(z))
  z$scatter_add_(2, long(matrix(c(5, 5, 5), ncol = 1)), torch_ones(3, 1))
  expect_identical(as_array(z)[, 5], c(1, 1, 1))
  z$index_add_(1, long(3), torch_full(c(1, 5), 2))
  expect_identical(as_array(z)[3, ], c(2, 2, 2, 2, 3))
})

test_that("gradients flow through gather, scatter_add and index_add as their definitions say", {
  x <- random_array(4, 3)
  index <- matrix(sample.int(4, 6, replace = TRUE), 2, 3)
  w <- random_array(2, 3)
  xt <- torch_tensor(x, requires_grad = TRUE)
  (torch_gather(xt, 1, long(index)) * torch_tensor(w))$sum()$backward()
  # d/dx of sum(w * x[index]): w summed into the gathered positions.
  expect_equal(as_array(xt$grad), scatter_ref(x * 0, 1, index, w, add = TRUE), tolerance = 1e-6)

  src <- torch_tensor(random_array(2, 3), requires_grad = TRUE)
  base <- torch_tensor(x, requires_grad = TRUE)
  v <- random_array(4, 3)
  (torch_scatter_add(base, 1, long(index), src) * torch_tensor(v))$sum()$backward()
  expect_equal(as_array(base$grad), v, tolerance = 1e-6)
  expect_equal(as_array(src$grad), gather_ref(v, 1, index), tolerance = 1e-6)

  source <- torch_tensor(random_array(2, 3), requires_grad = TRUE)
  (torch_index_add(torch_zeros(4, 3), 1, long(c(4, 2)), source, alpha = 3) * torch_tensor(v))$sum()$backward()
  expect_equal(as_array(source$grad), 3 * v[c(4, 2), ], tolerance = 1e-6)
})

test_that("empty indices change nothing, and bad arguments are errors naming the op", {
  x <- torch_randn(3, 2)
  empty <- torch_zeros(0, 2, dtype = torch_long())
  expect_equal(dim(as_array(torch_gather(x, 1, empty))), c(0, 2))
  expect_identical(as_array(torch_scatter_add(x, 1, empty, torch_zeros(0, 2))), as_array(x))
  index <- long(matrix(c(1, 2), ncol = 1))
  expect_error(torch_gather(x, 1, torch_tensor(matrix(c(1, 2), ncol = 1))),
               "gather: index must be an int64 tensor \\(dtype = torch_long\\(\\)\\), got float32",
               class = "rcuda_dtype_error")
  expect_error(torch_gather(x, 3, index), "gather: Dimension out of range (expected to be in range of [-2, 2], but got 3)", fixed = TRUE)
  expect_error(torch_gather(x, 1, long(matrix(c(0, 1), ncol = 1))),
               "gather: index 0 is out of bounds for dimension 1 with size 3 \\(index values count from 1\\)",
               class = "rcuda_index_error")
  expect_error(torch_gather(x, 1, long(matrix(c(4, 1), ncol = 1))), "index 4 is out of bounds")
  expect_error(x$scatter(1, index, 1, reduce = "multiply"), "scatter: reduce = \"multiply\" is not supported")
  expect_error(x$scatter(1, index), "give src \\(a tensor or a number\\) or value")
  expect_error(torch_index_add(x, 1, long(matrix(1:2, 1)), torch_ones(2, 2)), "index_add: index must be 1-D")
  expect_error(torch_index_add(x, 1, long(c(1, 2)), torch_ones(3, 2)),
               "index_add: the index has 2 elements but the source has 3 along dim 1")
  expect_identical(as_array(torch_masked_fill(torch_ones(2), torch_tensor(c(TRUE, FALSE)), 5)), c(5, 1))
})

test_that("nnf_one_hot puts a 1 at each 1-based class, as torch for R's", {
  for (device in test_devices()) {
    classes <- matrix(c(3, 1, 2, 3, 3, 1), 2)
    out <- nnf_one_hot(long(classes)$to(device = device))
    expect_identical(out$dtype, torch_long())
    expected <- array(0, c(2, 3, 3))
    for (i in 1:2) for (j in 1:3) expected[i, j, classes[i, j]] <- 1
    expect_equal(as_array(out$cpu()), expected)
    expect_equal(as_array(nnf_one_hot(long(c(2, 1))$to(device = device), 4)$cpu()),
                 rbind(c(0, 1, 0, 0), c(1, 0, 0, 0)))
  }
  expect_error(nnf_one_hot(long(0)), "nnf_one_hot: class values must be at least 1, got 0")
  expect_error(nnf_one_hot(long(5), 3), "class value 5 is out of range for num_classes 3")
  expect_error(nnf_one_hot(torch_tensor(1)), "nnf_one_hot: tensor must be an int64 tensor",
               class = "rcuda_dtype_error")
  expect_error(nnf_one_hot(long(1), 0), "num_classes must be a whole number >= 1, or -1")
})
