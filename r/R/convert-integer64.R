# bit64's integer64 vectors and int64 tensors, as torch for R: torch_tensor(<integer64>) makes
# an int64 tensor and as.integer64(<tensor>) gives one back (registered for bit64's generic when
# bit64 loads, so bit64 stays optional).
#
# Note [int64 through two halves]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An integer64 is a double vector whose 8 bytes are the integer; read as a double it is
# garbage, and R's doubles hold integers exactly only up to 2^53. So each value crosses as its
# high (signed) and low (unsigned) 32-bit halves, which doubles hold exactly, and the engine
# joins them with int64 arithmetic (high * 2^32 + low); the way back splits with a floor
# division. Every int64 value, NA_integer64_ (the smallest) included, makes the round trip.

# The halves of an integer64's values, as doubles: list(high, low).
integer64_halves <- function(x) {
  n <- length(x)
  words <- readBin(writeBin(as.vector(unclass(x)), raw(), size = 8), "integer", 2 * n, size = 4)
  words[is.na(words)] <- -2^31  # (the word 0x80000000 reads as NA_integer_)
  words <- matrix(as.numeric(words), 2)
  if (.Platform$endian == "big") words <- words[2:1, , drop = FALSE]
  list(high = words[2, ], low = ifelse(words[1, ] < 0, words[1, ] + 2^32, words[1, ]))
}

tensor_from_integer64 <- function(x, device) {
  halves <- integer64_halves(x)
  shape <- dim(x)
  as_int64 <- function(v) {
    if (!is.null(shape)) dim(v) <- shape
    .Call(rc_from_r, v, "int64", device)
  }
  as_int64(halves$high) * .Call(rc_from_r, 2^32, "int64", device) + as_int64(halves$low)
}

as_integer64_rcuda_tensor <- function(x, keep.names = FALSE, ...) {
  x <- x$to(dtype = torch_int64(), device = "cpu")
  two32 <- torch_tensor(2^32, dtype = torch_int64())
  high <- x %/% two32
  low <- as.numeric(as_array((x - high * two32)$to(dtype = torch_float64())))  # (exact: below 2^32)
  high <- as.numeric(as_array(high$to(dtype = torch_float64())))
  low <- ifelse(low >= 2^31, low - 2^32, low)
  words <- suppressWarnings(as.integer(if (.Platform$endian == "big") rbind(high, low) else rbind(low, high)))
  out <- readBin(writeBin(words, raw(), size = 4), "double", length(low), size = 8)
  shape <- dim(x)
  if (length(shape) > 1) {
    dim(out) <- shape
    return(structure(out, class = c("integer64", "array")))  # (torch for R's classes)
  }
  structure(out, class = "integer64")
}
