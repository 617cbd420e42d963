# Shape functions (R/tensor-shape.R) against base R references on fresh random inputs.

f64 <- function(a) torch_tensor(a, dtype = torch_float64())
f32 <- function(a) torch_tensor(a, dtype = torch_float32())
# A non-contiguous view holding a's values: the transpose of a tensor made from t(a).
f64_t <- function(a) f64(t(a))$t()
# TRUE when y shares x's memory: writing into x shows in y.
shares_memory <- function(x, y) {
  with_no_grad(x$fill_(7))
  all(as_array(y) == 7)
}

test_that("torch_chunk and torch_split cut a dim into narrow views", {
  for (make in list(f64, f32)) {
    a <- random_array(7, 4)
    x <- make(a)
    pieces <- torch_chunk(x, 3)
    expect_length(pieces, 3)
    expect_equal(as_array(pieces[[1]]), a[1:3, ], tolerance = 1e-6)
    expect_equal(as_array(pieces[[3]]), a[7, , drop = FALSE], tolerance = 1e-6)
    cols <- x$chunk(2, dim = -1)
    expect_equal(as_array(cols[[2]]), a[, 3:4], tolerance = 1e-6)
    parts <- torch_split(x, 2)
    expect_equal(vapply(parts, function(p) p$shape[1], integer(1)), c(2L, 2L, 2L, 1L))
    expect_equal(as_array(parts[[4]]), a[7, , drop = FALSE], tolerance = 1e-6)
    sized <- x$split(c(1, 4, 2))
    expect_equal(as_array(sized[[2]]), a[2:5, ], tolerance = 1e-6)
    expect_equal(as_array(torch_split(x, c(3, 1), dim = 2)[[2]]), a[, 4, drop = FALSE], tolerance = 1e-6)
  }
  # More chunks than elements gives fewer pieces, as torch's chunk does.
  expect_length(torch_chunk(f64(1:2), 5), 2)
  m <- random_array(3, 5)
  expect_equal(as_array(torch_chunk(f64_t(m), 2, 1)[[2]]), m[3, , drop = FALSE])
  expect_equal(as_array(torch_split(torch_tensor(1:5), 3)[[2]]), 4:5)
  empty <- torch_zeros(0, 3)
  expect_equal(lapply(torch_chunk(empty, 3), dim), rep(list(c(0L, 3L)), 3))
  expect_equal(lapply(torch_split(empty, 2), dim), list(c(0L, 3L)))
  x <- f64(m)
  expect_true(shares_memory(x, torch_chunk(x, 2)[[1]]))
})

test_that("torch_split and torch_chunk pass gradients to their pieces", {
  x <- torch_randn(5, 3, dtype = torch_float64(), requires_grad = TRUE)
  pieces <- torch_split(x, c(2, 3))
  (pieces[[1]]$sum() + 3 * pieces[[2]]$sum())$backward()
  expect_equal(as_array(x$grad), matrix(rep(c(1, 1, 3, 3, 3), 3), 5, 3))
})

test_that("torch_chunk and torch_split refuse bad sizes", {
  x <- torch_randn(4, 3)
  expect_error(torch_chunk(x, 0), class = "value_error", regexp = "torch_chunk: chunks must be at least 1, got 0")
  expect_error(torch_split(x, c(1, 2)), class = "value_error", regexp = "adds up to 3, but dim 1 has size 4")
  expect_error(torch_split(x, -1), class = "value_error", regexp = "torch_split: split_size must be")
  expect_error(torch_split(x, 0), class = "value_error", regexp = "split_size 0 can only split an empty dim")
  expect_error(torch_split(x, 2, dim = 3), class = "rcuda_index_error", regexp = "torch_split: dim: Dimension out of range (expected to be in range of [-2, 2], but got 3)", fixed = TRUE)
})

