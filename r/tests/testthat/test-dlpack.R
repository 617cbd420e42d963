# as_dlpack() and from_dlpack() (docs/dlpack.md) against NumPy and PyTorch through reticulate:
# shared memory (a write on one side is read on the other), dtypes, strides and offsets,
# lifetimes under both collectors, capsule rules, read-only memory, bad input, and on the GPU
# machine the same with CUDA tensors. helper-dlpack.R picks the Python and says why a test skips.

# Every dtype rcuda has, with values each holds exactly, and its names in NumPy and PyTorch
# (NA where the library has none).
dlpack_dtypes <- list(
  list(rcuda = "bool", numpy = "bool", torch = "bool", values = c(TRUE, FALSE, TRUE)),
  list(rcuda = "uint8", numpy = "uint8", torch = "uint8", values = c(0, 7, 255)),
  list(rcuda = "int8", numpy = "int8", torch = "int8", values = c(-128, 0, 127)),
  list(rcuda = "int16", numpy = "int16", torch = "int16", values = c(-300, 0, 32767)),
  list(rcuda = "int32", numpy = "int32", torch = "int32", values = c(-70000, 0, 2^31 - 1)),
  list(rcuda = "int64", numpy = "int64", torch = "int64", values = c(-2^40, 0, 2^40 + 1)),
  list(rcuda = "float16", numpy = "float16", torch = "float16", values = c(-1.5, 0, 3)),
  list(rcuda = "bfloat16", numpy = NA, torch = "bfloat16", values = c(-1.5, 0, 3)),
  list(rcuda = "float32", numpy = "float32", torch = "float32", values = c(-1.5, 0.1, 3)),
  list(rcuda = "float64", numpy = "float64", torch = "float64", values = c(-1.5, 0.1, 1e300)),
  list(rcuda = "float8_e4m3fn", numpy = NA, torch = "float8_e4m3fn", values = c(-1.5, 0, 3)),
  list(rcuda = "float8_e5m2", numpy = NA, torch = "float8_e5m2", values = c(-1.5, 0, 3)),
  list(rcuda = "complex64", numpy = "complex64", torch = "complex64", values = c(1 + 2i, -3i, 0.5)),
  list(rcuda = "complex128", numpy = "complex128", torch = "complex128",
       values = c(1 + 2i, -3i, 0.1))
)

dtype_of <- function(name) rcuda:::new_dtype(name)
# An rcuda tensor of the entry's dtype and values.
rcuda_values <- function(entry) torch_tensor(entry$values, dtype = dtype_of(entry$rcuda))
# A tensor's values as R numbers (float8 and the half types read through float64).
r_values <- function(x) {
  if (x$dtype == torch_bool()) return(as.logical(as.array(x)))
  if (x$dtype == torch_cfloat() || x$dtype == torch_cdouble()) return(as.complex(as.array(x)))
  as.numeric(as.array(x$to(dtype = torch_float64())))
}
# A NumPy array or PyTorch tensor's values as an R vector, read by the library itself (numbers
# through float64: reticulate reads Python integers as R's 32-bit ones).
py_values <- function(a) {
  kind <- py_r(a$dtype$kind)
  if (!kind %in% c("b", "c")) a <- a$astype("float64")
  unlist(py_r(a$tolist()))
}
# A 2-d NumPy array as an R matrix.
py_matrix <- function(a) do.call(rbind, lapply(py_r(a$tolist()), unlist))

# ---- without Python ----------------------------------------------------------------------------

test_that("as_dlpack and from_dlpack refuse what is not a tensor or a Python object", {
  expect_error(as_dlpack(1:3), "as_dlpack: x must be a tensor, got an R integer",
               class = "rcuda_value_error")
  expect_error(from_dlpack(matrix(1, 2, 2)),
               "from_dlpack: obj must be a Python object .*convert = FALSE",
               class = "rcuda_value_error")
  expect_error(from_dlpack(NULL, copy = NA), "from_dlpack: copy must be TRUE or FALSE, got NA",
               class = "rcuda_value_error")
})

