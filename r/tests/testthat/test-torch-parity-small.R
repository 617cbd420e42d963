# Small features that torch for R's own tests use: $storage()/$data_ptr(), tensors over R
# buffers, `__and__`/`__or__`/`__xor__`, the mps and meta device objects, and the behaviours and
# messages of test-indexing.R, test-with-indices.R, test-tensor.R and test-generator.R.

# ---- $storage() and $data_ptr() ----------------------------------------------------------------

test_that("tensors that share memory share their storage's address, and a clone does not", {
  x <- torch_tensor(1)
  y <- x
  expect_identical(x$storage()$data_ptr(), y$storage()$data_ptr())
  k <- x$add_(1)
  expect_identical(x$storage()$data_ptr(), k$storage()$data_ptr())

  for (device in test_devices()) {
    m <- torch_randn(10, 10, device = device)
    expect_match(m$storage()$data_ptr(), "^(0x)?[0-9a-f]+$")
    expect_false(m$storage()$data_ptr() == m$clone()$storage()$data_ptr())
    # A view starts elsewhere in the same storage: its first element moves, its storage does not.
    row <- m[3, ]
    expect_identical(row$storage()$data_ptr(), m$storage()$data_ptr())
    expect_identical(m$t()$storage()$data_ptr(), m$storage()$data_ptr())
    expect_identical(m$data_ptr(), m$storage()$data_ptr())
    offset <- as.numeric(paste0("0x", sub("^0x", "", row$data_ptr()))) -
      as.numeric(paste0("0x", sub("^0x", "", m$data_ptr())))
    expect_equal(offset, 2 * 10 * 4)  # two rows of ten float32 values
  }
  expect_output(print(x$storage()), "torch_storage at")
})

# ---- torch_tensor_from_buffer() and buffer_from_torch_tensor() ---------------------------------

test_that("a tensor from a buffer shares the R vector's memory", {
  x <- runif(10)
  before <- x + 0  # a copy, the reference
  y <- torch_tensor_from_buffer(x, shape = 10, dtype = "float64")
  expect_equal(as.numeric(y), before)
  y$add_(1)
  expect_equal(x, before + 1)  # the write went to x's memory
  expect_equal(as.numeric(y), x)
  # torch's test, as written there.
  expect_equal(as.numeric(y), x)
})

test_that("buffers are read row-major, in the dtype given, and kept alive by the tensor", {
  # Row-major: the first row is the buffer's first three values.
  y <- torch_tensor_from_buffer(as.integer(1:6), shape = c(2, 3), dtype = torch_int32())
  expect_identical(as_array(y), matrix(1:6, 2, byrow = TRUE))
  # Bytes read as float32 (the default dtype is "float"), against R's own encoding.
  values <- c(1.5, -2, 1024.25)
  y <- torch_tensor_from_buffer(writeBin(values, raw(), size = 4), shape = 3)
  expect_true(y$dtype == torch_float32())
  expect_equal(as.numeric(y), values)
  # A shape smaller than the buffer takes its first bytes.
  expect_equal(as.numeric(torch_tensor_from_buffer(c(4, 5, 6), shape = 2, dtype = "double")), c(4, 5))
  # The tensor keeps the vector when nothing else does.
  make <- function() torch_tensor_from_buffer(seq(0.5, 500, by = 0.5), shape = c(10, 100), dtype = "float64")
  z <- make()
  gc()
  garbage <- lapply(1:200, function(i) runif(1000))
  rm(garbage)
  gc()
  expect_equal(as_array(z), matrix(seq(0.5, 500, by = 0.5), 10, byrow = TRUE))
  z2 <- z[2:3, ]  # a view holds the memory too
  rm(z)
  gc()
  expect_equal(as_array(z2), matrix(seq(0.5, 500, by = 0.5), 10, byrow = TRUE)[2:3, ])
})

