# Pixel shuffles (nnf_pixel_shuffle, nnf_pixel_unshuffle and their modules): reshape and
# permute between channels and space.

act_pixel_dims <- function(input, fn) {
  act_tensor(input, fn, floating = FALSE)
  if (input$dim() < 3) value_error(fn, ": input must have 3 or more dims (*, C, H, W), got ", input$dim())
  shape <- input$shape
  d <- length(shape)
  list(batch = shape[seq_len(d - 3)], c = shape[d - 2], h = shape[d - 1], w = shape[d])
}

# (*, C r^2, H, W) -> (*, C, H r, W r): channel c r^2 + i r + j goes to row h r + i, column w r + j.
#' @export
nnf_pixel_shuffle <- function(input, upscale_factor) {
  s <- act_pixel_dims(input, "nnf_pixel_shuffle")
  r <- act_count(upscale_factor, "nnf_pixel_shuffle", "upscale_factor")
  if (s$c %% (r * r) != 0) {
    value_error("nnf_pixel_shuffle: the channel count (", s$c, ") must be divisible by upscale_factor^2 (", r * r, ")")
  }
  b <- length(s$batch)
  c_out <- s$c %/% (r * r)
  input$reshape(c(s$batch, c_out, r, r, s$h, s$w))$
    permute(c(seq_len(b), b + c(1, 4, 2, 5, 3)))$
    reshape(c(s$batch, c_out, s$h * r, s$w * r))
}

# The inverse: (*, C, H r, W r) -> (*, C r^2, H, W).
#' @export
nnf_pixel_unshuffle <- function(input, downscale_factor) {
  s <- act_pixel_dims(input, "nnf_pixel_unshuffle")
  r <- act_count(downscale_factor, "nnf_pixel_unshuffle", "downscale_factor")
  if (s$h %% r != 0 || s$w %% r != 0) {
    value_error("nnf_pixel_unshuffle: height (", s$h, ") and width (", s$w,
                ") must be divisible by downscale_factor (", r, ")")
  }
  b <- length(s$batch)
  h <- s$h %/% r
  w <- s$w %/% r
  input$reshape(c(s$batch, s$c, h, r, w, r))$
    permute(c(seq_len(b), b + c(1, 3, 5, 2, 4)))$
    reshape(c(s$batch, s$c * r * r, h, w))
}

#' @export
nn_pixel_shuffle <- nn_module(
  "nn_pixel_shuffle",
  initialize = function(upscale_factor) self$upscale_factor <- upscale_factor,
  forward = function(input) nnf_pixel_shuffle(input, self$upscale_factor)
)

#' @export
nn_pixel_unshuffle <- nn_module(
  "nn_pixel_unshuffle",
  initialize = function(downscale_factor) self$downscale_factor <- downscale_factor,
  forward = function(input) nnf_pixel_unshuffle(input, self$downscale_factor)
)