test_that("rcuda loads and computes without Python, and as_dlpack says Python is missing", {
  skip_if_not_installed("reticulate")
  script <- tempfile(fileext = ".R")
  writeLines(c(
    "library(rcuda)",
    "cat(as.numeric(torch_ones(2)$sum()), '\\n')",
    "r <- tryCatch(as_dlpack(torch_ones(2)), error = function(e) conditionMessage(e))",
    "cat(r, '\\n')"
  ), script)
  out <- system2(file.path(R.home("bin"), "Rscript"), script, stdout = TRUE, stderr = TRUE,
                 env = c(paste0("R_LIBS=", paste(.libPaths(), collapse = ":")),
                         "RETICULATE_PYTHON=/nonexistent/python3"))
  expect_equal(out[1], "2 ")
  expect_match(paste(out[-1], collapse = " "), "as_dlpack: reticulate found no usable Python")
})

# ---- NumPy -------------------------------------------------------------------------------------

test_that("an rcuda tensor lent to NumPy is the same memory both ways", {
  skip_if_no_numpy()
  h <- pyhelp()
  x <- torch_tensor(matrix(c(1, 2, 3, 4, 5, 6), 2, 3))
  a <- np()$from_dlpack(as_dlpack(x))
  expect_equal(py_matrix(a), rbind(c(1, 3, 5), c(2, 4, 6)))
  h$setitem(a, py_tuple(0L, 1L), 100)  # NumPy writes, R reads
  expect_equal(as.array(x), matrix(c(1, 2, 100, 4, 5, 6), 2, 3))
  x[2, 3] <- -7  # R writes, NumPy reads
  expect_equal(py_matrix(a), rbind(c(1, 100, 5), c(2, 4, -7)))
})

test_that("a NumPy array taken by from_dlpack is the same memory both ways", {
  skip_if_no_numpy()
  h <- pyhelp()
  a <- np()$arange(6, dtype = "float64")$reshape(py_tuple(2L, 3L))
  x <- from_dlpack(a)
  expect_equal(x$dtype, torch_float64())
  expect_equal(as.array(x), matrix(c(0, 3, 1, 4, 2, 5), 2, 3))
  x[1, 2] <- 42  # R writes, NumPy reads
  expect_equal(py_matrix(a), rbind(c(0, 42, 2), c(3, 4, 5)))
  h$setitem(a, py_tuple(1L, 0L), -1)  # NumPy writes, R reads
  expect_equal(as.array(x), matrix(c(0, -1, 42, 4, 2, 5), 2, 3))
})

test_that("every dtype NumPy has crosses both ways with its values", {
  skip_if_no_numpy()
  for (entry in dlpack_dtypes) {
    if (is.na(entry$numpy)) next
    a <- np()$from_dlpack(as_dlpack(rcuda_values(entry)))
    expect_equal(py_r(a$dtype$name), entry$numpy, info = entry$rcuda)
    expect_equal(py_values(a), entry$values, info = entry$rcuda)
    b <- np()$array(reticulate::r_to_py(as.list(entry$values)), dtype = entry$numpy)
    x <- from_dlpack(b)
    expect_equal(x$dtype, dtype_of(entry$rcuda), info = entry$rcuda)
    expect_equal(r_values(x), entry$values, info = entry$rcuda)
  }
})

test_that("NumPy's refusal of bfloat16 keeps its own error, and the loan is ended", {
  skip_if_no_numpy()
  collect_both()
  before <- rcuda:::dlpack_counts()
  bf16 <- torch_ones(3, dtype = torch_bfloat16())
  raised <- py_r(pyhelp()$raises(np()$from_dlpack, as_dlpack(bf16)))
  # The capsule's destructor (C, Note [Capsule destructor]) kept NumPy's exception intact.
  expect_false(is.null(raised))
  expect_false(identical(raised[[1]], "SystemError"))
  collect_both()
  after <- rcuda:::dlpack_counts()
  expect_equal(after[["exported"]] - before[["exported"]], 1)
  expect_equal(after[["exports_deleted"]] - before[["exports_deleted"]], 1)
})