test_that("a buffer from a tensor holds its bytes, row-major and on the CPU", {
  x <- torch_randn(10, 10)
  y <- buffer_from_torch_tensor(x)
  expect_type(y, "raw")
  z <- torch_tensor_from_buffer(y, shape = c(10, 10), dtype = "float")
  expect_true(torch_allclose(x, z))

  m <- matrix(rnorm(6), 2)
  x <- torch_tensor(m, dtype = torch_float64())
  expect_identical(buffer_from_torch_tensor(x), writeBin(as.vector(t(m)), raw(), size = 8))
  # A transposed view gives the bytes of the transpose, in its own row-major order.
  expect_identical(buffer_from_torch_tensor(x$t()), writeBin(as.vector(m), raw(), size = 8))
  expect_identical(buffer_from_torch_tensor(torch_tensor(c(TRUE, FALSE, TRUE))), as.raw(c(1, 0, 1)))
  expect_identical(buffer_from_torch_tensor(torch_tensor(c(3L, -1L), dtype = torch_int32())),
                   writeBin(c(3L, -1L), raw(), size = 4))
  expect_identical(buffer_from_torch_tensor(torch_tensor(numeric(0))), raw(0))
  for (device in setdiff(test_devices(), "cpu")) {
    expect_identical(buffer_from_torch_tensor(x$to(device = device)), buffer_from_torch_tensor(x))
  }
})

test_that("bad buffers, shapes and dtypes are clear errors naming the function", {
  expect_error(torch_tensor_from_buffer(raw(3), shape = 1), class = "rcuda_value_error",
               "torch_tensor_from_buffer: buffer has 3 bytes and shape [1] of float32 needs 4", fixed = TRUE)
  expect_error(torch_tensor_from_buffer(runif(10), shape = c(10, 10), dtype = "float64"),
               "buffer has 80 bytes and shape [10, 10] of float64 needs 800", fixed = TRUE)
  expect_error(torch_tensor_from_buffer(runif(2), shape = 2, dtype = "floaty"),
               "torch_tensor_from_buffer: dtype must be", class = "rcuda_dtype_error")
  expect_error(torch_tensor_from_buffer(list(1, 2), shape = 2),
               "torch_tensor_from_buffer: buffer must be a raw, logical, integer, double or complex vector, got an R list")
  expect_error(torch_tensor_from_buffer(torch_ones(2), shape = 2), "got a tensor")
  expect_error(torch_tensor_from_buffer(runif(2), shape = -1), "torch_tensor_from_buffer: shape must be")
  sparse <- torch_sparse_coo_tensor(matrix(c(1, 1), 2), 1, size = c(2, 2))
  expect_error(buffer_from_torch_tensor(sparse), "buffer_from_torch_tensor: tensor is sparse")
  expect_error(buffer_from_torch_tensor(1:3), "buffer_from_torch_tensor: tensor must be a tensor")
})

# ---- `__and__`, `__or__`, `__xor__` --------------------------------------------------------------

test_that("`__and__`, `__or__` and `__xor__` are the logical ops of bool tensors", {
  a <- runif(20) > 0.5
  b <- runif(20) > 0.5
  for (device in test_devices()) {
    x <- torch_tensor(a, device = device)
    y <- torch_tensor(b, device = device)
    expect_identical(as_array(x$`__and__`(y)), a & b)
    expect_identical(as_array(x$`__or__`(y)), a | b)
    expect_identical(as_array(x$`__xor__`(y)), xor(a, b))
    expect_identical(as_array(x$`__and__`(TRUE)), a)
    expect_identical(as_array(x$`__or__`(FALSE)), a)
    expect_identical(as_array(x$`__xor__`(TRUE)), !a)
    expect_identical(as_array(x$`__and__`(b)), a & b)  # an R logical vector
    # Broadcasting, as the binary ops do.
    col <- torch_tensor(matrix(c(TRUE, FALSE), 2), device = device)
    expect_identical(as_array(col$`__and__`(x[1:3]$unsqueeze(1))), outer(c(TRUE, FALSE), a[1:3], `&`))
    expect_true(x$`__and__`(y)$dtype == torch_bool())
  }
  # torch's test.
  x <- torch_tensor(TRUE)
  expect_identical(as_array(x$`__and__`(x)), TRUE)
})

test_that("`__and__` and its kin refuse integer and floating tensors by name", {
  expect_error(torch_tensor(5L)$`__and__`(torch_tensor(3L)), class = "rcuda_dtype_error",
               "__and__: rcuda computes it for bool tensors and logical values only")
  expect_error(torch_tensor(TRUE)$`__or__`(1), "got self of dtype Bool and other an R numeric")
  expect_error(torch_tensor(1)$`__xor__`(TRUE), "got self of dtype Float")
})

# ---- devices rcuda places no engine tensors on --------------------------------------------------

