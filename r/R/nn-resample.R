# Padding and interpolation (torch for R's nnf_pad, nnf_interpolate, nn_upsample) over the
# engine's (docs/resample-pad.md). `pad` lists (before, after) pairs from the last dim
# backwards, as in torch for R (PyTorch's order): c(left, right, top, bottom, front, back).


#' @export
nnf_pad <- function(input, pad, mode = "constant", value = NULL) {
  .Call(rc_nn_pad, input, pad, mode, value)
}

#' @export
nnf_interpolate <- function(input, size = NULL, scale_factor = NULL, mode = "nearest",
                            align_corners = FALSE, recompute_scale_factor = NULL) {
  .Call(rc_nn_interpolate, input, size, scale_factor, mode, align_corners,
        recompute_scale_factor)
}

# torch's nn.Upsample: the given scale_factor is used as such (recompute_scale_factor = FALSE).
#' @export
nn_upsample <- nn_module(
  "nn_upsample",
  initialize = function(size = NULL, scale_factor = NULL, mode = "nearest",
                        align_corners = NULL) {
    self$size <- size
    self$scale_factor <- scale_factor
    self$mode <- mode
    self$align_corners <- align_corners
  },
  forward = function(input) {
    .Call(rc_nn_interpolate, input, self$size, self$scale_factor, self$mode, self$align_corners,
          FALSE)
  }
)