test_that("strides cross as they are: transposed and stepped views stay views", {
  skip_if_no_numpy()
  h <- pyhelp()
  m <- matrix(as.numeric(1:20), 4, 5)
  x <- torch_tensor(m, dtype = torch_float64())
  # rcuda to NumPy: a transpose and a step of 2 along the columns.
  at <- np()$from_dlpack(as_dlpack(x$t()))
  expect_equal(unlist(py_r(at$strides)), c(8, 40))  # bytes: NumPy's strides
  expect_equal(py_matrix(at), t(m))
  stepped <- x[, slc(1, 5, 2)]
  expect_equal(stepped$stride(), c(5, 2))
  as <- np()$from_dlpack(as_dlpack(stepped))
  expect_equal(unlist(py_r(as$strides)), c(40, 16))
  expect_equal(py_matrix(as), m[, c(1, 3, 5)])
  h$setitem(as, py_tuple(0L, 1L), -5)  # element [1, 3] of x
  expect_equal(as.array(x)[1, 3], -5)
  # NumPy to rcuda: the same two views of a NumPy array.
  a <- np()$arange(20, dtype = "float64")$reshape(py_tuple(4L, 5L))
  reference <- matrix(0:19, 4, 5, byrow = TRUE)
  xt <- from_dlpack(h$transpose(a))
  expect_equal(xt$stride(), c(1, 5))
  expect_equal(as.array(xt), t(reference))
  xs <- from_dlpack(h$step_columns(a, 1L, 2L))
  expect_equal(xs$stride(), c(5, 2))
  expect_equal(as.array(xs), reference[, c(2, 4)])
  xs[3, 2] <- 1000  # a[2, 3] in NumPy's 0-based terms
  expect_equal(py_r(h$getitem(a, py_tuple(2L, 3L))$item()), 1000)
})

test_that("offsets: a view's first element crosses, and a producer's byte_offset is honoured", {
  skip_if_no_numpy()
  h <- pyhelp()
  x <- torch_tensor(c(10, 11, 12, 13, 14))
  tail3 <- x[3:5]
  expect_equal(tail3$storage_offset(), 2)
  a <- np()$from_dlpack(as_dlpack(tail3))
  expect_equal(py_values(a), c(12, 13, 14))
  h$setitem(a, 0L, -12)
  expect_equal(as.array(x), c(10, 11, -12, 13, 14))
  # A hand-made capsule: data at the buffer's start, byte_offset 3 elements in, padding -1.
  # (64 values: R releases tensors of at most 256 bytes in batches, Note [Small tensors share a
  # finalizer] in src/handles.cpp, and this test wants the release now.)
  deleted <- py_r(h$deleted_count())
  values <- seq(0.5, by = 1, length.out = 64)
  capsule <- h$offset_capsule(as.list(values), 3L)
  y <- from_dlpack(capsule)
  expect_equal(as.array(y), values)
  y[2] <- 9
  expect_equal(unlist(py_r(h$buffer_values())), c(-1, -1, -1, replace(values, 2, 9)))
  expect_equal(py_r(shim()$capsule_name(capsule)), "used_dltensor")
  rm(y)
  collect_both()
  expect_equal(py_r(h$deleted_count()) - deleted, 1)  # the producer's deleter, once
})

# ---- lifetimes ---------------------------------------------------------------------------------

test_that("memory lent to NumPy lives until both sides are done, in either order", {
  skip_if_no_numpy()
  collect_both()
  start <- rcuda:::dlpack_counts()
  # R lets go first: NumPy still reads the values; the loan ends when NumPy lets go.
  x <- torch_tensor(c(1, 2, 3, 4))
  a <- np()$from_dlpack(as_dlpack(x))
  rm(x)
  collect_both()
  churn <- torch_randn(1000)  # reuse freed memory, if the loan had not kept it
  expect_equal(py_values(a), c(1, 2, 3, 4))
  expect_equal(rcuda:::dlpack_counts()[["exports_deleted"]], start[["exports_deleted"]])
  rm(a)
  collect_both()
  expect_equal(rcuda:::dlpack_counts()[["exports_deleted"]], start[["exports_deleted"]] + 1)
  # NumPy lets go first: R's tensor is untouched.
  x <- torch_tensor(c(5, 6, 7))
  a <- np()$from_dlpack(as_dlpack(x))
  rm(a)
  collect_both()
  expect_equal(rcuda:::dlpack_counts()[["exports_deleted"]], start[["exports_deleted"]] + 2)
  expect_equal(as.array(x), c(5, 6, 7))
  counts <- rcuda:::dlpack_counts()
  expect_equal(counts[["exported"]] - start[["exported"]], 2)
})