test_that("mps and meta devices are objects that print and convert back to strings", {
  expect_equal(as.character(torch_device("cuda:0")), "cuda:0")
  expect_equal(as.character(torch_device("cpu")), "cpu")
  expect_equal(as.character(torch_device("mps")), "mps")
  expect_equal(torch_device("meta")$type, "meta")
  expect_output(print(torch_device("mps")), "torch_device(type='mps')", fixed = TRUE)
  expect_true(torch_device("mps") == "mps")
  expect_false(torch_device("mps") == torch_device("cpu"))
  expect_true(is_meta_device(torch_device("meta")))
  expect_false(is_meta_device(torch_device("cpu")))
  expect_false(is_meta_device(torch_ones(1)$device))
  expect_error(is_meta_device("meta"), "is_meta_device: x must be a torch_device()", fixed = TRUE)
  expect_error(torch_device("tpu"), "unknown device type \"tpu\"", class = "rcuda_device_error")
})

# (meta tensors, which the creators of test-meta-tensors.R make, hold no engine data.)
test_that("a tensor asked for on mps, or on meta by a creator of dense tensors, is an error naming the device", {
  expect_error(torch_randn(10, 10, device = "mps"), class = "rcuda_device_error",
               "rcuda cannot place tensors on device \"mps\"", fixed = TRUE)
  expect_error(torch_tensor(1, device = "meta"), class = "rcuda_device_error",
               "rcuda makes tensors on device \"meta\" only with torch_empty()", fixed = TRUE)
  expect_error(torch_tensor(1, device = torch_device("mps")),
               "rcuda cannot place tensors on device \"mps\"", fixed = TRUE)
  expect_error(torch_ones(2)$to(device = "mps:0"), "cannot place tensors on device \"mps:0\"", fixed = TRUE)
  expect_error(with_device(device = "meta", torch_arange(1, 3)), "makes tensors on device \"meta\" only with")
})

# ---- messages and behaviours of torch's tests ---------------------------------------------------

test_that("indexing an empty tensor says the index is out of bounds", {
  x <- torch_tensor(NULL)
  expect_true(x$dtype == torch_bool())
  expect_error(x[1], "index 1 is out of bounds for dimension 1 with size 0", class = "rcuda_index_error")
  expect_error(torch_tensor(as.integer(NULL))[1], "out of bounds")
  expect_error(torch_ones(2, 3)[1, 4], "index 4 is out of bounds for dimension 2 with size 3")
})

test_that("ignore_index is a 1-based class for nnf_cross_entropy, nnf_nll_loss and the module", {
  logits_r <- matrix(c(10, 0, 0, 0, 10, 0, 0, 0, 10), nrow = 3, byrow = TRUE)
  logits <- torch_tensor(logits_r)
  # The reference: mean over the rows whose target is not ignored of -log softmax at the target.
  reference <- function(target, ignore) {
    log_probs <- logits_r - log(rowSums(exp(logits_r)))
    keep <- target != ignore
    mean(-log_probs[cbind(seq_along(target), target)][keep])
  }
  loss_for <- function(cls, ...) {
    as.numeric(nnf_cross_entropy(logits, torch_tensor(rep(cls, 3L), dtype = torch_long()), ...))
  }
  for (cls in 1:3) {
    expect_true(is.nan(loss_for(cls, ignore_index = cls)))
    for (other in setdiff(1:3, cls)) {
      expect_equal(loss_for(cls, ignore_index = other), reference(rep(cls, 3), other), tolerance = 1e-6)
    }
  }
  target <- c(1L, 3L, 3L)
  expect_equal(as.numeric(nnf_cross_entropy(logits, torch_tensor(target), ignore_index = 3)),
               reference(target, 3), tolerance = 1e-6)
  expect_equal(loss_for(1, ignore_index = -100), reference(rep(1, 3), -100), tolerance = 1e-6)
  expect_error(loss_for(1, ignore_index = 0), "1 based class index", class = "rcuda_value_error")
  log_probs <- nnf_log_softmax(logits, dim = 2)
  nll_for <- function(cls, ...) {
    as.numeric(nnf_nll_loss(log_probs, torch_tensor(rep(cls, 3L), dtype = torch_long()), ...))
  }
  expect_true(is.nan(nll_for(3, ignore_index = 3)))
  expect_equal(nll_for(3, ignore_index = 1), reference(rep(3, 3), 1), tolerance = 1e-6)
  expect_error(nll_for(3, ignore_index = 0), "nnf_nll_loss: ignore_index must be a 1 based class index")
  loss <- nn_cross_entropy_loss(ignore_index = 2)(logits, torch_tensor(rep(2L, 3L), dtype = torch_long()))
  expect_true(is.nan(as.numeric(loss)))
})

