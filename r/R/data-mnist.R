# MNIST and Fashion-MNIST from their idx files, as torchvision's mnist_dataset and
# fashion_mnist_dataset: `ds[i]` is list(x = image, y = class) with classes 1-based. The images
# are held once, as a uint8 tensor of N x 28 x 28 (`ds$data`), and `.getbatch` gathers a batch
# with one index_select, so a dataloader makes each batch in one call.
#
# rcuda never downloads at run time: the files come from Debian's dataset-fashion-mnist package
# (/usr/share/datasets/fashion-mnist) or a folder given as `root`; gzipped or not.

idx_files <- list(
  train = c(images = "train-images-idx3-ubyte", labels = "train-labels-idx1-ubyte"),
  test = c(images = "t10k-images-idx3-ubyte", labels = "t10k-labels-idx1-ubyte")
)

#' @export
mnist_dataset <- dataset(
  name = "mnist",
  classes = c("0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
              "7 - seven", "8 - eight", "9 - nine"),
  where_to_get = paste0("rcuda does not download data sets; put the idx files (",
                        "train-images-idx3-ubyte.gz and the three others) in `root`"),
  initialize = function(root = tempdir(), train = TRUE, transform = NULL,
                        target_transform = NULL, download = FALSE) {
    caller <- paste0(class(self)[1], "_dataset")
    if (isTRUE(download)) {
      value_error(caller, ": download = TRUE is not supported: rcuda never downloads at run ",
                  "time. ", self$where_to_get)
    }
    self$root_path <- root
    self$train <- isTRUE(train)
    self$split <- if (self$train) "train" else "test"
    self$transform <- transform
    self$target_transform <- target_transform
    files <- idx_files[[self$split]]
    images <- read_idx(find_idx_file(root, files[["images"]], caller, self$where_to_get), caller)
    labels <- read_idx(find_idx_file(root, files[["labels"]], caller, self$where_to_get), caller)
    if (length(images$dims) != 3 || length(labels$dims) != 1 || images$dims[1] != labels$dims[1]) {
      file_error(caller, ": ", images$path, " and ", labels$path, " do not match (images of ",
                 paste(images$dims, collapse = " x "), ", labels of ",
                 paste(labels$dims, collapse = " x "), ")")
    }
    self$data <- .Call(rc_uint8_from_raw, images$bytes, images$dims)
    self$targets <- as.integer(labels$bytes) + 1L
    private$target_tensor <- torch_tensor(self$targets, dtype = torch_long())
  },
  .getitem = function(index) {
    if (length(index) != 1) value_error(class(self)[1], ": .getitem takes one index; use .getbatch")
    x <- byte_values(.Call(rc_index_batch, list(self$data), index, FALSE, "mnist_dataset")[[1]])
    y <- self$targets[index]
    if (!is.null(self$transform)) x <- self$transform(x)
    if (!is.null(self$target_transform)) y <- self$target_transform(y)
    list(x = x, y = y)
  },
  # What collating .getitem's samples gives, with the images gathered in one index_select: 1 x H
  # x W per image, int64 (as collated R integers) or float in [0, 1] through transform_to_tensor.
  .getbatch = function(index) {
    batch <- .Call(rc_index_batch, list(self$data, private$target_tensor), index, FALSE,
                   "mnist_dataset")
    x <- batch[[1]]$unsqueeze(2)
    if (is.null(self$transform)) {
      x <- x$to(dtype = torch_long())
    } else if (identical(self$transform, transform_to_tensor)) {
      x <- x$to(dtype = torch_float()) / 255
    } else {  # a transform of one image: applied to each
      x <- default_collate(lapply(seq_along(index), function(i) self$transform(byte_values(x[i, ..]))))
    }
    y <- if (is.null(self$target_transform)) batch[[2]] else
      default_collate(lapply(self$targets[index], self$target_transform))
    list(x = x, y = y)
  },
  .length = function() self$data$shape[1]
)

#' @export
fashion_mnist_dataset <- dataset(
  name = "fashion_mnist",
  inherit = mnist_dataset,
  classes = c("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
              "Sneaker", "Bag", "Ankle boot"),
  where_to_get = paste0("Install Debian's package dataset-fashion-mnist (apt-get install ",
                        "dataset-fashion-mnist), or set option rcuda.fashion_mnist_root or the ",
                        "environment variable RCUDA_FASHION_MNIST to a folder holding the idx files"),
  initialize = function(root = NULL, train = TRUE, transform = NULL, target_transform = NULL,
                        download = FALSE) {
    super$initialize(root %||% fashion_mnist_root(), train, transform, target_transform, download)
  }
)