test_that("torch_movedim, torch_moveaxis, swapaxes and swapdims permute as views", {
  for (make in list(f64, f32)) {
    a <- random_array(2, 3, 4)
    x <- make(a)
    # out dim j holds input dim perm[j]: out = aperm(a, perm).
    expect_equal(as_array(torch_movedim(x, 1, 3)), aperm(a, c(2, 3, 1)), tolerance = 1e-6)
    expect_equal(as_array(torch_movedim(x, 3, 1)), aperm(a, c(3, 1, 2)), tolerance = 1e-6)
    expect_equal(as_array(torch_movedim(x, c(1, 2), c(3, 1))), aperm(a, c(2, 3, 1)), tolerance = 1e-6)
    expect_equal(as_array(x$movedim(-1, 2)), aperm(a, c(1, 3, 2)), tolerance = 1e-6)
    expect_equal(as_array(torch_moveaxis(x, c(1, 3), c(2, 1))), aperm(a, c(3, 1, 2)), tolerance = 1e-6)
    expect_equal(as_array(x$moveaxis(2, -1)), aperm(a, c(1, 3, 2)), tolerance = 1e-6)
    expect_equal(as_array(torch_swapaxes(x, 1, 3)), aperm(a, c(3, 2, 1)), tolerance = 1e-6)
    expect_equal(as_array(x$swapaxes(2, 3)), aperm(a, c(1, 3, 2)), tolerance = 1e-6)
    expect_equal(as_array(torch_swapdims(x, -1, 1)), aperm(a, c(3, 2, 1)), tolerance = 1e-6)
    expect_equal(as_array(x$swapdims(1, 2)), aperm(a, c(2, 1, 3)), tolerance = 1e-6)
  }
  m <- random_array(3, 5)
  expect_equal(as_array(torch_movedim(f64_t(m), 1, 2)), t(m))
  expect_equal(dim(torch_movedim(torch_zeros(0, 2, 3), 1, 3)), c(2L, 3L, 0L))
  x <- f64(random_array(2, 3, 4))
  expect_true(shares_memory(x, torch_movedim(x, 1, 3)))
  expect_true(shares_memory(x, x$swapaxes(1, 2)))
  expect_error(torch_movedim(x, c(1, 2), 3), class = "value_error", regexp = "as many dims, got 2 and 1")
  expect_error(torch_movedim(x, c(1, 1), c(2, 3)), class = "value_error", regexp = "source names dim 1 twice")
  expect_error(torch_swapaxes(x, 1, 4), class = "rcuda_index_error", regexp = "torch_swapaxes: axis1: Dimension out of range (expected to be in range of [-3, 3], but got 4)", fixed = TRUE)
})

test_that("torch_atleast_1d, 2d and 3d add leading or trailing dims", {
  s <- torch_scalar_tensor(2.5)
  v <- rnorm(4)
  m <- random_array(2, 3)
  expect_equal(dim(torch_atleast_1d(s)), 1L)
  expect_equal(dim(torch_atleast_2d(s)), c(1L, 1L))
  expect_equal(dim(torch_atleast_3d(s)), c(1L, 1L, 1L))
  expect_equal(as_array(torch_atleast_2d(f64(v))), matrix(v, 1))
  expect_equal(as_array(torch_atleast_3d(f64(v))), array(v, c(1, 4, 1)))
  expect_equal(as_array(torch_atleast_3d(f64(m))), array(m, c(2, 3, 1)))
  expect_equal(as_array(torch_atleast_1d(f64_t(m))), m)
  many <- torch_atleast_2d(list(s, f64(v), f64(m)))
  expect_equal(lapply(many, dim), list(c(1L, 1L), c(1L, 4L), c(2L, 3L)))
  expect_equal(dim(torch_atleast_3d(torch_zeros(0))), c(1L, 0L, 1L))
})