test_that("head() and tail() of a sparse tensor are its first and last rows, sparse", {
  i <- torch_tensor(matrix(c(1, 2, 2, 3), nrow = 2), dtype = torch_int64())
  v <- torch_tensor(c(3, 4), dtype = torch_float32())
  x <- torch_sparse_coo_tensor(i, v, size = c(3, 3))
  dense <- as.matrix(x$to_dense())
  expect_true(head(x, 2)$is_sparse())
  expect_equal(as_array(head(x, 2)$to_dense()), head(dense, 2))
  expect_equal(as_array(tail(x, 2)$to_dense()), tail(dense, 2), ignore_attr = TRUE)
  # Random sparse matrices against base R's head() and tail() of the dense matrix.
  m <- matrix(0, 7, 4)
  m[sample(28, 9)] <- rnorm(9)
  s <- torch_tensor(m)$to_sparse()
  for (n in c(0, 1, 3, 7, 10, -2, -7)) {
    expect_equal(as_array(head(s, n)$to_dense()), head(m, n), tolerance = 1e-6, ignore_attr = TRUE)
    expect_equal(as_array(tail(s, n)$to_dense()), tail(m, n), tolerance = 1e-6, ignore_attr = TRUE)
  }
  expect_equal(head(s, 3)$shape, c(3, 4))
  expect_true(tail(s, 3)$is_coalesced())
  expect_error(head(s, 1.5), "head: n must be a whole number")
})

test_that("as_array of a sparse tensor is an error saying to call $to_dense()", {
  idx <- torch_tensor(matrix(c(1, 2, 2, 3), nrow = 2), dtype = torch_int64())
  sparse <- torch_sparse_coo_tensor(idx, torch_tensor(c(3, 4)), size = c(3, 3))
  expect_error(as_array(sparse), "Sparse tensors are not supported for as_array conversion.", fixed = TRUE)
  expect_error(as.matrix(sparse), "as.matrix: Sparse tensors are not supported", class = "rcuda_value_error")
  expect_error(as.array(sparse), "as.array(x$to_dense())", fixed = TRUE)
  expect_equal(as_array(sparse$to_dense()), rbind(c(0, 3, 0), c(0, 0, 4), c(0, 0, 0)))
})

test_that("detach() and clone() of a parameter keep the nn_parameter class", {
  x <- nn_parameter(torch_tensor(1)$requires_grad_(TRUE))
  expect_true(inherits(x, "nn_parameter"))
  expect_true(inherits(x$detach(), "nn_parameter"))
  expect_false(x$detach()$requires_grad)
  expect_true(inherits(x$clone(), "nn_parameter"))
  expect_true(inherits(nn_buffer(torch_ones(2)), "nn_buffer"))
  expect_false(inherits(torch_ones(1), "nn_parameter"))
  # Methods and operators are the tensor's.
  expect_true(is_torch_tensor(x))
  expect_true(is_nn_parameter(x$detach()))
  expect_equal(as.numeric(x * 3), 3)
  expect_equal(as.numeric(nn_linear(2, 1)$weight$detach()$shape), c(1, 2))
})

test_that("a generator's seed is a bit64 integer64, and set_current_seed takes one", {
  skip_if_not_installed("bit64")
  g <- torch_generator()
  g$set_current_seed(12345678L)
  expect_equal(g$current_seed(), bit64::as.integer64(12345678))
  g$set_current_seed(bit64::as.integer64(123456789101112))
  expect_equal(g$current_seed(), bit64::as.integer64(123456789101112))
  # The seed set as an integer64 draws what the same seed as a double draws.
  h <- torch_generator()
  h$set_current_seed(123456789101112)
  expect_identical(as_array(torch_randint(0, 1000, 5, generator = g)),
                   as_array(torch_randint(0, 1000, 5, generator = h)))
  expect_error(g$set_current_seed(bit64::as.integer64(-1)), "seed must be a whole number", class = "rcuda_value_error")
})