test_that("memory taken from NumPy lives until both sides are done, in either order", {
  skip_if_no_numpy()
  h <- pyhelp()
  collect_both()
  start <- rcuda:::dlpack_counts()
  # 100 float64 each: R releases tensors of at most 256 bytes in batches (Note [Small tensors
  # share a finalizer] in src/handles.cpp), later than their last reference; these go at once.
  # Python lets go first: the array stays alive (a weak reference sees it) while R holds x.
  a <- np()$arange(100, dtype = "float64")
  ref <- h$weak(a)
  x <- from_dlpack(a)
  rm(a)
  collect_both()
  expect_true(py_r(h$alive(ref)))
  expect_equal(as.array(x), 0:99)
  rm(x)
  collect_both()
  expect_false(py_r(h$alive(ref)))
  # R lets go first: the array is NumPy's again, with R's last write.
  a <- np()$arange(100, dtype = "float64")
  x <- from_dlpack(a)
  x[1] <- 50
  rm(x)
  collect_both()
  expect_equal(py_values(a), c(50, 1:99))
  counts <- rcuda:::dlpack_counts()
  expect_equal(counts[["imported"]] - start[["imported"]], 2)
  expect_equal(counts[["imports_released"]] - start[["imports_released"]], 2)
})

test_that("a view of an imported tensor keeps the producer's memory", {
  skip_if_no_numpy()
  h <- pyhelp()
  a <- np()$arange(100, dtype = "float64")
  ref <- h$weak(a)
  x <- from_dlpack(a)
  v <- x[4:6]
  rm(a, x)
  collect_both()
  expect_true(py_r(h$alive(ref)))
  expect_equal(as.array(v), c(3, 4, 5))
  rm(v)
  collect_both()
  expect_false(py_r(h$alive(ref)))
})

test_that("an imported tensor of a few bytes goes back to its producer with its batch", {
  skip_if_no_numpy()
  h <- pyhelp()
  a <- np()$arange(3, dtype = "float64")
  ref <- h$weak(a)
  x <- from_dlpack(a)
  rm(a, x)
  # Small tensors share a finalizer per batch of 64 (src/handles.cpp): filling the batch with
  # others and dropping them all releases it.
  filler <- lapply(1:200, function(i) torch_tensor(i))
  rm(filler)
  collect_both()
  collect_both()
  expect_false(py_r(h$alive(ref)))
})

# ---- capsules and the protocol -----------------------------------------------------------------

test_that("__dlpack__ gives a versioned capsule only to consumers that ask for one", {
  skip_if_no_numpy()
  h <- pyhelp()
  module <- shim()
  x <- torch_tensor(c(1, 2, 3))
  obj <- as_dlpack(x)
  expect_equal(unlist(py_r(obj$`__dlpack_device__`())), c(1, 0))
  plain <- h$call_dlpack(obj)
  old <- h$call_dlpack(obj, max_version = py_tuple(0L, 8L))
  versioned <- h$call_dlpack(obj, max_version = py_tuple(1L, 0L))
  expect_equal(py_r(module$capsule_name(plain)), "dltensor")
  expect_equal(py_r(module$capsule_name(old)), "dltensor")
  expect_equal(py_r(module$capsule_name(versioned)), "dltensor_versioned")
  expect_equal(py_r(module$capsule_flags(versioned)), 0)
  # Each is the same memory, and each capsule is consumed once.
  y <- from_dlpack(plain)
  z <- from_dlpack(versioned)
  x[1] <- -1
  expect_equal(as.array(y), c(-1, 2, 3))
  expect_equal(as.array(z), c(-1, 2, 3))
  expect_equal(py_r(module$capsule_name(plain)), "used_dltensor")
  expect_equal(py_r(module$capsule_name(versioned)), "used_dltensor_versioned")
  expect_error(from_dlpack(plain), "from_dlpack: the DLPack capsule was already consumed",
               class = "rcuda_value_error")
  # copy=True lends a copy, flagged as such.
  copied <- h$call_dlpack(obj, max_version = py_tuple(1L, 1L), copy = TRUE)
  expect_equal(bitwAnd(py_r(module$capsule_flags(copied)), 2L), 2L)  # DLPACK_FLAG_BITMASK_IS_COPIED
  w <- from_dlpack(copied)
  x[2] <- -2
  expect_equal(as.array(w), c(-1, 2, 3))
  # A capsule nobody consumes is deleted by its destructor.
  collect_both()
  before <- rcuda:::dlpack_counts()[["exports_deleted"]]
  rm(old)
  collect_both()
  expect_equal(rcuda:::dlpack_counts()[["exports_deleted"]], before + 1)
})