test_that("hstack, vstack, dstack and column_stack join like cbind and rbind", {
  a <- random_array(3, 2)
  b <- random_array(3, 4)
  u <- rnorm(3)
  w <- rnorm(3)
  for (make in list(f64, f32)) {
    expect_equal(as_array(torch_hstack(list(make(a), make(b)))), cbind(a, b), tolerance = 1e-6)
    expect_equal(as_array(torch_hstack(list(make(u), make(w)))), c(u, w), tolerance = 1e-6)
    expect_equal(as_array(torch_vstack(list(make(t(a)), make(t(b))))), rbind(t(a), t(b)), tolerance = 1e-6)
    expect_equal(as_array(torch_vstack(list(make(u), make(w)))), rbind(u, w, deparse.level = 0), tolerance = 1e-6)
    expect_equal(as_array(torch_column_stack(list(make(u), make(b), make(w)))), cbind(u, b, w, deparse.level = 0),
                 tolerance = 1e-6)
  }
  c2 <- random_array(3, 4)
  expect_equal(as_array(torch_dstack(list(f64(b), f64(c2)))), array(c(b, c2), c(3, 4, 2)))
  expect_equal(as_array(torch_dstack(list(f64(u), f64(w)))), array(c(u, w), c(1, 3, 2)))
  expect_equal(as_array(torch_hstack(list(f64_t(a), f64(b)))), cbind(a, b))
  # Integer tensors stay integer; mixed dtypes promote as cat does.
  ints <- torch_vstack(list(torch_tensor(1:3), torch_tensor(4:6)))
  expect_equal(ints$dtype, torch_long())
  expect_equal(as_array(ints), rbind(1:3, 4:6))
  expect_equal(torch_hstack(list(f32(u), f64(w)))$dtype, torch_float64())
  expect_equal(dim(torch_vstack(list(torch_zeros(0, 3), torch_ones(2, 3)))), c(2L, 3L))
  expect_error(torch_hstack(list()), class = "value_error", regexp = "torch_hstack: tensors must be a non-empty list")
})

test_that("torch_meshgrid follows ij and xy indexing", {
  x <- rnorm(3)
  y <- rnorm(4)
  z <- rnorm(2)
  for (make in list(f64, f32)) {
    ij <- torch_meshgrid(list(make(x), make(y)), indexing = "ij")
    expect_equal(as_array(ij[[1]]), matrix(x, 3, 4), tolerance = 1e-6)
    expect_equal(as_array(ij[[2]]), matrix(y, 3, 4, byrow = TRUE), tolerance = 1e-6)
    xy <- torch_meshgrid(list(make(x), make(y)), indexing = "xy")
    expect_equal(as_array(xy[[1]]), matrix(x, 4, 3, byrow = TRUE), tolerance = 1e-6)
    expect_equal(as_array(xy[[2]]), matrix(y, 4, 3), tolerance = 1e-6)
  }
  three <- torch_meshgrid(list(f64(x), f64(y), f64(z)), indexing = "xy")
  ref <- array(0, c(4, 3, 2))
  for (i in 1:4) for (j in 1:3) for (k in 1:2) ref[i, j, k] <- z[k]
  expect_equal(as_array(three[[3]]), ref)
  expect_equal(as_array(torch_meshgrid(list(f64(x), f64(y)))[[1]]), matrix(x, 3, 4))
  expect_equal(lapply(torch_meshgrid(list(torch_zeros(0), f64(y)), indexing = "ij"), dim), list(c(0L, 4L), c(0L, 4L)))
  expect_error(torch_meshgrid(list(f64(x)), indexing = "yx"), class = "value_error", regexp = "indexing must be \"ij\" or \"xy\"")
  expect_error(torch_meshgrid(list(torch_zeros(2, 2)), indexing = "ij"), class = "value_error",
               regexp = "tensors\\[\\[1\\]\\] is 2-d")
})

test_that("torch_broadcast_shapes and torch_broadcast_tensors align on the right", {
  expect_equal(torch_broadcast_shapes(c(2, 1), c(3, 1, 4)), c(3L, 2L, 4L))
  expect_equal(torch_broadcast_shapes(c(5, 1), 1, integer(0)), c(5L, 1L))
  expect_equal(torch_broadcast_shapes(c(0, 1), c(1, 3)), c(0L, 3L))
  expect_error(torch_broadcast_shapes(c(2, 3), c(2, 2)), class = "value_error", regexp = "dim 2 .* is 3 in one and 2")
  a <- random_array(3, 1)
  b <- rnorm(4)
  out <- torch_broadcast_tensors(list(f64(a), f32(b)))
  expect_equal(as_array(out[[1]]), matrix(a, 3, 4))
  expect_equal(as_array(out[[2]]), matrix(b, 3, 4, byrow = TRUE), tolerance = 1e-6)
  expect_equal(out[[2]]$dtype, torch_float32())
  x <- torch_randn(3, 1, dtype = torch_float64(), requires_grad = TRUE)
  torch_broadcast_tensors(list(x, torch_zeros(3, 5)))[[1]]$sum()$backward()
  expect_equal(as_array(x$grad), matrix(5, 3, 1))
})

