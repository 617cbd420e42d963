# load_state_dict(): PyTorch's zip checkpoints, built here byte by byte as torch.save() writes
# them (protocol 2 pickle in <name>/data.pkl, raw little-endian storages in <name>/data/<key>),
# and read back against the R values they were made from.

# Pickle opcodes, as Python's pickle module writes them.
pk_text <- function(s) c(as.raw(0x58), writeBin(nchar(s, "bytes"), raw(), size = 4, endian = "little"), charToRaw(s))
pk_int <- function(i) c(as.raw(0x4a), writeBin(as.integer(i), raw(), size = 4, endian = "little"))
pk_global <- function(module, name) c(charToRaw("c"), charToRaw(paste0(module, "\n", name, "\n")))
pk_tuple <- function(...) c(as.raw(0x28), ..., charToRaw("t"))
pk_mark <- as.raw(0x28)
pk_false <- as.raw(0x89)
pk_true <- as.raw(0x88)
pk_reduce <- charToRaw("R")
pk_ordered_dict <- c(pk_global("collections", "OrderedDict"), charToRaw(")"), pk_reduce)

# _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict()), wrapped in
# _rebuild_parameter when `parameter`.
pk_tensor <- function(storage_class, key, numel, offset, size, stride, requires_grad = FALSE, parameter = FALSE) {
  storage <- c(pk_tuple(pk_text("storage"), pk_global("torch", storage_class), pk_text(key), pk_text("cpu"), pk_int(numel)),
               charToRaw("Q"))
  tensor <- c(pk_global("torch._utils", "_rebuild_tensor_v2"),
              pk_tuple(storage, pk_int(offset), do.call(pk_tuple, lapply(size, pk_int)),
                       do.call(pk_tuple, lapply(stride, pk_int)), if (requires_grad) pk_true else pk_false,
                       pk_ordered_dict),
              pk_reduce)
  if (!parameter) return(tensor)
  c(pk_global("torch._utils", "_rebuild_parameter"), pk_tuple(tensor, pk_true, pk_ordered_dict), pk_reduce)
}

pk_dict <- function(entries) {
  body <- unlist(lapply(names(entries), function(k) c(pk_text(k), entries[[k]])), use.names = FALSE)
  c(pk_ordered_dict, pk_mark, body, charToRaw("u"))
}

# A checkpoint file holding `pickle` and the storages (name -> raw bytes).
write_checkpoint <- function(pickle, storages) {
  root <- tempfile("ckpt-")
  dir.create(file.path(root, "archive", "data"), recursive = TRUE)
  writeBin(c(as.raw(c(0x80, 0x02)), pickle, charToRaw(".")), file.path(root, "archive", "data.pkl"))
  writeLines("3", file.path(root, "archive", "version"))
  for (key in names(storages)) writeBin(storages[[key]], file.path(root, "archive", "data", key))
  path <- tempfile(fileext = ".pth")
  old <- setwd(root)
  on.exit(setwd(old))
  utils::zip(path, "archive", flags = "-r9Xq")
  path
}

test_that("load_state_dict reads tensors of every storage type with their offsets and strides", {
  skip_if(!nzchar(Sys.which("zip")), "no zip program")
  m <- matrix(rnorm(6), 2, 3)   # row-major in the storage, as PyTorch lays a [2, 3] tensor out
  storage0 <- writeBin(as.vector(t(m)), raw(), size = 4, endian = "little")
  doubles <- rnorm(5)
  ints <- c(-3, 0, 2^40, 7)
  words <- as.vector(rbind(ints %% 2^32, ints %/% 2^32))
  int64 <- writeBin(as.integer(ifelse(words >= 2^31, words - 2^32, words)), raw(), size = 4, endian = "little")
  halves <- as.raw(c(0x00, 0x3c, 0x00, 0xc0, 0x00, 0x35))   # 1, -2, 0.3125 in IEEE half
  path <- write_checkpoint(
    pk_dict(list(
      weight = pk_tensor("FloatStorage", "0", 6, 0, c(2, 3), c(3, 1), requires_grad = TRUE, parameter = TRUE),
      weight_t = pk_tensor("FloatStorage", "0", 6, 0, c(3, 2), c(1, 3)),          # a transposed view
      row = pk_tensor("FloatStorage", "0", 6, 3, 3, 1),                            # the second row: an offset
      double = pk_tensor("DoubleStorage", "1", 5, 0, 5, 1),
      long = pk_tensor("LongStorage", "2", 4, 0, c(2, 2), c(2, 1)),
      half = pk_tensor("HalfStorage", "3", 3, 0, 3, 1),
      flags = pk_tensor("BoolStorage", "4", 3, 0, 3, 1),
      scalar = pk_tensor("DoubleStorage", "1", 5, 2, integer(), integer())
    )),
    list("0" = storage0, "1" = writeBin(doubles, raw(), size = 8, endian = "little"), "2" = int64, "3" = halves,
         "4" = as.raw(c(1, 0, 1)))
  )
  dict <- load_state_dict(path)
  expect_equal(names(dict), c("weight", "weight_t", "row", "double", "long", "half", "flags", "scalar"))
  f32 <- function(x) {
    y <- readBin(writeBin(as.vector(x), raw(), size = 4), "double", length(x), size = 4)
    dim(y) <- dim(x)
    y
  }
  expect_equal(as_array(dict$weight), f32(m), tolerance = 0)
  expect_true(dict$weight$requires_grad)
  expect_equal(as_array(dict$weight_t), t(f32(m)), tolerance = 0)
  expect_equal(as_array(dict$row), f32(m[2, ]), tolerance = 0)
  expect_equal(as_array(dict$double), doubles, tolerance = 0)
  expect_equal(dict$double$dtype, torch_float64())
  expect_equal(as_array(dict$long$to(dtype = torch_float64())), matrix(ints, 2, byrow = TRUE))
  expect_equal(dict$long$dtype, torch_int64())
  expect_equal(as_array(dict$half$float()), c(1, -2, 0.3125))
  expect_equal(as_array(dict$flags), c(TRUE, FALSE, TRUE))
  expect_equal(dict$scalar$dim(), 0)
  expect_equal(dict$scalar$item(), doubles[3])
})

test_that("load_state_dict keeps nested dicts as nested lists", {
  skip_if(!nzchar(Sys.which("zip")), "no zip program")
  path <- write_checkpoint(
    pk_dict(list(model = pk_dict(list(bias = pk_tensor("FloatStorage", "0", 2, 0, 2, 1))), epoch = pk_int(7))),
    list("0" = writeBin(c(0.5, -1.5), raw(), size = 4, endian = "little"))
  )
  dict <- load_state_dict(path)
  expect_equal(dict$epoch, 7)
  expect_equal(as_array(dict$model$bias), c(0.5, -1.5))
})

test_that("load_state_dict refuses other files and Python objects outside a state dict, by name", {
  skip_if(!nzchar(Sys.which("zip")), "no zip program")
  plain <- tempfile()
  writeBin(as.raw(1:10), plain)
  expect_error(load_state_dict(plain), "load_state_dict: .* is not a PyTorch zip file", class = "value_error")
  evil <- write_checkpoint(c(pk_global("os", "system"), pk_tuple(pk_text("echo hi")), pk_reduce), list())
  expect_error(load_state_dict(evil), "load_state_dict: the file holds a Python object of os.system")
  expect_error(load_state_dict(plain, legacy_stream = TRUE), "legacy_stream = TRUE .* is not supported")
  expect_error(load_state_dict(file.path(tempdir(), "no-such-file.pth")), "load_state_dict")
})