test_that("__dlpack__ refuses streams on the CPU and other devices, naming the argument", {
  skip_if_no_numpy()
  h <- pyhelp()
  obj <- as_dlpack(torch_ones(2))
  raised <- py_r(h$raises(obj$`__dlpack__`, stream = 5L))
  expect_equal(raised[[1]], "ValueError")
  expect_match(raised[[2]], "__dlpack__: stream must be None for a CPU tensor, got 5")
  raised <- py_r(h$raises(obj$`__dlpack__`, dl_device = py_tuple(2L, 0L)))
  expect_equal(raised[[1]], "BufferError")
  expect_match(raised[[2]], "cannot be lent on device")
  expect_error(as_dlpack(torch_ones(2, requires_grad = TRUE)),
               "as_dlpack: the tensor requires grad.*x\\$detach\\(\\)", class = "rcuda_value_error")
})

test_that("read-only NumPy arrays are refused unless copied", {
  skip_if_no_numpy()
  h <- pyhelp()
  a <- np()$arange(4, dtype = "float64")
  a$setflags(write = FALSE)
  ref <- h$weak(a)
  expect_error(from_dlpack(a), "from_dlpack: obj is read-only .*copy = TRUE",
               class = "rcuda_value_error")
  x <- from_dlpack(a, copy = TRUE)
  expect_equal(as.array(x), c(0, 1, 2, 3))
  x[1] <- 99  # the copy is rcuda's own
  expect_equal(py_values(a), c(0, 1, 2, 3))
  # The copy holds nothing of NumPy's: the array goes when Python lets go.
  rm(a)
  collect_both()
  expect_false(py_r(h$alive(ref)))
  expect_equal(as.array(x), c(99, 1, 2, 3))
})

test_that("bad input to from_dlpack is refused clearly, and refused loans end", {
  skip_if_no_numpy()
  h <- pyhelp()
  expect_error(from_dlpack(reticulate::r_to_py(3L)),
               "from_dlpack: obj \\(a Python builtins.int\\) has no __dlpack__",
               class = "rcuda_value_error")
  a <- np()$arange(3, dtype = "uint16")
  ref <- h$weak(a)
  expect_error(from_dlpack(a),
               "from_dlpack: obj's dtype \\(code 1 \\(uint\\), 16 bits, 1 lane\\) has no rcuda dtype",
               class = "rcuda_dtype_error")
  rm(a)
  collect_both()
  expect_false(py_r(h$alive(ref)))  # the refused capsule's destructor ended NumPy's loan
  reversed <- reticulate::py_eval("__import__('numpy').arange(4.0)[::-1]", convert = FALSE)
  expect_error(from_dlpack(reversed), "from_dlpack: obj has the negative stride -1 in dim 1")
  other <- reticulate::py_eval("__import__('datetime').datetime_CAPI", convert = FALSE)
  expect_error(from_dlpack(other),
               "from_dlpack: obj is a capsule but not a DLPack one \\(named \"datetime.datetime_CAPI\"\\)")
})

# ---- PyTorch -----------------------------------------------------------------------------------

