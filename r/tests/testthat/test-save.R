# torch_save() / torch_load() in safetensors files (Note [R objects in safetensors] in
# src/save.cpp).

dtypes <- list(torch_float32(), torch_float64(), torch_float16(), torch_bfloat16(), torch_int64(),
               torch_int32(), torch_int16(), torch_int8(), torch_uint8(), torch_bool())

random_of <- function(dtype, ...) {
  x <- torch_randn(...) * 20
  if (dtype == torch_bool()) return(x > 0)
  x$to(dtype = dtype)
}

# The header of a safetensors file, read with base R (not rcuda's reader).
file_header <- function(path) {
  con <- file(path, "rb")
  on.exit(close(con))
  size <- readBin(con, "integer", 2, size = 4, endian = "little")
  rawToChar(readBin(con, "raw", size[1]))
}

test_that("tensors of every dtype round-trip with their values", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  for (dtype in dtypes) {
    x <- random_of(dtype, 4, 3)
    torch_save(x, path)
    y <- torch_load(path)
    expect_true(is_torch_tensor(y))
    expect_true(y$dtype == dtype)
    expect_equal(y$shape, c(4L, 3L))
    expect_identical(as_array(y), as_array(x))
  }
})

test_that("views, empty and 0-d tensors are saved as their values", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  base <- torch_randn(5, 6)
  objects <- list(t = base$t(), stepped = base[, slc(1, 6, 2)], empty = torch_zeros(0, 3),
                  scalar = torch_scalar_tensor(2.5), row = base[3, ])
  torch_save(objects, path)
  back <- torch_load(path)
  expect_named(back, names(objects))
  for (nm in names(objects)) {
    expect_equal(back[[nm]]$shape, objects[[nm]]$shape, info = nm)
    expect_identical(as_array(back[[nm]]), as_array(objects[[nm]]), info = nm)
  }
})

test_that("nested lists come back with their names, order and R values", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  w <- torch_randn(3, 2)
  obj <- list(
    model = list(fc1.weight = w, fc1.bias = torch_zeros(2), layers = list(torch_ones(2), torch_eye(2))),
    epoch = 7L, lr = c(a = 0.1, b = NA, c = NaN, d = Inf, e = -Inf), flags = c(TRUE, NA, FALSE),
    note = c("caf\u00e9", NA, ""), nothing = NULL, m = matrix(1:6, 2), empty = list(),
    partly = list(x = 1, 2)
  )
  torch_save(obj, path)
  back <- torch_load(path)
  strip <- function(x) if (is_torch_tensor(x)) "tensor" else if (is.list(x)) lapply(x, strip) else x
  expect_identical(strip(back), strip(obj))
  expect_identical(as_array(back$model$fc1.weight), as_array(w))
  expect_identical(as_array(back$model$layers[[2]]), diag(2))
  expect_identical(back$note[1], "caf\u00e9")
})

test_that("tensors are stored under their names joined with '.', as PyTorch state dicts", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  torch_save(list(encoder = list(layers = list(list(weight = torch_ones(1)), list(weight = torch_ones(1)))),
                  head.bias = torch_zeros(1)), path)
  header <- file_header(path)
  for (key in c("encoder.layers.1.weight", "encoder.layers.2.weight", "head.bias")) {
    expect_true(grepl(paste0("\"", key, "\":{\"dtype\""), header, fixed = TRUE), info = key)
  }
  expect_true(grepl("\"format\":\"pt\"", header, fixed = TRUE))
  # A lone tensor is "tensor".
  torch_save(torch_ones(2), path)
  expect_true(grepl("\"tensor\":{\"dtype\":\"F32\"", file_header(path), fixed = TRUE))
})

test_that("a state dict round-trips as a flat named list", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  sd <- list(`0.weight` = torch_randn(4, 3), `0.bias` = torch_randn(4), `2.weight` = torch_randn(1, 4))
  torch_save(sd, path)
  back <- torch_load(path)
  expect_named(back, names(sd))
  for (nm in names(sd)) expect_identical(as_array(back[[nm]]), as_array(sd[[nm]]))
})

test_that("saving refuses what safetensors cannot hold, naming where it is", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  t <- torch_ones(1)
  expect_error(torch_save(list(a.b = t, a = list(b = t)), path), "'a.b'", class = "rcuda_value_error")
  expect_error(torch_save(list(opt = list(step = function(x) x)), path), "'opt.step'",
               class = "rcuda_value_error")
  expect_error(torch_save(list(env = new.env()), path), "'env'", class = "rcuda_value_error")
  expect_error(torch_save(list(df = data.frame(a = 1)), path), "attribute 'class'",
               class = "rcuda_value_error")
  con <- rawConnection(raw(0))
  expect_error(torch_save(t, con), "file name", class = "rcuda_value_error")
  close(con)
  expect_false(file.exists(path))
})