# The folder fashion_mnist_dataset() reads by default: option rcuda.fashion_mnist_root, else
# $RCUDA_FASHION_MNIST, else where Debian's dataset-fashion-mnist puts the files.
fashion_mnist_root <- function() {
  root <- getOption("rcuda.fashion_mnist_root")
  if (is.null(root) || !nzchar(root)) root <- Sys.getenv("RCUDA_FASHION_MNIST")
  if (!nzchar(root)) root <- "/usr/share/datasets/fashion-mnist"
  root
}

file_error <- function(...) rcuda_abort("rcuda_file_error", paste0(...))

# root/<name>.gz or root/<name>; also torchvision's layout, root/<dataset>/raw/.
find_idx_file <- function(root, name, caller, where_to_get) {
  folders <- c(root, file.path(root, c("mnist", "fashion-mnist", "FashionMNIST"), "raw"))
  candidates <- as.vector(t(outer(folders, c(".gz", ""), function(f, ext) file.path(f, paste0(name, ext)))))
  found <- candidates[file.exists(candidates) & !dir.exists(candidates)]
  if (length(found) == 0) {
    file_error(caller, ": ", file.path(root, paste0(name, ".gz")), " not found. ", where_to_get)
  }
  found[1]
}

# An idx file (LeCun's format: two zero bytes, a type code, the number of dims, each dim as a
# big-endian int32, then the values): only unsigned bytes (type 0x08), as MNIST's. gzfile reads
# gzipped and plain files alike.
read_idx <- function(path, caller) {
  con <- gzfile(path, "rb")
  on.exit(close(con))
  header <- readBin(con, "raw", 4)
  if (length(header) < 4 || header[1] != as.raw(0) || header[2] != as.raw(0)) {
    file_error(caller, ": ", path, " is not an idx file (it does not start with two zero bytes)")
  }
  if (header[3] != as.raw(8)) {
    file_error(caller, ": ", path, " holds idx type 0x", as.character(header[3]),
               "; only unsigned bytes (0x08) are read")
  }
  ndim <- as.integer(header[4])
  dims <- readBin(con, "integer", ndim, size = 4, endian = "big")
  if (length(dims) < ndim || anyNA(dims) || any(dims < 0)) {
    file_error(caller, ": ", path, " is truncated or corrupt (its dims cannot be read)")
  }
  n <- prod(as.numeric(dims))
  bytes <- readBin(con, "raw", n)
  if (length(bytes) < n) {
    file_error(caller, ": ", path, " is truncated: it holds ", length(bytes), " of the ", n,
               " values its header announces")
  }
  list(path = path, dims = dims, bytes = bytes)
}

# ---- transform_to_tensor -------------------------------------------------------------------

#' @export
transform_to_tensor <- function(img) UseMethod("transform_to_tensor")

# torchvision's rules: an H x W array gets a channel; a 3-d array is C x H x W when its first
# dim is at most 4 and its last more than 4, else H x W x C and is permuted to C x H x W; 4-d
# arrays are batches, kept as they are. Integer (and raw) values, 0 to 255, are scaled to
# [0, 1]; doubles are taken as they are.
#' @export
transform_to_tensor.array <- function(img) {
  if (is.raw(img)) storage.mode(img) <- "integer"
  if (length(dim(img)) == 2) dim(img) <- c(dim(img), 1L)
  d <- dim(img)
  if (length(d) < 3 || length(d) > 4) {
    value_error("transform_to_tensor: expected a 2-d (grayscale), 3-d (image) or 4-d (batch) ",
                "array, got ", length(d), " dims")
  }
  channels_first <- length(d) == 4 || (d[1] <= 4 && d[3] > 4)
  scale <- is.integer(img)
  x <- torch_tensor(img, dtype = torch_float())
  if (!channels_first) x <- x$permute(c(3, 1, 2))
  if (scale) x <- x / 255
  x
}

#' @export
transform_to_tensor.matrix <- transform_to_tensor.array

#' @export
transform_to_tensor.default <- function(img) {
  value_error("transform_to_tensor: expected an image array (H x W, H x W x C or C x H x W), ",
              "got an object of class '", class(img)[1], "'")
}

# An image of the uint8 data as an R integer array (as torchvision's datasets hold their images;
# as_array() of a uint8 tensor gives raw bytes, on which R has no arithmetic).
byte_values <- function(x) {
  values <- as_array(x)
  storage.mode(values) <- "integer"
  values
}