test_that("torch_cartesian_prod lists every combination, the last input fastest", {
  a <- rnorm(3)
  b <- rnorm(2)
  grid <- expand.grid(second = b, first = a)
  expect_equal(as_array(torch_cartesian_prod(list(f64(a), f64(b)))), unname(as.matrix(grid[, 2:1])))
  expect_equal(as_array(torch_cartesian_prod(list(torch_tensor(1:2), torch_tensor(3:4), torch_tensor(5L)))),
               rbind(c(1, 3, 5), c(1, 4, 5), c(2, 3, 5), c(2, 4, 5)))
  expect_equal(as_array(torch_cartesian_prod(list(f64(a)))), a)
  expect_error(torch_cartesian_prod(list(torch_zeros(2, 2))), class = "value_error", regexp = "must be 1-d")
})

test_that("torch_ravel and torch_unflatten flatten and split dims in row-major order", {
  a <- random_array(2, 3, 4)
  row_major <- as.vector(aperm(a, 3:1))
  for (make in list(f64, f32)) {
    expect_equal(as_array(torch_ravel(make(a))), row_major, tolerance = 1e-6)
    expect_equal(as_array(make(a)$ravel()), row_major, tolerance = 1e-6)
  }
  m <- random_array(3, 5)
  expect_equal(as_array(f64_t(m)$ravel()), as.vector(t(m)))
  b <- random_array(2, 12)
  out <- as_array(torch_unflatten(f64(b), 2, c(3, -1)))
  ref <- array(0, c(2, 3, 4))
  for (i in 1:2) for (j in 1:3) for (k in 1:4) ref[i, j, k] <- b[i, (j - 1) * 4 + k]
  expect_equal(out, ref)
  expect_equal(as_array(f64(b)$unflatten(-1, c(12, 1))), array(b, c(2, 12, 1)))
  # A non-contiguous input still unflattens to a view.
  base <- f64(random_array(6, 2))
  view <- base$t()$unflatten(2, c(2, 3))
  expect_equal(dim(view), c(2L, 2L, 3L))
  expect_true(shares_memory(base, view))
  expect_equal(dim(torch_unflatten(torch_zeros(2, 0), 2, c(0, 5))), c(2L, 0L, 5L))
  expect_error(torch_unflatten(f64(b), 2, c(5, -1)), class = "value_error", regexp = "do not multiply to the size of dim 2 \\(12\\)")
  expect_error(torch_unflatten(f64(b), 2, c(-1, -1)), class = "value_error", regexp = "at most one -1")
})

test_that("torch_diagonal takes the offset diagonal of two dims as the last dim", {
  diag_ref <- function(m, offset) {
    out <- c()
    for (i in seq_len(nrow(m))) for (j in seq_len(ncol(m))) if (j - i == offset) out <- c(out, m[i, j])
    if (is.null(out)) numeric(0) else out
  }
  m <- random_array(4, 6)
  for (make in list(f64, f32)) {
    for (k in c(-5, -2, 0, 1, 5, 6)) {
      expect_equal(as_array(torch_diagonal(make(m), offset = k)), diag_ref(m, k), tolerance = 1e-6)
    }
  }
  expect_equal(as_array(f64_t(m)$diagonal(offset = -1)), diag_ref(m, -1))
  expect_equal(as_array(torch_diagonal(f64(m), dim1 = 2, dim2 = 1, offset = 1)), diag_ref(t(m), 1))
  a <- random_array(3, 2, 4)
  out <- as_array(torch_diagonal(f64(a), dim1 = 1, dim2 = 3, offset = 1))
  expect_equal(dim(out), c(2L, 3L))
  for (b in 1:2) expect_equal(out[b, ], diag_ref(a[, b, ], 1))
  ints <- torch_tensor(matrix(1:6, 2))
  expect_equal(as_array(ints$diagonal()), c(1L, 4L))
  expect_equal(dim(torch_diagonal(torch_zeros(0, 3))), 0L)
  x <- torch_randn(3, 4, dtype = torch_float64(), requires_grad = TRUE)
  torch_diagonal(x, offset = 1)$sum()$backward()
  expect_equal(as_array(x$grad), 1 * (col(matrix(0, 3, 4)) - row(matrix(0, 3, 4)) == 1))
  expect_error(torch_diagonal(f64(m), dim1 = 2, dim2 = -1), class = "value_error", regexp = "dim1 and dim2 must be different")
  expect_error(torch_diagonal(f64(m), "rows"), class = "value_error", regexp = "outdim \\(a named dim\\) is not supported")
  expect_error(torch_diagonal(f64(m), offset = 0.5), class = "value_error", regexp = "offset must be a whole number")
})

