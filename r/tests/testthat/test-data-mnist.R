# mnist_dataset(), fashion_mnist_dataset() and transform_to_tensor(): idx files written here (and
# Debian's Fashion-MNIST files when installed), checked against base R reading of the same bytes.

# A small MNIST-like folder: n images of h x w (not square, so a transposition shows; w > 4, or
# transform_to_tensor would take 1 x h x w for h x w x c, as torchvision's does) with
# random pixels, and random labels 0-9. Returns the pixels as an n x h x w array and the labels.
make_idx_folder <- function(dir, n = 7, h = 5, w = 6, split = "train", gz = TRUE) {
  dir.create(dir, showWarnings = FALSE)
  pixels <- sample(0:255, n * h * w, replace = TRUE)  # row-major: image, row, column
  labels <- sample(0:9, n, replace = TRUE)
  prefix <- if (split == "train") "train" else "t10k"
  ext <- if (gz) ".gz" else ""
  write_idx(file.path(dir, paste0(prefix, "-images-idx3-ubyte", ext)), pixels, c(n, h, w), gz)
  write_idx(file.path(dir, paste0(prefix, "-labels-idx1-ubyte", ext)), labels, n, gz)
  images <- aperm(array(pixels, c(w, h, n)), c(3, 2, 1))
  list(images = images, labels = labels)
}

test_that("mnist_dataset reads idx files: images held once, classes 1-based", {
  dir <- tempfile()
  on.exit(unlink(dir, recursive = TRUE))
  ref <- make_idx_folder(dir)
  ds <- mnist_dataset(dir)
  expect_s3_class(ds, c("mnist", "dataset"))
  expect_equal(length(ds), 7)
  expect_true(ds$data$dtype == torch_uint8())
  expect_identical(ds$data$shape, c(7L, 5L, 6L))
  expect_identical(as_array(ds$data), array(as.raw(ref$images), dim(ref$images)))  # uint8: bytes
  expect_identical(ds$targets, as.integer(ref$labels) + 1L)
  item <- ds[[3]]
  expect_identical(item$x, array(as.integer(ref$images[3, , ]), c(1, 5, 6)))  # as torchvision
  expect_identical(item$y, ref$labels[3] + 1L)
})

test_that("with transform_to_tensor, samples and batches are float 1 x H x W in [0, 1]", {
  dir <- tempfile()
  on.exit(unlink(dir, recursive = TRUE))
  ref <- make_idx_folder(dir, split = "test", gz = FALSE)  # plain files read too
  ds <- mnist_dataset(dir, train = FALSE, transform = transform_to_tensor)
  item <- ds[[2]]
  expect_true(item$x$dtype == torch_float())
  expect_identical(item$x$shape, c(1L, 5L, 6L))
  expect_equal(as_array(item$x)[1, , ], ref$images[2, , ] / 255, tolerance = 1e-7)
  batch <- ds[c(6, 1, 6)]  # .getbatch
  expect_identical(batch$x$shape, c(3L, 1L, 5L, 6L))
  expect_equal(as_array(batch$x)[, 1, , ], ref$images[c(6, 1, 6), , ] / 255, tolerance = 1e-7)
  expect_true(batch$y$dtype == torch_long())
  expect_identical(as_array(batch$y), as.integer(ref$labels[c(6, 1, 6)]) + 1L)
  # A dataloader's batch equals the default collate of the samples.
  dl <- dataloader(ds, batch_size = 4)
  b <- dataloader_next(dataloader_make_iter(dl))
  samples <- lapply(1:4, function(i) ds$.getitem(i))
  expect_identical(as_array(b$x), as_array(torch_stack(lapply(samples, `[[`, "x"))))
  expect_identical(as_array(b$y), vapply(samples, `[[`, integer(1), "y"))
})

test_that("batches without a transform, or with another one, match the samples collated", {
  dir <- tempfile()
  on.exit(unlink(dir, recursive = TRUE))
  ref <- make_idx_folder(dir)
  plain <- mnist_dataset(dir)
  b <- plain[c(2, 7)]
  expect_true(b$x$dtype == torch_long())
  expect_identical(as_array(b$x)[, 1, , ], array(as.integer(ref$images[c(2, 7), , ]), c(2, 5, 6)))
  flip <- function(img) torch_tensor(img[, 5:1, , drop = FALSE] * 2L)
  custom <- mnist_dataset(dir, transform = flip, target_transform = function(y) y * 10L)
  b <- custom[c(2, 7)]
  expect_identical(as_array(b$x)[, 1, , ], 2L * array(as.integer(ref$images[c(2, 7), 5:1, ]), c(2, 5, 6)))
  expect_identical(as_array(b$y), (as.integer(ref$labels[c(2, 7)]) + 1L) * 10L)
})

