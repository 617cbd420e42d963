# torch_finfo() and torch_iinfo(): the limits of floating and integer dtypes, as torch for R's
# (torch.finfo / torch.iinfo). The values are the IEEE formats' (float16, bfloat16, float32,
# float64) and the integer types' two's-complement ranges.

finfo_table <- list(
  float16 = list(bits = 16, eps = 2^-10, max = 65504, tiny = 2^-14, resolution = 1e-3),
  bfloat16 = list(bits = 16, eps = 2^-7, max = (2 - 2^-7) * 2^127, tiny = 2^-126,
                  resolution = 1e-2),
  float32 = list(bits = 32, eps = 2^-23, max = (2 - 2^-23) * 2^127, tiny = 2^-126,
                 resolution = 1e-6),
  float64 = list(bits = 64, eps = .Machine$double.eps, max = .Machine$double.xmax,
                 tiny = .Machine$double.xmin, resolution = 1e-15)
)

# int64's limits are 2^63 - 1 and -2^63, which a double holds as 2^63 and -2^63 (torch for R's
# numbers too).
iinfo_table <- list(
  uint8 = list(bits = 8, max = 255, min = 0),
  int8 = list(bits = 8, max = 127, min = -128),
  int16 = list(bits = 16, max = 32767, min = -32768),
  int32 = list(bits = 32, max = 2^31 - 1, min = -2^31),
  int64 = list(bits = 64, max = 2^63 - 1, min = -2^63)
)

#' @export
torch_finfo <- function(dtype = torch_float32()) {
  name <- if (is_dtype(dtype)) dtype_name(dtype) else ""
  info <- finfo_table[[name]]
  if (is.null(info)) {
    value_error("torch_finfo: dtype must be a floating dtype (torch_float16(), torch_bfloat16(), ",
                "torch_float32() or torch_float64()), got ", describe(dtype))
  }
  info$min <- -info$max
  info$smallest_normal <- info$tiny
  info$dtype <- name
  structure(info[c("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")],
            class = "torch_finfo")
}

#' @export
torch_iinfo <- function(dtype) {
  name <- if (is_dtype(dtype)) dtype_name(dtype) else ""
  info <- iinfo_table[[name]]
  if (is.null(info)) {
    value_error("torch_iinfo: dtype must be an integer dtype (torch_uint8(), torch_int8(), ",
                "torch_int16(), torch_int32() or torch_int64()), got ", describe(dtype))
  }
  info$dtype <- name
  structure(info, class = "torch_iinfo")
}

#' @export
print.torch_finfo <- function(x, ...) {
  cat("finfo(resolution=", format(x$resolution), ", min=", format(x$min), ", max=",
      format(x$max), ", eps=", format(x$eps), ", tiny=", format(x$tiny), ", dtype=", x$dtype,
      ")\n", sep = "")
  invisible(x)
}

#' @export
print.torch_iinfo <- function(x, ...) {
  cat("iinfo(min=", format(x$min, scientific = FALSE), ", max=", format(x$max, scientific = FALSE),
      ", dtype=", x$dtype, ")\n", sep = "")
  invisible(x)
}