test_that("torch_trace sums the main diagonal", {
  m <- random_array(4, 3)
  expect_equal(as.numeric(as_array(torch_trace(f64(m)))), sum(diag(m)))
  # float32: its entries round by 6e-8 each, and the sum may cancel (an absolute bound)
  expect_lt(abs(as.numeric(as_array(f32(m)$trace())) - sum(diag(m))), 1e-6 * sum(abs(diag(m))))
  expect_equal(as.numeric(as_array(f64_t(m)$trace())), sum(diag(m)))
  expect_equal(as_array(torch_trace(torch_tensor(matrix(1:9, 3)))), 15)
  expect_equal(as.numeric(as_array(torch_trace(torch_zeros(0, 2)))), 0)
  x <- torch_randn(3, 3, dtype = torch_float64(), requires_grad = TRUE)
  torch_trace(x)$backward()
  expect_equal(as_array(x$grad), diag(3))
  expect_error(torch_trace(f64(rnorm(3))), class = "value_error", regexp = "torch_trace: self must be a matrix \\(2-d\\), got a 1-d")
})

test_that("torch_diag_embed puts the last dim on a diagonal of new planes", {
  embed_ref <- function(v, offset) {
    m <- matrix(0, length(v) + abs(offset), length(v) + abs(offset))
    for (k in seq_along(v)) m[k - min(offset, 0), k + max(offset, 0)] <- v[k]
    m
  }
  v <- rnorm(3)
  for (make in list(f64, f32)) {
    for (k in c(-2, 0, 1)) expect_equal(as_array(torch_diag_embed(make(v), offset = k)), embed_ref(v, k), tolerance = 1e-6)
  }
  b <- random_array(2, 3)
  out <- as_array(f64(b)$diag_embed(offset = 1))
  expect_equal(dim(out), c(2L, 4L, 4L))
  for (i in 1:2) expect_equal(out[i, , ], embed_ref(b[i, ], 1))
  # The planes go to dim1 and dim2; the batch dim fills the place left.
  moved <- as_array(torch_diag_embed(f64(b), dim1 = 1, dim2 = 3))
  expect_equal(dim(moved), c(3L, 2L, 3L))
  for (i in 1:2) expect_equal(moved[, i, ], embed_ref(b[i, ], 0))
  swapped <- as_array(torch_diag_embed(f64(b), offset = 1, dim1 = -1, dim2 = -2))
  for (i in 1:2) expect_equal(swapped[i, , ], t(embed_ref(b[i, ], 1)))
  from_view <- as_array(torch_diag_embed(f64_t(b)))
  for (i in 1:2) expect_equal(from_view[i, , ], diag(b[i, ]))
  special <- as_array(torch_diag_embed(f64(c(Inf, NaN))))
  expect_equal(special[1, 2], 0)
  expect_true(is.nan(special[2, 2]))
  expect_equal(as_array(torch_diag_embed(torch_tensor(1:2))), diag(1:2))
  expect_equal(dim(torch_diag_embed(torch_zeros(2, 0))), c(2L, 0L, 0L))
  x <- torch_randn(2, 3, dtype = torch_float64(), requires_grad = TRUE)
  (torch_diag_embed(x, offset = -1) * 2)$sum()$backward()
  expect_equal(as_array(x$grad), matrix(2, 2, 3))
  expect_error(torch_diag_embed(torch_scalar_tensor(1)), class = "value_error", regexp = "at least 1 dim")
  expect_error(torch_diag_embed(f64(v), dim1 = 1, dim2 = -2), class = "value_error", regexp = "must be different dims")
})