test_that("a save leaves only the file it wrote, and replaces an older one", {
  dir <- tempfile()
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE))
  path <- file.path(dir, "model.safetensors")
  torch_save(list(a = torch_ones(10)), path)
  torch_save(list(b = torch_zeros(2)), path)
  expect_identical(list.files(dir, all.files = TRUE, no.. = TRUE), "model.safetensors")
  expect_named(torch_load(path), "b")
})

test_that("corrupt, truncated and missing files are rcuda_file_errors naming the path", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(c(path, paste0(path, ".cut"))))
  torch_save(list(w = torch_randn(10, 10)), path)
  bytes <- readBin(path, "raw", file.size(path))
  cut <- paste0(path, ".cut")
  for (n in c(3, 8, 40, length(bytes) - 1)) {
    writeBin(bytes[seq_len(n)], cut)
    expect_error(torch_load(cut), cut, fixed = TRUE, class = "rcuda_file_error")
  }
  writeLines("this is not a safetensors file", cut)
  expect_error(torch_load(cut), "header size", class = "rcuda_file_error")
  bad_json <- bytes
  bad_json[9] <- charToRaw("[")
  writeBin(bad_json, cut)
  expect_error(torch_load(cut), "not valid JSON", class = "rcuda_file_error")
  expect_error(torch_load(file.path(tempdir(), "absent.safetensors")), "absent.safetensors",
               class = "rcuda_file_error")
})

test_that("files without rcuda's metadata load as a flat named list in file order", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  a <- torch_randn(2, 2)
  b <- torch_tensor(1:3)
  .Call(rcuda:::rc_safetensors_save, list(layer.b = b, layer.a = a), c(format = "pt"), path)
  back <- torch_load(path)
  expect_named(back, c("layer.b", "layer.a"))
  expect_identical(as_array(back$layer.a), as_array(a))
  expect_identical(as_array(back$layer.b), 1:3)
})

test_that("a file written by Python's safetensors loads with its values", {
  py <- python_safetensors()
  path <- tempfile(fileext = ".safetensors")
  text <- tempfile(fileext = ".txt")
  on.exit(unlink(c(path, text)))
  run_python(py, "write", sample.int(1e6, 1), path, text)
  expected <- read_python_text(text)
  back <- torch_load(path)
  expect_setequal(names(back), names(expected$tensors))
  # The unsigned codes without an rcuda dtype are widened (Note [Safetensors dtypes]).
  widened <- c(F64 = "float64", F32 = "float32", F16 = "float16", BF16 = "bfloat16", I64 = "int64",
               I32 = "int32", I16 = "int16", I8 = "int8", U8 = "uint8", U16 = "int32",
               U32 = "int64", BOOL = "bool", F8_E4M3 = "float8_e4m3fn", F8_E5M2 = "float8_e5m2",
               C64 = "complex64")
  for (nm in names(expected$tensors)) {
    e <- expected$tensors[[nm]]
    t <- back[[nm]]
    expect_identical(.Call(rcuda:::rc_meta, t)[[2]], unname(widened[e$code]), info = nm)
    expect_identical(t$shape, e$shape, info = nm)
    if (!startsWith(e$code, "F8")) {  # R has no float8 conversion; the engine's C++ tests check it
      expect_identical(row_major(t), e$values, info = nm)
    }
  }
})

test_that("Python's safetensors reads rcuda's files", {
  py <- python_safetensors()
  path <- tempfile(fileext = ".safetensors")
  text <- tempfile(fileext = ".txt")
  on.exit(unlink(c(path, text)))
  obj <- list(w = torch_randn(3, 4)$t(), b = torch_tensor(c(-2L, 5L)), flag = torch_tensor(c(TRUE, FALSE)),
              half = torch_randn(5)$to(dtype = torch_float16()), nested = list(torch_arange(1, 6)),
              z = torch_complex(torch_randn(2, 3), torch_randn(2, 3))$t())
  torch_save(obj, path)
  run_python(py, "read", path, text)
  seen <- read_python_text(text)
  codes <- c(w = "F32", b = "I64", flag = "BOOL", half = "F16", nested.1 = "F32", z = "C64")
  expect_setequal(names(seen$tensors), names(codes))
  flat <- list(w = obj$w, b = obj$b, flag = obj$flag, half = obj$half, nested.1 = obj$nested[[1]], z = obj$z)
  for (nm in names(codes)) {
    expect_identical(seen$tensors[[nm]]$code, unname(codes[nm]), info = nm)
    expect_identical(seen$tensors[[nm]]$shape, flat[[nm]]$shape, info = nm)
    expect_identical(seen$tensors[[nm]]$values, row_major(flat[[nm]]), info = nm)
  }
  expect_identical(seen$metadata[["format"]], "pt")
  expect_true(startsWith(seen$metadata[["rcuda"]], "{\"version\":1"))
})

