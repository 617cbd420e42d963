# Devices: torch_device("cuda:0"), torch_device("cuda", 1), torch_device("cpu").
# Indices are 0-based, as in torch for R.
#
# torch_device("mps") makes a device object too, as scripts written for torch for R name it;
# rcuda places no tensor on it, and a tensor asked for on it is an error naming the device
# (device_string()). torch_device("meta") holds meta tensors, which live in R and never reach
# the engine (Note [Meta tensors] in meta-tensors.R): device_string() refuses it as well, and the
# creation functions that make meta tensors ask meta_requested() first.

# Device types that name a device object but hold no engine tensors.
unplaceable_device_types <- c("mps", "meta")

#' @export
torch_device <- function(type, index = NULL) {
  if (is_device(type)) return(type)
  if (!is.character(type) || length(type) != 1) {
    device_error("torch_device: type must be a string such as \"cpu\" or \"cuda:0\"")
  }
  parts <- strsplit(type, ":", fixed = TRUE)[[1]]
  if (length(parts) == 2) {
    if (!is.null(index)) value_error("torch_device: index given twice (in \"", type, "\" and as index)")
    index <- suppressWarnings(as.integer(parts[2]))
    if (is.na(index)) device_error("torch_device: cannot parse device \"", type, "\"")
  }
  if (!parts[1] %in% c("cpu", "cuda", unplaceable_device_types)) {
    device_error("torch_device: unknown device type \"", parts[1],
                 "\" (expected \"cpu\", \"cuda\" or \"meta\"; \"mps\" names a device rcuda places no tensors on)")
  }
  if (!is.null(index)) {
    if (!is.numeric(index) || length(index) != 1 || is.na(index) || index < 0 || index != trunc(index)) {
      device_error("torch_device: index must be a whole number of at least 0, got ", deparse(index, nlines = 1)[1])
    }
    if (parts[1] == "cpu" && index != 0) device_error("torch_device: the cpu device index must be 0, got ", index)
  }
  # (torch_device second: scripts that check inherits(x, "torch_device") see one)
  structure(list(type = parts[1], index = if (is.null(index)) NULL else as.integer(index)),
            class = c("rcuda_device", "torch_device"))
}

# `$` gives type and index (NULL when none was given, as torch for R); any other name is an
# error, not NULL. length() is 1, as for torch for R's device object.
#' @export
`$.rcuda_device` <- function(x, name) {
  if (!name %in% c("type", "index")) value_error("torch_device has no field '", name, "' (it has: type, index)")
  .subset2(x, name)
}

#' @export
length.rcuda_device <- function(x) 1L

is_device <- function(x) inherits(x, "rcuda_device")

#' @export
is_meta_device <- function(x) {
  if (!is_device(x)) value_error("is_meta_device: x must be a torch_device(), got ", describe(x))
  x$type == "meta"
}

# The string the engine parses ("cpu", "cuda", "cuda:1"); NULL stays NULL.
# The engine has one CPU device: "cpu:0" and torch_device("cpu", 0) are "cpu" to it.
device_string <- function(device) {
  if (is.null(device)) return(NULL)
  if (is.character(device) && length(device) == 1) {
    if (sub(":.*", "", device) %in% unplaceable_device_types) refuse_device(device)
    return(if (device == "cpu:0") "cpu" else device)
  }
  if (!is_device(device)) device_error("device must be a torch_device() or a string, got ", class(device)[1])
  if (device$type %in% unplaceable_device_types) refuse_device(as.character(device))
  if (is.null(device$index) || device$type == "cpu") device$type else paste0(device$type, ":", device$index)
}

refuse_device <- function(name) {
  if (sub(":.*", "", name) == "meta") {
    device_error("rcuda makes tensors on device \"", name, "\" only with torch_empty(), torch_zeros(), ",
                 "torch_ones(), torch_full(), torch_rand(), torch_randn() and $to(device = \"meta\") ",
                 "(see ?meta_tensors)")
  }
  device_error("rcuda cannot place tensors on device \"", name, "\" (it has \"cpu\", \"cuda\" and \"meta\")")
}

# A device from the engine's string ("cuda:0"), as `x$device` returns it.
device_from_string <- function(s) torch_device(s)

#' @export
print.rcuda_device <- function(x, ...) {
  if (is.null(x$index)) {
    cat("torch_device(type='", x$type, "')\n", sep = "")
  } else {
    cat("torch_device(type='", x$type, "', index=", x$index, ")\n", sep = "")
  }
  invisible(x)
}

#' @export
as.character.rcuda_device <- function(x, ...) if (is.null(x$index)) x$type else paste0(x$type, ":", x$index)

#' @export
`==.rcuda_device` <- function(e1, e2) {
  # (as the engine names them, cpu:0 as cpu; mps compares too, though it holds no tensors)
  key <- function(d) if (d$type == "cpu") "cpu" else as.character(d)
  identical(key(torch_device(e1)), key(torch_device(e2)))
}

#' @export
`!=.rcuda_device` <- function(e1, e2) !(e1 == e2)