test_that("rcuda and PyTorch share memory both ways in one process (mlverse/torch#815)", {
  skip_if_no_torch()
  torch <- pytorch()
  h <- pyhelp()
  x <- torch_tensor(matrix(c(1, 2, 3, 4), 2, 2))
  t <- torch$from_dlpack(as_dlpack(x))
  expect_equal(py_r(h$data_pointer(t)), py_r(h$data_pointer(np()$from_dlpack(as_dlpack(x)))))
  t$mul_(10)  # PyTorch writes, R reads
  expect_equal(as.array(x), matrix(c(10, 20, 30, 40), 2, 2))
  x$add_(1)  # R writes, PyTorch reads
  expect_equal(torch_values(t$flatten()), c(11, 31, 21, 41))
  # PyTorch to rcuda, and both libraries computing on the one memory.
  u <- torch$arange(6, dtype = torch$float32)$reshape(py_tuple(2L, 3L))
  y <- from_dlpack(u)
  expect_equal(as.array(torch_matmul(y, y$t())), matrix(c(5, 14, 14, 50), 2, 2))
  expect_equal(torch_values(torch$matmul(u, u$T)$flatten()), c(5, 14, 14, 50))
  y[2, 3] <- 0
  expect_equal(py_r(u$sum()$item()), 10)
})

test_that("every dtype crosses to and from PyTorch with its values", {
  skip_if_no_torch()
  torch <- pytorch()
  for (entry in dlpack_dtypes) {
    t <- torch$from_dlpack(as_dlpack(rcuda_values(entry)))
    expect_equal(reticulate::py_str(t$dtype), paste0("torch.", entry$torch), info = entry$rcuda)
    expect_equal(torch_values(t), entry$values, info = entry$rcuda)
    source <- torch$tensor(reticulate::r_to_py(as.list(entry$values)),
                           dtype = reticulate::py_get_attr(torch, entry$torch))
    x <- from_dlpack(source)
    expect_equal(x$dtype, dtype_of(entry$rcuda), info = entry$rcuda)
    expect_equal(r_values(x), entry$values, info = entry$rcuda)
  }
})

test_that("PyTorch's strided views stay views in rcuda, and rcuda's in PyTorch", {
  skip_if_no_torch()
  torch <- pytorch()
  h <- pyhelp()
  u <- torch$arange(12, dtype = torch$float64)$reshape(py_tuple(3L, 4L))
  reference <- matrix(0:11, 3, 4, byrow = TRUE)
  y <- from_dlpack(h$step_columns(u$T, 0L, 2L))  # u.T[:, ::2]: strides (1, 8)
  expect_equal(y$stride(), c(1, 8))
  expect_equal(as.array(y), t(reference)[, c(1, 3)])
  y[4, 2] <- -1  # u[2, 3]
  expect_equal(py_r(u$`__getitem__`(py_tuple(2L, 3L))$item()), -1)
  x <- torch_tensor(reference, dtype = torch_float64())
  t <- torch$from_dlpack(as_dlpack(x$t()[, slc(1, 3, 2)]))
  expect_equal(unlist(py_r(t$stride())), c(1, 8))
  expect_equal(py_matrix(t), t(reference)[, c(1, 3)])
})

test_that("memory lent to PyTorch and taken from it lives until both sides are done", {
  skip_if_no_torch()
  expect_lent_to_pytorch_outlives_r(function() torch_tensor(c(1, 2, 3)), c(1, 2, 3))
  # Above the small tensors' 256 bytes, as in the NumPy test.
  expect_taken_from_pytorch_outlives_it(function() pytorch()$ones(100L), rep(1, 100))
})

test_that("PyTorch imported before rcuda in a fresh R process exchanges both ways", {
  skip_if_no_torch()
  script <- tempfile(fileext = ".R")
  writeLines(c(
    "torch <- reticulate::import('torch', convert = FALSE)",
    "u <- torch$arange(4L, dtype = torch$float64)",
    "library(rcuda)",
    "x <- from_dlpack(u)",
    "x$mul_(2)",
    "t <- torch$from_dlpack(as_dlpack(torch_tensor(c(1, 2))$add(1)))",
    "sums <- c(reticulate::py_to_r(u$sum()$item()), reticulate::py_to_r(t$sum()$item()))",
    "cat(as.array(x), sums, '\\n')"
  ), script)
  out <- system2(file.path(R.home("bin"), "Rscript"), script, stdout = TRUE, stderr = TRUE,
                 env = c(paste0("R_LIBS=", paste(.libPaths(), collapse = ":")),
                         paste0("RETICULATE_PYTHON=", reticulate::py_config()$python)))
  expect_equal(trimws(out[length(out)]), "0 2 4 6 12 5")
})