test_that("files from torch for R's torch_save load", {
  # Its layout (torch for R 0.17, serialization version 3): tensors keyed by address, metadata
  # "__r__", and for lists the R object with address stand-ins as a uint8 tensor "__robj__".
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  x <- torch_randn(2, 3)
  y <- torch_tensor(c(4L, 5L))
  object <- list(x = structure("0x5581", class = "torch_tensor_address"),
                 inner = list(structure("0x77aa", class = "torch_tensor_address"), "text"),
                 n = 3)
  robj <- .Call(rcuda:::rc_uint8_from_raw, serialize(object, NULL), length(serialize(object, NULL)))
  meta <- c(`__r__` = "{\"type\":\"list\",\"version\":3,\"requires_grad\":[],\"special_dtype\":[]}")
  .Call(rcuda:::rc_safetensors_save, list(`0x5581` = x, `0x77aa` = y, `__robj__` = robj), meta, path)
  back <- torch_load(path)
  expect_identical(as_array(back$x), as_array(x))
  expect_identical(as_array(back$inner[[1]]), c(4L, 5L))
  expect_identical(back$inner[[2]], "text")
  expect_identical(back$n, 3)

  meta <- c(`__r__` = "{\"type\":\"tensor\",\"version\":3,\"requires_grad\":[],\"special_dtype\":[]}")
  .Call(rcuda:::rc_safetensors_save, list(`...unnamed...` = x), meta, path)
  expect_identical(as_array(torch_load(path)), as_array(x))

  meta <- c(`__r__` = "{\"type\":\"module\",\"version\":3,\"requires_grad\":{\"fc.weight\":true}}")
  .Call(rcuda:::rc_safetensors_save, list(fc.weight = x, `__robj__` = robj), meta, path)
  expect_warning(sd <- torch_load(path), "state dict")
  expect_named(sd, "fc.weight")
})

test_that("requires_grad is kept", {
  if (is.null(rcuda:::tensor_methods$requires_grad_)) skip("autograd is not in this build of the R package")
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  w <- torch_randn(2)$requires_grad_(TRUE)
  torch_save(list(w = w, c = torch_ones(1)), path)
  back <- torch_load(path)
  expect_true(back$w$requires_grad)
  expect_false(back$c$requires_grad)
})

test_that("device places the tensors; NULL restores the device they were saved from", {
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  torch_save(list(a = torch_ones(2)), path)
  expect_true(torch_load(path, device = "cpu")$a$device == torch_device("cpu"))
  expect_true(torch_load(path, device = NULL)$a$device == torch_device("cpu"))
  skip_if_cuda_not_available()
  expect_true(torch_load(path, device = "cuda")$a$is_cuda)
  torch_save(list(g = torch_ones(2, device = "cuda"), c = torch_zeros(1)), path)
  back <- torch_load(path, device = NULL)
  expect_true(back$g$is_cuda)
  expect_false(back$c$is_cuda)
  expect_false(torch_load(path)$g$is_cuda)
})