test_that("missing and corrupt files are clear errors; download = TRUE is refused", {
  dir <- tempfile()
  on.exit(unlink(dir, recursive = TRUE))
  expect_error(mnist_dataset(dir), file.path(dir, "train-images-idx3-ubyte.gz"), fixed = TRUE,
               class = "rcuda_file_error")
  expect_error(fashion_mnist_dataset(dir), "dataset-fashion-mnist", class = "rcuda_file_error")
  expect_error(mnist_dataset(dir, download = TRUE), "never downloads", class = "rcuda_value_error")
  make_idx_folder(dir)
  images <- file.path(dir, "train-images-idx3-ubyte.gz")
  con <- gzfile(images, "rb")
  bytes <- readBin(con, "raw", 1000)
  close(con)
  con <- gzfile(images, "wb")
  writeBin(bytes[1:50], con)  # the header and part of the pixels
  close(con)
  expect_error(mnist_dataset(dir), "truncated", class = "rcuda_file_error")
  con <- gzfile(images, "wb")
  writeBin(as.raw(c(1, 2, 8, 3)), con)
  close(con)
  expect_error(mnist_dataset(dir), "not an idx file", class = "rcuda_file_error")
  write_idx(images, 1:2, c(1, 1, 2))
  expect_error(mnist_dataset(dir), "do not match", class = "rcuda_file_error")
})

test_that("fashion_mnist_dataset's folder comes from the option, then RCUDA_FASHION_MNIST", {
  dir <- tempfile()
  on.exit(unlink(dir, recursive = TRUE))
  ref <- make_idx_folder(dir, n = 3)
  old_env <- Sys.getenv("RCUDA_FASHION_MNIST", unset = NA)
  old_opt <- options(rcuda.fashion_mnist_root = NULL)
  on.exit({
    options(old_opt)
    if (is.na(old_env)) Sys.unsetenv("RCUDA_FASHION_MNIST") else Sys.setenv(RCUDA_FASHION_MNIST = old_env)
  }, add = TRUE)
  Sys.setenv(RCUDA_FASHION_MNIST = dir)
  ds <- fashion_mnist_dataset()
  expect_s3_class(ds, c("fashion_mnist", "mnist", "dataset"))
  expect_equal(length(ds), 3)
  expect_identical(ds$classes[1], "T-shirt/top")
  Sys.setenv(RCUDA_FASHION_MNIST = file.path(dir, "elsewhere"))
  options(rcuda.fashion_mnist_root = dir)
  expect_equal(length(fashion_mnist_dataset()), 3)
})

test_that("Debian's Fashion-MNIST files read as their bytes", {
  root <- "/usr/share/datasets/fashion-mnist"
  if (!file.exists(file.path(root, "t10k-images-idx3-ubyte.gz"))) {
    skip("Debian's dataset-fashion-mnist is not installed")
  }
  test <- fashion_mnist_dataset(root, train = FALSE)
  expect_equal(length(test), 10000)
  con <- gzfile(file.path(root, "t10k-images-idx3-ubyte.gz"), "rb")
  header <- readBin(con, "integer", 4, size = 4, endian = "big")
  pixels <- as.integer(readBin(con, "raw", 10000 * 784))
  close(con)
  expect_identical(header, c(2051L, 10000L, 28L, 28L))
  con <- gzfile(file.path(root, "t10k-labels-idx1-ubyte.gz"), "rb")
  readBin(con, "integer", 2, size = 4, endian = "big")
  labels <- as.integer(readBin(con, "raw", 10000))
  close(con)
  expect_identical(test$targets, labels + 1L)
  for (k in c(1, 5000, 10000)) {
    expected <- matrix(pixels[(k - 1) * 784 + 1:784], 28, 28, byrow = TRUE)
    expect_identical(test[[k]]$x[1, , ], expected, info = k)
  }
  train <- fashion_mnist_dataset(root, transform = transform_to_tensor)
  expect_equal(length(train), 60000)
  expect_identical(train$data$shape, c(60000L, 28L, 28L))
  b <- train[c(1, 60000)]
  expect_identical(b$x$shape, c(2L, 1L, 28L, 28L))
  expect_true(all(as_array(b$x) >= 0 & as_array(b$x) <= 1))
})

test_that("transform_to_tensor follows torchvision's layout and scaling rules", {
  hw <- matrix(sample(0:255, 12, replace = TRUE), 3, 4)
  x <- transform_to_tensor(hw)
  expect_identical(x$shape, c(1L, 3L, 4L))
  expect_equal(as_array(x)[1, , ], hw / 255, tolerance = 1e-7)
  hwc <- array(sample(0:255, 6 * 5 * 3, replace = TRUE), c(6, 5, 3))
  x <- transform_to_tensor(hwc)
  expect_identical(x$shape, c(3L, 6L, 5L))
  expect_equal(as_array(x), aperm(hwc, c(3, 1, 2)) / 255, tolerance = 1e-7)
  chw <- array(sample(0:255, 2 * 7 * 6, replace = TRUE), c(2, 7, 6))  # C <= 4, W > 4: kept
  expect_equal(as_array(transform_to_tensor(chw)), chw / 255, tolerance = 1e-7)
  raw_img <- array(as.raw(hw), dim(hw))
  expect_equal(as_array(transform_to_tensor(raw_img))[1, , ], hw / 255, tolerance = 1e-7)
  dbl <- matrix(runif(12), 3, 4)  # doubles are not scaled
  expect_equal(as_array(transform_to_tensor(dbl))[1, , ], dbl, tolerance = 1e-7)
  batch <- array(sample(0:255, 2 * 1 * 3 * 3, replace = TRUE), c(2, 1, 3, 3))
  expect_identical(transform_to_tensor(batch)$shape, c(2L, 1L, 3L, 3L))
  expect_error(transform_to_tensor(1:5), "image array", class = "rcuda_value_error")
  expect_error(transform_to_tensor(array(0L, rep(2, 5))), "5 dims", class = "rcuda_value_error")
})