test_that("torch_kron is the Kronecker product", {
  a <- random_array(2, 3)
  b <- random_array(4, 2)
  for (make in list(f64, f32)) {
    expect_equal(as_array(torch_kron(make(a), make(b))), kronecker(a, b), tolerance = 1e-6)
  }
  expect_equal(as_array(f64_t(a)$kron(f64(b))), kronecker(a, b))
  v <- rnorm(3)
  # Fewer dims count as leading 1s: a vector is one row.
  expect_equal(as_array(torch_kron(f64(v), f64(b))), kronecker(matrix(v, 1), b))
  a3 <- random_array(2, 2, 2)
  b3 <- random_array(1, 3, 2)
  ref <- array(0, c(2, 6, 4))
  for (i in 1:2) for (j in 1:2) for (k in 1:2) for (p in 1:3) for (q in 1:2) {
    ref[i, (j - 1) * 3 + p, (k - 1) * 2 + q] <- a3[i, j, k] * b3[1, p, q]
  }
  expect_equal(as_array(torch_kron(f64(a3), f64(b3))), ref)
  ints <- torch_kron(torch_tensor(matrix(1:4, 2)), torch_tensor(matrix(c(1L, 0L, 0L, 1L), 2)))
  expect_equal(ints$dtype, torch_long())
  expect_equal(as_array(ints), kronecker(matrix(1:4, 2), diag(2)))
  expect_equal(dim(torch_kron(torch_zeros(0, 2), f64(b))), c(0L, 4L))
  x <- torch_randn(2, 3, dtype = torch_float64(), requires_grad = TRUE)
  torch_kron(x, f64(b))$sum()$backward()
  expect_equal(as_array(x$grad), matrix(sum(b), 2, 3))
})

test_that("torch_rot90 rotates counterclockwise from the first dim towards the second", {
  m <- random_array(3, 4)
  rot1 <- function(m) t(m)[ncol(m):1, , drop = FALSE]
  for (make in list(f64, f32)) {
    x <- make(m)
    expect_equal(as_array(torch_rot90(x)), rot1(m), tolerance = 1e-6)
    expect_equal(as_array(torch_rot90(x, 2)), rot1(rot1(m)), tolerance = 1e-6)
    expect_equal(as_array(x$rot90(3)), rot1(rot1(rot1(m))), tolerance = 1e-6)
    expect_equal(as_array(torch_rot90(x, -1)), rot1(rot1(rot1(m))), tolerance = 1e-6)
    expect_equal(as_array(torch_rot90(x, 4)), m, tolerance = 1e-6)
    expect_equal(as_array(torch_rot90(x, 1, c(2, 1))), rot1(rot1(rot1(m))), tolerance = 1e-6)
  }
  expect_equal(as_array(f64_t(m)$rot90()), rot1(m))
  a <- random_array(2, 3, 4)
  out <- as_array(torch_rot90(f64(a), 1, c(1, 3)))
  for (j in 1:3) expect_equal(out[, j, ], rot1(a[, j, ]))
  expect_equal(dim(torch_rot90(torch_zeros(0, 3))), c(3L, 0L))
  expect_error(torch_rot90(f64(m), 1, c(1, 2, 3)), class = "value_error", regexp = "dims must name 2 dims")
  expect_error(torch_rot90(f64(m), 1, c(1, 1)), class = "value_error", regexp = "names dim 1 twice")
  expect_error(torch_rot90(f64(rnorm(3))), class = "value_error", regexp = "at least 2 dims")
})