# ---- CUDA (the GPU machine) --------------------------------------------------------------------

test_that("CUDA tensors cross to PyTorch and back on the same memory, without a copy", {
  skip_if_cuda_not_available()
  skip_if_no_torch()
  torch <- pytorch()
  h <- pyhelp()
  skip_if_not(py_r(torch$cuda$is_available()), "PyTorch sees no GPU")
  x <- torch_tensor(matrix(c(1, 2, 3, 4, 5, 6), 2, 3), device = "cuda")
  u <- torch$arange(6L, dtype = torch$float32, device = "cuda")
  cuda_synchronize()
  allocations <- function() cuda_memory_stats()[["allocation.all.allocated"]]
  before <- allocations()
  t <- torch$from_dlpack(as_dlpack(x))  # rcuda to PyTorch
  y <- from_dlpack(u)  # PyTorch to rcuda
  back <- torch$from_dlpack(as_dlpack(y))  # and back again
  capsule <- h$call_dlpack(as_dlpack(x), stream = -1L)
  expect_equal(allocations(), before)  # rcuda's pool made nothing: no copy
  expect_equal(reticulate::py_str(t$device), "cuda:0")
  expect_true(y$is_cuda)
  expect_equal(py_r(h$data_pointer(t)), py_r(shim()$capsule_data_pointer(capsule)))
  expect_equal(py_r(h$data_pointer(back)), py_r(h$data_pointer(u)))
  # Writes both ways. Work queued after the exchange is not ordered across the libraries, so
  # each side synchronises before the other reads (docs/dlpack.md, Streams).
  t$mul_(10)
  torch$cuda$synchronize()
  expect_equal(as.array(x), matrix(c(10, 20, 30, 40, 50, 60), 2, 3))
  x$add_(1)
  cuda_synchronize()
  expect_equal(torch_values(t$flatten()$cpu()), c(11, 31, 51, 21, 41, 61))
  y$mul_(2)
  cuda_synchronize()
  expect_equal(torch_values(u$cpu()), c(0, 2, 4, 6, 8, 10))
  back$add_(1)
  torch$cuda$synchronize()
  expect_equal(as.array(y), c(1, 3, 5, 7, 9, 11))
})

test_that("rcuda's stream is ordered before PyTorch's and PyTorch's before rcuda's", {
  skip_if_cuda_not_available()
  skip_if_no_torch()
  torch <- pytorch()
  skip_if_not(py_r(torch$cuda$is_available()), "PyTorch sees no GPU")
  n <- 4096
  for (round in 1:3) {
    factor <- round + 1  # a value no earlier round left in memory the pool may hand out again
    # Long products on rcuda's stream (ones times ones over n stays ones), read by PyTorch at
    # once: torch.from_dlpack passes its stream, which __dlpack__ makes wait for rcuda's.
    a <- torch_ones(n, n, device = "cuda")
    for (i in 1:4) a <- torch_matmul(a, a) / n
    t <- torch$from_dlpack(as_dlpack(a * factor))
    expect_equal(py_r(t$sum()$item()), factor * n * n, tolerance = 1e-6)
    # Long products on PyTorch's stream, read by rcuda at once: from_dlpack passes rcuda's
    # stream to PyTorch's __dlpack__, which makes it wait for PyTorch's.
    b <- torch$ones(py_tuple(as.integer(n), as.integer(n)), device = "cuda")
    for (i in 1:4) b <- torch$matmul(b, b)$div(n)
    y <- from_dlpack(b$mul(factor))
    expect_equal(as.numeric(y$sum()), factor * n * n, tolerance = 1e-6)
  }
})

test_that("CUDA memory lent to PyTorch outlives R's tensor, and PyTorch's outlives its own", {
  skip_if_cuda_not_available()
  skip_if_no_torch()
  skip_if_not(py_r(pytorch()$cuda$is_available()), "PyTorch sees no GPU")
  expect_lent_to_pytorch_outlives_r(function() torch_tensor(c(1, 2, 3), device = "cuda"), c(1, 2, 3))
  expect_taken_from_pytorch_outlives_it(
    function() pytorch()$full(py_tuple(100L), 7, device = "cuda"), rep(7, 100))
})
