# Channel dropout (nnf_dropout2d, nn_dropout2d): whole channels zeroed, composed from the
# engine's ops so that it records autograd and runs on every device.

# As torch for R (PyTorch's feature dropout): one draw per (sample, channel), i.e. over dims 1
# and 2, broadcast over the rest, so whole channels are zeroed; kept ones scale by 1 / (1 - p).
#' @export
nnf_dropout2d <- function(input, p = 0.5, training = TRUE, inplace = FALSE) {
  act_tensor(input, "nnf_dropout2d")
  act_number(p, "nnf_dropout2d", "p")
  if (p < 0 || p > 1) value_error("nnf_dropout2d: p must be a probability in [0, 1], got ", p)
  d <- input$dim()
  if (!d %in% c(3, 4)) {
    warning("nnf_dropout2d: received a ", d, "-d input; dropout2d is for 3-d or 4-d inputs ",
            "(channels and 2 spatial dims), use nnf_dropout for others", call. = FALSE)
  }
  if (d == 3) {
    warning("nnf_dropout2d: a 3-d input is taken as (N, C, L) and whole channels of dim 2 are ",
            "dropped (channel-wise 1-d dropout), as torch for R", call. = FALSE)
  }
  if (!isTRUE(training) || p == 0 || input$numel() == 0) return(input)
  if (p == 1) return(write_back(input, input * 0, inplace))
  if (d < 2) value_error("nnf_dropout2d: input must have at least 2 dims (batch and channel), got ", d)
  shape <- input$shape
  keep <- torch_rand(c(shape[1:2], rep(1L, d - 2)), dtype = input$dtype, device = input$device) < 1 - p
  write_back(input, input * (keep$to(dtype = input$dtype) / (1 - p)), inplace)
}

#' @export
nn_dropout2d <- nn_module(
  "nn_dropout2d",
  initialize = function(p = 0.5, inplace = FALSE) {
    if (!is.numeric(p) || length(p) != 1 || is.na(p) || p < 0 || p > 1) {
      value_error("nn_dropout2d: p must be a probability in [0, 1], got ", deparse(p)[1])
    }
    self$p <- p
    self$inplace <- inplace
  },
  forward = function(input) nnf_dropout2d(input, self$p, self$training, self$inplace)
)