test_that("torch_fliplr and torch_flipud reverse columns and rows", {
  a <- random_array(3, 4, 2)
  for (make in list(f64, f32)) {
    expect_equal(as_array(torch_fliplr(make(a))), a[, 4:1, ], tolerance = 1e-6)
    expect_equal(as_array(make(a)$flipud()), a[3:1, , ], tolerance = 1e-6)
  }
  m <- random_array(3, 5)
  expect_equal(as_array(f64_t(m)$fliplr()), m[, 5:1])
  expect_equal(as_array(torch_flipud(torch_tensor(1:4))), 4:1)
  expect_equal(dim(torch_fliplr(torch_zeros(2, 0))), c(2L, 0L))
  expect_error(torch_fliplr(f64(rnorm(3))), class = "value_error", regexp = "torch_fliplr: self must have at least 2 dims")
  expect_error(torch_flipud(torch_scalar_tensor(1)), class = "value_error", regexp = "torch_flipud: self must have at least 1 dim")
})

test_that("torch_block_diag places blocks along the diagonal", {
  a <- random_array(2, 3)
  b <- rnorm(2)
  c1 <- 4.5
  ref <- matrix(0, 4, 6)
  ref[1:2, 1:3] <- a
  ref[3, 4:5] <- b
  ref[4, 6] <- c1
  for (make in list(f64, f32)) {
    out <- torch_block_diag(list(make(a), make(b), make(c1)$reshape(integer(0))))
    expect_equal(as_array(out), ref, tolerance = 1e-6)
  }
  expect_equal(as_array(torch_block_diag(list(f64_t(a), f64(b)))), ref[1:3, 1:5])
  mixed <- torch_block_diag(list(torch_tensor(matrix(1:4, 2)), f32(b)))
  expect_equal(mixed$dtype, torch_float32())
  ints <- torch_block_diag(list(torch_tensor(matrix(1:4, 2)), torch_tensor(5L)))
  expect_equal(ints$dtype, torch_long())
  expect_equal(as_array(ints), rbind(c(1, 3, 0), c(2, 4, 0), c(0, 0, 5)))
  expect_equal(dim(torch_block_diag(list(torch_zeros(0, 2), f64(a)))), c(2L, 5L))
  x <- torch_randn(2, 2, dtype = torch_float64(), requires_grad = TRUE)
  (torch_block_diag(list(x, f64(a))) * 3)$sum()$backward()
  expect_equal(as_array(x$grad), matrix(3, 2, 2))
  expect_error(torch_block_diag(list(torch_zeros(2, 2, 2))), class = "value_error", regexp = "tensors\\[\\[1\\]\\] is 3-d")
})

test_that("torch_tril_indices and torch_triu_indices give 1-based row-major positions", {
  ref <- function(row, col, offset, lower) {
    out <- matrix(0L, 2, 0)
    for (i in seq_len(row)) for (j in seq_len(col)) {
      if ((lower && j - i <= offset) || (!lower && j - i >= offset)) out <- cbind(out, c(i, j))
    }
    out
  }
  for (shape in list(c(4, 4), c(3, 5), c(5, 2))) {
    for (offset in c(-2, 0, 1)) {
      expect_equal(as_array(torch_tril_indices(shape[1], shape[2], offset)), ref(shape[1], shape[2], offset, TRUE))
      expect_equal(as_array(torch_triu_indices(shape[1], shape[2], offset)), ref(shape[1], shape[2], offset, FALSE))
    }
  }
  expect_equal(torch_triu_indices(3, 3)$dtype, torch_long())
  expect_equal(torch_tril_indices(3, 3, dtype = torch_int32())$dtype, torch_int32())
  expect_equal(dim(torch_tril_indices(0, 3)), c(2L, 0L))
  expect_equal(dim(torch_triu_indices(2, 2, 5)), c(2L, 0L))
  # The indices pick out the triangle that torch_tril keeps.
  m <- random_array(4, 5)
  idx <- as_array(torch_tril_indices(4, 5, 1))
  expect_equal(sort(m[cbind(idx[1, ], idx[2, ])]), sort(m[col(m) - row(m) <= 1]))
  expect_error(torch_tril_indices(-1, 3), class = "value_error", regexp = "row and col must be >= 0")
  expect_error(torch_triu_indices(3, 3, 0.5), class = "value_error", regexp = "offset must be a whole number")
})