test_that("a whole module round trips: class, methods, fields, markers, shared tensors", {
  path <- tempfile(fileext = ".pt")
  on.exit(unlink(path))
  Net <- nn_module(
    "Net",
    initialize = function(n_in, n_out) {
      self$fc <- nn_linear(n_in, 8)
      self$norm <- nn_batch_norm1d(8)
      self$head <- nn_linear(8, n_out)
      self$scale <- nn_parameter(torch_tensor(1.5))
      self$offset <- nn_buffer(torch_randn(n_out))
      self$scratch <- nn_buffer(torch_zeros(2), persistent = FALSE)
      self$tied <- self$head$weight  # one tensor in two places
      self$label <- "net"
    },
    forward = function(x) {
      self$head(nnf_relu(self$norm(self$fc(x)))) * self$scale + self$offset
    },
    describe = function() paste(self$label, self$head$out_features)
  )
  net <- Net(5, 3)
  net$fc$bias$requires_grad_(FALSE)
  x <- torch_randn(16, 5)
  net(x)  # batch norm's running statistics move
  net$eval()
  torch_save(net, path)
  loaded <- torch_load(path)
  rm(net)
  invisible(gc())
  net <- Net(5, 3)  # a fresh module of the class, for its methods only
  expect_s3_class(loaded, "nn_module")
  expect_false(loaded$training)
  expect_identical(loaded$describe(), "net 3")
  reference <- torch_load(path)
  expect_identical(as_array(loaded(x)), as_array(reference(x)))
  # The values are the saved ones (a state dict written alongside would give them too).
  sd <- loaded$state_dict()
  expect_identical(names(sd), names(reference$state_dict()))
  expect_true(all(vapply(loaded$parameters, is_nn_parameter, logical(1))))
  expect_true(is_nn_buffer(loaded$offset))
  expect_false(loaded$fc$bias$requires_grad)
  expect_true(loaded$fc$weight$requires_grad && loaded$fc$weight$is_leaf)
  # The tied field is the head's weight again, not a copy.
  with_no_grad(loaded$head$weight$fill_(0.25))
  expect_equal(as_array(loaded$tied), matrix(0.25, 3, 8))
  # Evaluation by hand, in double loops over the loaded values.
  p <- lapply(loaded$state_dict(), as_array)
  xa <- as_array(x)
  h <- xa %*% t(p[["fc.weight"]]) + matrix(p[["fc.bias"]], 16, 8, byrow = TRUE)
  h <- sweep(sweep(h, 2, p[["norm.running_mean"]]), 2, sqrt(p[["norm.running_var"]] + 1e-5), "/")
  h <- sweep(sweep(h, 2, p[["norm.weight"]], "*"), 2, p[["norm.bias"]], "+")
  h <- pmax(h, 0)
  out <- (h %*% t(p[["head.weight"]]) + matrix(p[["head.bias"]], 16, 3, byrow = TRUE)) * p[["scale"]]
  out <- out + matrix(p[["offset"]], 16, 3, byrow = TRUE)
  expect_equal(as_array(loaded(x)), out, tolerance = 1e-5)
  # The loaded module trains.
  loaded$train()
  opt <- optim_sgd(loaded$parameters, lr = 0.1)
  before <- as_array(loaded$head$bias)
  loss <- mean((loaded(x) - 1)^2)
  loss$backward()
  opt$step()
  expect_false(isTRUE(all.equal(as_array(loaded$head$bias), before)))
})

test_that("a module holding a non-tensor external pointer is refused by name", {
  path <- tempfile(fileext = ".pt")
  on.exit(unlink(path))
  m <- nn_linear(2, 2)
  m$handle <- new("externalptr")
  expect_error(torch_save(m, path), "externalptr", class = "rcuda_value_error")
  expect_false(file.exists(path))
})

test_that("torch_serialize gives the file's bytes as a raw vector, which torch_load reads", {
  obj <- list(w = torch_randn(3, 2), z = torch_complex(torch_randn(2), torch_randn(2)), note = "kept")
  bytes <- torch_serialize(obj)
  expect_type(bytes, "raw")
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path))
  torch_save(obj, path)
  expect_identical(bytes, readBin(path, "raw", n = file.size(path)))
  back <- torch_load(bytes)
  expect_identical(as_array(back$w), as_array(obj$w))
  expect_identical(as_array(back$z), as_array(obj$z))
  expect_identical(back$note, "kept")
  con <- rawConnection(raw(0))
  on.exit(close(con), add = TRUE)
  expect_error(torch_save(obj, con), "torch_serialize", class = "rcuda_value_error")
})

test_that("torch_save keeps a dataset, an environment and a closure with their tensors", {
  path <- tempfile(fileext = ".pt")
  on.exit(unlink(path))
  ds <- dataset(initialize = function() { self$x <- torch_randn(4, 3); self$y <- self$x * 2 },
                .getitem = function(i) list(self$x[i, ], self$y[i, ]),
                .length = function() 4)
  d <- ds()
  torch_save(d, path)
  d2 <- torch_load(path)
  expect_identical(as_array(d2$x), as_array(d$x))
  expect_identical(as_array(d2[2][[2]]), as_array(d$y[2, ]))
  expect_identical(length(d2), 4L)
  env <- new.env()
  env$w <- torch_ones(2)
  env$same <- env$w
  torch_save(env, path)
  back <- torch_load(path)
  back$w$add_(1)
  expect_identical(as_array(back$same), c(2, 2))  # one tensor in two places stays one
  scale <- torch_tensor(3)
  f <- function(x) x * scale
  torch_save(f, path)
  expect_identical(as_array(torch_load(path)(torch_tensor(2))), 6)
})
