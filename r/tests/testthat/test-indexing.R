test_that("indexing follows torch for R's 1-based rules", {
  for (device in test_devices()) {
    x <- random_array(4, 5, 6)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    expect_equal(as.array(a[1, 2, 3]), x[1, 2, 3])
    expect_equal(as.array(a[1:2, 2:4, 1]), x[1:2, 2:4, 1])
    expect_equal(as.array(a[2, , ]), x[2, , ])
    expect_equal(as.array(a[, , 6]), x[, , 6])
    expect_equal(as.array(a[-1, 1, 1]), x[4, 1, 1])        # negative: from the end
    expect_equal(as.array(a[c(1, 3), 1, 1]), x[c(1, 3), 1, 1])
    expect_equal(as.array(a[c(4, 1, 2), 1, 1]), x[c(4, 1, 2), 1, 1])  # any order
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

test_that("a:b in an index is an inclusive slice; a:b:s steps; negative ends count from the end", {
  for (device in test_devices()) {
    x <- random_array(10)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    expect_equal(as.array(a[2:5]), x[2:5])
    expect_equal(as.array(a[1:10:2]), x[seq(1, 10, by = 2)])
    expect_equal(as.array(a[2:9:3]), x[seq(2, 9, by = 3)])
    expect_equal(as.array(a[-2:10]), x[9:10])
    expect_equal(as.array(a[1:(-7)]), x[1:4])
    expect_equal(as.array(a[-3:-1]), x[8:10])
    expect_equal(as.array(a[(2):(4)]), x[2:4])
    expect_equal(as.array(a[0:3]), x[1:3])      # start 0 is the first element, as slc()
    expect_equal(as.array(a[8:20]), x[8:10])    # past the end: clipped
    expect_equal(a[5:1]$shape, 0L)              # a start after the end selects nothing
    i <- 3
    j <- 6
    expect_equal(as.array(a[i:j]), x[i:j])
    expect_equal(as.array(a[c(1:3, 7)]), x[c(1:3, 7)])  # `:` inside other calls is R's
    m <- random_array(6, 7)
    b <- torch_tensor(m, dtype = torch_double(), device = device)
    expect_equal(as.array(b[2:5:2, -3:-1]), m[c(2, 4), 5:7])
    expect_equal(as.array(b[, 1:7:3]), m[, c(1, 4, 7)])
  }
})

test_that("N is the size of the dim it indexes", {
  x <- random_array(5, 8)
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(as.array(a[2:N, 1]), x[2:5, 1])
  expect_equal(as.array(a[1, 2:N]), x[1, 2:8])
  expect_equal(as.array(a[N, N]), x[5, 8])
  expect_equal(as.array(a[.., (N - 2):N]), x[, 6:8])
  expect_equal(as.array(a[1:N:2, N]), x[c(1, 3, 5), 8])
})

test_that("slices are views and vectors are copies, as torch for R", {
  x <- random_array(6)
  a <- torch_tensor(x, dtype = torch_double())
  v <- a[2:4]
  v$fill_(0)
  x[2:4] <- 0
  expect_equal(as.array(a), x)
  w <- a[c(5, 6)]
  w$fill_(1)
  expect_equal(as.array(a), x)  # unchanged
})

test_that("slc() builds the slice a:b:s does", {
  x <- random_array(10, 10)
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(as.array(a[slc(start = 1, end = 5, step = 2), ]), x[seq(1, 5, by = 2), ])
  expect_equal(as.array(a[slc(1, 5, 2), slc(1, 5, 2)]), x[seq(1, 5, by = 2), seq(1, 5, by = 2)])
  expect_equal(as.array(a[slc(2, Inf), 1]), x[2:10, 1])
  s <- slc(3, -1)
  expect_equal(as.array(a[s, s]), x[3:10, 3:10])
  expect_output(print(slc(1, 3, 5)), "<slice 1:3:5>")
  expect_error(slc(1, 5, 0), "slc: step must be a whole number of at least 1, got 0", class = "rcuda_index_error")
  expect_error(slc(NA, 5), "slc: start must be a single number", class = "rcuda_index_error")
  expect_error(a[1:5:-1, ], "step must be a whole number of at least 1, got -1", class = "rcuda_index_error")
  expect_error(suppressWarnings(a[1:c(5, 6), ]), "index a:b: end must be a single number, got c\\(5, 6\\)",
               class = "rcuda_index_error")
})

test_that("`..` stands for the dims not indexed", {
  x <- random_array(3, 4, 5, 2)
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(as.array(a[1, ..]), x[1, , , ])
  expect_equal(as.array(a[1, 2, ..]), x[1, 2, , ])
  expect_equal(as.array(a[.., 1]), x[, , , 1])
  expect_equal(as.array(a[.., 2, 1]), x[, , 2, 1])
  expect_equal(as.array(a[2, .., 1]), x[2, , , 1])
  expect_equal(as.array(a[1, 2, 3, .., 1]), x[1, 2, 3, 1])  # `..` may stand for no dim
  expect_equal(a[..]$shape, c(3L, 4L, 5L, 2L))
  v <- torch_randn(10)
  expect_equal(as.array(v[1:5, ..]), as.array(v[1:5]))
  expect_error(a[.., 1, ..], "only one `..`", class = "rcuda_index_error")
})

test_that("NULL and newaxis insert a dim of size 1", {
  x <- random_array(10)
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(a[, NULL]$shape, c(10L, 1L))
  expect_equal(a[NULL, , NULL]$shape, c(1L, 10L, 1L))
  expect_equal(a[NULL, , NULL, NULL]$shape, c(1L, 10L, 1L, 1L))
  expect_equal(a[, newaxis]$shape, c(10L, 1L))
  expect_equal(a[newaxis, , newaxis]$shape, c(1L, 10L, 1L))
  expect_equal(as.vector(as.array(a[newaxis, 2:4])), x[2:4])
  m <- random_array(3, 4)
  b <- torch_tensor(m, dtype = torch_double())
  expect_equal(as.array(b[, newaxis, 2]), matrix(m[, 2], 3, 1))
  expect_equal(b[.., NULL]$shape, c(3L, 4L, 1L))
})

test_that("uneven vectors, logicals and negatives select as base R, per dim", {
  for (device in test_devices()) {
    x <- random_array(5, 6, 4)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    expect_equal(as.array(a[c(5, 1, 2), c(6, 2), 3]), x[c(5, 1, 2), c(6, 2), 3])
    expect_equal(as.array(a[c(1, 1, 4), 1, ]), x[c(1, 1, 4), 1, ])  # repeats
    expect_equal(as.array(a[c(-1, -5), 2, 2]), x[c(5, 1), 2, 2])   # from the end
    lg <- c(TRUE, FALSE, TRUE, TRUE, FALSE, FALSE)
    expect_equal(as.array(a[, lg, 1]), x[, lg, 1])
    expect_equal(as.array(a[c(TRUE, FALSE, TRUE, FALSE, TRUE), lg, c(FALSE, TRUE, TRUE, FALSE)]),
                 x[c(TRUE, FALSE, TRUE, FALSE, TRUE), lg, c(FALSE, TRUE, TRUE, FALSE)])
    expect_equal(a[integer(0), , 1]$shape, c(0L, 6L))
    expect_equal(a[c(FALSE, FALSE, FALSE, FALSE, FALSE), 1, 1]$shape, 0L)
  }
})

test_that("long tensors index like vectors, 0-d ones like numbers", {
  x <- random_array(4, 5)
  a <- torch_tensor(x, dtype = torch_double())
  i <- torch_tensor(c(3, 1, -1), dtype = torch_long())
  expect_equal(as.array(a[i, 2]), x[c(3, 1, 4), 2])
  expect_equal(as.array(a[i, i]), x[c(3, 1, 4), c(3, 1, 5)])
  one <- torch_tensor(2, dtype = torch_long())
  expect_equal(a[one, one]$shape, c(1L, 1L))   # a 1-element vector keeps its dim
  s <- torch_scalar_tensor(2, dtype = torch_long())
  expect_equal(as.array(a[s, s]), x[2, 2])     # a 0-d tensor drops it
  k <- torch_tensor(matrix(c(1, 2, 4, 3), 2), dtype = torch_long())
  expect_equal(a[k, 1]$shape, c(2L, 2L))       # a k-d index puts its shape in place of the dim
  expect_equal(as.array(a[k, 1]), matrix(x[c(1, 2, 4, 3), 1], 2))
  expect_equal(a[, k]$shape, c(4L, 2L, 2L))
  expect_error(a[torch_tensor(c(1, 0), dtype = torch_long()), ], "Indexing starts at 1 but found a 0 \\(dim 1\\)",
               class = "rcuda_index_error")
  expect_error(a[torch_tensor(c(1, 2)), ], "index tensors must be long \\(int64\\) or bool, got float32 for dim 1",
               class = "rcuda_index_error")
  expect_error(a[, torch_tensor(c(1L, 9L))], "index 9 is out of bounds for dimension 2 with size 5",
               class = "rcuda_index_error")
})

test_that("bool tensors select over as many dims as they have", {
  for (device in test_devices()) {
    x <- random_array(3, 4, 5)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    expect_equal(as.array(a[a > 0]), aperm(x, 3:1)[aperm(x, 3:1) > 0])  # row-major order
    # masks with at least two TRUEs, so that base R's reference keeps its dims
    m <- matrix(sample(rep(c(TRUE, FALSE), 6)), 3)
    mask <- torch_tensor(m, device = device)
    # rows of the result are the (i, j) with m[i, j], row-major, each holding x[i, j, ]
    ij <- which(t(m), arr.ind = TRUE)[, 2:1, drop = FALSE]
    expected <- t(apply(ij, 1, function(p) x[p[1], p[2], ]))
    expect_equal(as.array(a[mask]), unname(expected))
    expect_equal(as.array(a[mask, 2]), unname(expected[, 2]))
    v <- sample(c(TRUE, TRUE, FALSE, FALSE))
    expect_equal(as.array(a[2, torch_tensor(v, device = device), ]), x[2, v, ])
    w <- sample(c(TRUE, TRUE, TRUE, FALSE, FALSE))
    expect_equal(as.array(a[.., torch_tensor(w, device = device)]), x[, , w])
    expect_error(a[mask, 1, 1], "too many indices", class = "rcuda_index_error")
    expect_error(a[torch_tensor(c(TRUE, FALSE)), ], "bool index of shape \\[2\\] does not match dims 1 to 1 of shape \\[3\\]",
                 class = "rcuda_index_error")
  }
  expect_error(torch_ones(3)[torch_scalar_tensor(TRUE)], "0-d bool tensor", class = "rcuda_index_error")
})

test_that("bad indices are rcuda_index_errors naming the dim and the value", {
  a <- torch_ones(3, 4)
  expect_error(a[1, 5], "index 5 is out of bounds for dimension 2 with size 4", class = "rcuda_index_error")
  expect_error(a[c(1, 0), 1], "Indexing starts at 1 but found a 0 \\(dim 1\\)", class = "rcuda_index_error")
  expect_error(a[c(1, NA), 1], "without NA \\(dim 1\\)", class = "rcuda_index_error")
  expect_error(a[c(TRUE, NA, FALSE), 1], "logical index for dim 1 holds NA", class = "rcuda_index_error")
  expect_error(a[c(TRUE, FALSE), 1], "logical index of length 2 for dim 1 of size 3", class = "rcuda_index_error")
  expect_error(a["a", 1], "unsupported index for dim 1: character", class = "rcuda_index_error")
  expect_error(a[list(1), 1], "unsupported index for dim 1: list", class = "rcuda_index_error")
  expect_error(a[1, 1, 1], "too many indices \\(3\\) for a 2-d tensor", class = "rcuda_index_error")
  expect_error(a[-4, 1], "index -4 is out of bounds for dimension 1 with size 3", class = "rcuda_index_error")
  expect_error(a[if (N > 1) NULL else 1, 1], "an index that uses N must index one dim", class = "rcuda_index_error")
  expect_error(torch_ones(0)[1], "index 1 is out of bounds for dimension 1 with size 0", class = "rcuda_index_error")
})

test_that("x[] is all of x, also for 0-d tensors", {
  s <- torch_scalar_tensor(2, dtype = torch_double())
  s[] <- 5
  expect_identical(as.array(s), 5)
  expect_error(s[1], "too many indices \\(1\\) for a 0-d tensor", class = "rcuda_index_error")
  x <- random_array(3)
  v <- torch_zeros(3, dtype = torch_double())
  v[] <- x
  expect_identical(as.array(v[]), x)
})

test_that("indexing empty tensors", {
  e <- torch_zeros(0, 3)
  expect_equal(e[, 2]$shape, 0L)
  expect_equal(e[1:N, 2:3]$shape, c(0L, 2L))
  expect_equal(e[e > 0]$shape, 0L)
  expect_equal(e[.., NULL]$shape, c(0L, 3L, 1L))
})

test_that("assignment through uneven vectors writes where base R writes", {
  for (device in test_devices()) {
    x <- random_array(8)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    a[c(1, 4, 5)] <- 0
    x[c(1, 4, 5)] <- 0
    expect_equal(as.array(a), x)
    a[c(-1, 2)] <- c(7.25, -3.5)     # negative: from the end
    x[c(8, 2)] <- c(7.25, -3.5)
    expect_equal(as.array(a), x)
    m <- random_array(5, 4)
    b <- torch_tensor(m, dtype = torch_double(), device = device)
    v <- rnorm(2)
    b[c(3, 1), 2] <- v
    m[c(3, 1), 2] <- v
    expect_identical(as.array(b), m)  # R doubles reach a float64 tensor unrounded
    w <- matrix(rnorm(6), 3)
    b[c(5, 1, 2), c(4, 1)] <- w
    m[c(5, 1, 2), c(4, 1)] <- w
    expect_equal(as.array(b), m)
    b[c(2, 4), ] <- torch_tensor(1:4, dtype = torch_double(), device = device)  # broadcast along rows
    m[c(2, 4), ] <- rep(1:4, each = 2)
    expect_equal(as.array(b), m)
    lg <- c(TRUE, FALSE, FALSE, TRUE)
    b[1, lg] <- -1
    m[1, lg] <- -1
    expect_equal(as.array(b), m)
    b[torch_tensor(c(4, 2), dtype = torch_long(), device = device), 3] <- c(10, 20)
    m[c(4, 2), 3] <- c(10, 20)
    expect_equal(as.array(b), m)
  }
})

test_that("assignment keeps the tensor's dtype", {
  for (dtype in list(torch_float(), torch_double(), torch_int(), torch_long(), torch_short(),
                     torch_int8(), torch_uint8())) {
    x <- sample(0:100, 12)
    a <- torch_tensor(x, dtype = dtype)
    a[c(6, 2, 11)] <- c(1L, 2L, 3L)
    x[c(6, 2, 11)] <- c(1L, 2L, 3L)
    a[c(1, 12)] <- 9
    x[c(1, 12)] <- 9L
    expect_true(a$dtype == dtype)
    values <- as.array(a)
    if (is.raw(values)) values <- as.integer(values)  # uint8 converts to bytes
    expect_equal(values, x)
  }
  f <- torch_tensor(c(TRUE, FALSE, TRUE, FALSE))
  f[c(4, 1)] <- c(TRUE, FALSE)
  expect_identical(as.array(f), c(FALSE, FALSE, TRUE, TRUE))
  i <- torch_tensor(1:4)
  i[c(2, 4)] <- c(2.9, -2.9)  # into integers: truncated, as a copy to int64 does
  expect_identical(as.array(i), c(1L, 2L, 3L, -2L))
})

test_that("masks, slices, N, `..` and new axes in assignment", {
  for (device in test_devices()) {
    x <- random_array(4, 5, 3)
    a <- torch_tensor(x, dtype = torch_double(), device = device)
    a[a > 1] <- 1
    x[x > 1] <- 1
    expect_equal(as.array(a), x)
    n <- sum(x < -0.5)
    v <- rnorm(n)
    a[a < -0.5] <- torch_tensor(v, dtype = torch_double(), device = device)  # row-major order
    xt <- aperm(x, 3:1)
    xt[xt < -0.5] <- v
    x <- aperm(xt, 3:1)
    expect_equal(as.array(a), x)
    m <- x[, , 2] > 0
    a[torch_tensor(m, device = device)] <- 0  # a mask over the leading dims
    x[array(m, c(4, 5, 3))] <- 0
    expect_equal(as.array(a), x)
    a[2:N:2, 1, ] <- 5
    x[c(2, 4), 1, ] <- 5
    expect_equal(as.array(a), x)
    a[.., 3] <- -2
    x[, , 3] <- -2
    expect_equal(as.array(a), x)
    a[1, c(5, 1), NULL, ] <- 8
    x[1, c(5, 1), ] <- 8
    expect_equal(as.array(a), x)
  }
})

test_that("assignment into a non-contiguous view writes into its base", {
  x <- random_array(3, 4)
  a <- torch_tensor(x, dtype = torch_double())
  t <- a$t()
  t[c(4, 1), 3] <- c(-1, -2)
  x[3, c(4, 1)] <- c(-1, -2)
  expect_equal(as.array(a), x)
  s <- a[, 1:N:2]
  s[c(3, 1), 2] <- 9
  x[c(3, 1), 3] <- 9
  expect_equal(as.array(a), x)
})

test_that("a value with extra leading size-1 dims fits, as torch", {
  a <- torch_zeros(2, 2)
  a[1, 1] <- torch_tensor(5)
  a[2, ] <- torch_ones(1, 1, 2)
  expect_equal(as.array(a), matrix(c(5, 1, 0, 1), 2))
  a[c(2, 1), 2] <- torch_tensor(matrix(c(3, 4), 1))
  expect_equal(as.array(a), matrix(c(5, 1, 4, 3), 2))
})

test_that("empty selections and bad values in assignment", {
  a <- torch_ones(3, 4)
  a[integer(0), 2] <- 5
  a[a > 2] <- torch_zeros(0)
  expect_equal(as.array(a), matrix(1, 3, 4))
  expect_error(a[c(1, 3), 1] <- c(1, 2, 3),
               "`\\[<-`: a value of shape \\[3\\] cannot be assigned to a selection of shape \\[2\\]",
               class = "rcuda_shape_error")
  expect_error(a[1:2, 1] <- torch_ones(3), "selection of shape \\[2\\]", class = "rcuda_shape_error")
  expect_error(a[c(3, 1), ] <- torch_ones(3, 4), "value of shape \\[3, 4\\] cannot be assigned to a selection of shape \\[2, 4\\]",
               class = "rcuda_shape_error")
  expect_error(a[1, 1] <- "b", "value must be a tensor, a number or a numeric or logical vector, got character",
               class = "rcuda_value_error")
  expect_error(a[5, 1] <- 0, "index 5 is out of bounds for dimension 1 with size 3", class = "rcuda_index_error")
  expect_equal(as.array(a), matrix(1, 3, 4))
})

test_that("N, newaxis and `..` work when R evaluates index arguments first (S4 methods for `[`)", {
  skip_if_not_installed("diffobj")
  loadNamespace("diffobj")  # defines S4 methods for `[`; on R 4.2 tensors are S4 objects
  x <- random_array(4, 6)
  a <- torch_tensor(x, dtype = torch_double())
  expect_equal(as.array(a[2:N, 1]), x[2:4, 1])
  expect_equal(as.array(a[.., N]), x[, 6])
  expect_equal(a[, newaxis, 1]$shape, c(4L, 1L))
  a[.., 2:N] <- 0
  x[, 2:6] <- 0
  expect_equal(as.array(a), x)
  expect_equal(N, 1L)  # outside an index, a stand-in
  expect_null(newaxis)
})

test_that("single numbers and variables holding them read the same element as base R", {
  x <- random_array(5, 4, 3)
  t <- torch_tensor(x, dtype = torch_double())
  for (rep in 1:20) {
    i <- sample(c(-5:-1, 1:5), 1); j <- sample(c(-4:-1, 1:4), 1); k <- sample(1:3, 1)
    bi <- if (i < 0) 6 + i else i
    bj <- if (j < 0) 5 + j else j
    expect_equal(t[i, j, k]$item(), x[bi, bj, k])
    expect_equal(as.array(t[i, , k]), x[bi, , k])
    expect_equal(as.array(t[, j]), x[, bj, ])
    expect_equal(dim(t[i, j, drop = FALSE]), c(1L, 1L, 3L))
    expect_equal(as.array(t[i, j, drop = FALSE])[1, 1, ], x[bi, bj, ])
    expect_equal(dim(t[i]), c(4L, 3L))
  }
  expect_equal(t[2, 3, 1]$item(), x[2, 3, 1])        # literals
  expect_equal(t[2L, -1, 1]$item(), x[2, 4, 1])      # integer and negative literals
  # Outside the fast path's cases, the general path decides (and names the error).
  expect_error(t[6, 1, 1], "out of bounds", class = "rcuda_index_error")
  expect_error(t[0, 1], class = "rcuda_index_error")
  expect_error(t[1, 1, 1, 1], class = "rcuda_index_error")
  n_out <- 6
  expect_error(t[n_out, 1], "out of bounds", class = "rcuda_index_error")
  expect_equal(as.array(t[2.0, N, 1:2]), x[2, 4, 1:2])
  expect_equal(t[1, 1, 1]$dtype, torch_float64())
})

test_that("assignment through single numbers and variables writes where base R writes", {
  x <- random_array(4, 5)
  t <- torch_tensor(x, dtype = torch_double())
  for (rep in 1:10) {
    i <- sample(c(-4:-1, 1:4), 1); j <- sample(1:5, 1); v <- rnorm(1)
    t[i, j] <- v
    x[if (i < 0) 5 + i else i, j] <- v
    expect_equal(as.array(t), x)
    row <- rnorm(5)
    t[i, ] <- row
    x[if (i < 0) 5 + i else i, ] <- row
    expect_equal(as.array(t), x)
  }
  t[2, 3] <- torch_tensor(7.5, dtype = torch_double())
  x[2, 3] <- 7.5
  expect_equal(as.array(t), x)
  n <- torch_tensor(matrix(1:6, 2))  # integer dtype is kept
  n[2, 1] <- 9
  expect_equal(as.array(n), matrix(c(1L, 9L, 3L, 4L, 5L, 6L), 2))
  expect_error(t[5, 1] <- 1, "out of bounds", class = "rcuda_index_error")
  expect_error(t[1, 1] <- c(1, 2), class = "rcuda_shape_error")
})

test_that("a:b of numbers or variables reads the same slice as the general path", {
  x <- random_array(6, 5)
  t <- torch_tensor(x, dtype = torch_double())
  for (rep in 1:20) {
    a <- sample(c(-6:-1, 1:6), 1); b <- sample(c(-6:-1, 1:6), 1)
    expect_equal(as.array(t[a:b, ]), as.array(t[slc(a, b), ]))
    expect_equal(as.array(t[a:b, 2]), as.array(t[slc(a, b), 2]))
  }
  expect_equal(as.array(t[2:4, ]), x[2:4, ])
  expect_equal(as.array(t[2:4, -2:-1]), x[2:4, 4:5])
  expect_equal(dim(t[5:2, ]), c(0L, 5L))            # start after end: empty, as torch for R
  expect_equal(as.array(t[2:10, 1]), x[2:6, 1])     # end past the dim: clipped
  i <- 2; j <- 3
  expect_equal(as.array(t[i:j, j]), x[2:3, 3])
  t2 <- t[2:3, ]
  t2[1, 1] <- 100
  expect_equal(t[2, 1]$item(), 100)                  # it is a view of t
})

test_that("an R matrix or array indexes as the tensor made from it, on every device", {
  for (dev in test_devices()) {
    v <- matrix(rnorm(20), 4, 5)
    x <- torch_tensor(v, dtype = torch_double(), device = dev)
    y <- rbind(c(1, 3), c(4, -1))
    # Numbers: a long index with the matrix's shape in place of dim 1 (torch for R's #1181).
    got <- x[y]
    expect_equal(got$shape, c(2, 2, 5))
    expect_equal(as.array(got$cpu()), array(v[c(1, 4, 3, 4), ], c(2, 2, 5)))
    expect_equal(as.array(x[, y]$cpu()), array(v[, c(1, 4, 3, 5)], c(4, 2, 2)))
    # Logicals: a mask over as many dims as the array has.
    m <- v > 0
    expect_equal(as.array(x[m]$cpu()), t(v)[t(m)])  # in row-major order, as torch's
    expect_equal(as.array(x[m]$cpu()), as.array(x[x > 0]$cpu()))
    # Assignment takes the same indices.
    z <- x$clone()
    z[m] <- 0
    expect_equal(as.array(z$cpu()), ifelse(m, 0, v))
    z[y] <- 7
    expect_true(all(as.array(z$cpu())[c(1, 3, 4), ] == 7))
    expect_error(x[matrix(c(1.5, 2, 1, 1), 2)], "must hold whole numbers", class = "rcuda_index_error")
    expect_error(x[matrix(c(TRUE, NA, TRUE, TRUE), 2)], "holds NA", class = "rcuda_index_error")
    expect_error(x[matrix(TRUE, 2, 2)], "bool index of shape \\[2, 2\\] does not match", class = "rcuda_index_error")
  }
})