test_that("torch_take_along_dim gathers along a dim, broadcasting the others", {
  a <- random_array(3, 4)
  idx <- matrix(sample.int(4, 6, replace = TRUE), 3, 2)
  ref <- matrix(0, 3, 2)
  for (i in 1:3) for (j in 1:2) ref[i, j] <- a[i, idx[i, j]]
  for (make in list(f64, f32)) {
    expect_equal(as_array(torch_take_along_dim(make(a), torch_tensor(idx), dim = 2)), ref, tolerance = 1e-6)
    expect_equal(as_array(make(a)$take_along_dim(torch_tensor(idx), -1)), ref, tolerance = 1e-6)
  }
  expect_equal(as_array(torch_take_along_dim(f64_t(a), torch_tensor(idx), 2)), ref)
  # Without dim: positions in the row-major flattening.
  flat_idx <- sample.int(12, 5, replace = TRUE)
  expect_equal(as_array(torch_take_along_dim(f64(a), torch_tensor(flat_idx))), as.vector(t(a))[flat_idx])
  # self [1, 4] broadcasts against indices [3, 2] in dim 1.
  row1 <- a[1, , drop = FALSE]
  bref <- matrix(0, 3, 2)
  for (i in 1:3) for (j in 1:2) bref[i, j] <- row1[1, idx[i, j]]
  expect_equal(as_array(torch_take_along_dim(f64(row1), torch_tensor(idx), 2)), bref)
  # indices [2, 1] broadcast against self [3, 4] in dim 2.
  col_idx <- matrix(sample.int(3, 2), 2, 1)
  out <- as_array(torch_take_along_dim(f64(a), torch_tensor(col_idx), 1))
  expect_equal(dim(out), c(2L, 4L))
  for (k in 1:2) expect_equal(out[k, ], a[col_idx[k, 1], ])
  ints <- torch_take_along_dim(torch_tensor(matrix(1:6, 2)), torch_tensor(matrix(c(3L, 1L), 2, 1)), 2)
  expect_equal(as_array(ints), matrix(c(5L, 2L), 2, 1))
  expect_equal(dim(torch_take_along_dim(f64(a), torch_zeros(3, 0, dtype = torch_long()), 2)), c(3L, 0L))
  x <- torch_randn(3, 4, dtype = torch_float64(), requires_grad = TRUE)
  torch_take_along_dim(x, torch_tensor(idx), 2)$sum()$backward()
  counts <- matrix(0, 3, 4)
  for (i in 1:3) for (j in 1:2) counts[i, idx[i, j]] <- counts[i, idx[i, j]] + 1
  expect_equal(as_array(x$grad), counts)
  expect_error(torch_take_along_dim(f64(a), f64(idx), 2), class = "value_error", regexp = "indices must be an integer tensor, got float64")
  expect_error(torch_take_along_dim(f64(a), torch_tensor(1:2), 1), class = "value_error", regexp = "as many dims, got 2 and 1")
  expect_error(torch_take_along_dim(f64(a), torch_tensor(matrix(1L, 2, 2)), 2), class = "value_error", regexp = "cannot be broadcast")
})

test_that("$narrow_copy copies a narrowed slice", {
  a <- random_array(4, 5)
  for (make in list(f64, f32)) {
    expect_equal(as_array(make(a)$narrow_copy(2, 2, 3)), a[, 2:4], tolerance = 1e-6)
  }
  expect_equal(as_array(f64_t(a)$narrow_copy(1, 3, 2)), a[3:4, ])
  x <- f64(a)
  piece <- x$narrow_copy(1, 1, 2)
  expect_false(shares_memory(x, piece))
  expect_equal(as_array(piece), a[1:2, ])
  expect_equal(dim(x$narrow_copy(1, 5, 0)), c(0L, 5L))
  expect_error(x$narrow_copy(1, 0, 2), class = "value_error", regexp = "narrow_copy: start indexing starts at 1")
})
