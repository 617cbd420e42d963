# Convolution layers (torch for R's nn_conv1d, nn_conv2d, nn_conv_transpose1d,
# nn_conv_transpose2d) over the engine's cuDNN / oneDNN convolutions (docs/convolution.md). Each
# forward is one nnf_* call; the 1-d transposed convolution is the 2-d one over a height of 1.

#' @export
nnf_conv1d <- function(input, weight, bias = NULL, stride = 1, padding = 0, dilation = 1, groups = 1) {
  .Call(rc_nn_conv, "conv1d", input, weight, bias, stride, padding, dilation, groups, 0)
}

#' @export
nnf_conv2d <- function(input, weight, bias = NULL, stride = 1, padding = 0, dilation = 1, groups = 1) {
  .Call(rc_nn_conv, "conv2d", input, weight, bias, stride, padding, dilation, groups, 0)
}

#' @export
nnf_conv_transpose2d <- function(input, weight, bias = NULL, stride = 1, padding = 0,
                                 output_padding = 0, groups = 1, dilation = 1) {
  .Call(rc_nn_conv, "conv_transpose2d", input, weight, bias, stride, padding, dilation, groups,
        output_padding)
}

# [N, C, L] (or [C, L]) through conv_transpose2d over [N, C, 1, L], the kernel [in, out / groups,
# 1, k]: the height dim takes stride 1, no padding and kernel 1, so it stays 1.
#' @export
nnf_conv_transpose1d <- function(input, weight, bias = NULL, stride = 1, padding = 0,
                                 output_padding = 0, groups = 1, dilation = 1) {
  fn <- "nnf_conv_transpose1d"
  input <- extra_tensor(input, fn, "input")
  weight <- extra_tensor(weight, fn, "weight")
  if (!input$dim() %in% 2:3) value_error(fn, ": input must be [N, C, L] or [C, L], got ", input$dim(), " dims")
  if (weight$dim() != 3) value_error(fn, ": weight must be [in, out / groups, k], got ", weight$dim(), " dims")
  one <- function(x, what) c(1L, conv_sizes(what, x, 1L, fn))
  out <- nnf_conv_transpose2d(input$unsqueeze(-2), weight$unsqueeze(-2), bias, one(stride, "stride"),
                              c(0L, conv_sizes("padding", padding, 1L, fn)),
                              c(0L, conv_sizes("output_padding", output_padding, 1L, fn)), groups,
                              one(dilation, "dilation"))
  out$squeeze(-2)
}

# PyTorch's _output_padding: the output_padding that makes a transposed convolution's output
# `output_size` (its last `dims` entries; N and C may be included), within the stride's range.
transposed_output_padding <- function(self, input, output_size, dims) {
  if (is.null(output_size)) return(self$output_padding)
  size <- as.integer(unlist(output_size))
  size <- utils::tail(size, dims)
  if (length(size) != dims) {
    value_error("nn_conv_transpose", dims, "d: output_size must give ", dims, " spatial sizes, got ",
                deparse(output_size, nlines = 1)[1])
  }
  spatial <- utils::tail(as.integer(input$shape), dims)
  smallest <- (spatial - 1L) * self$stride - 2L * self$padding + self$dilation * (self$kernel_size - 1L) + 1L
  largest <- smallest + self$stride - 1L
  if (any(size < smallest | size > largest)) {
    value_error("nn_conv_transpose", dims, "d: requested an output size of ", paste(size, collapse = " x "),
                ", but valid sizes range from ", paste(smallest, collapse = " x "), " to ",
                paste(largest, collapse = " x "), " (for an input of ", paste(spatial, collapse = " x "), ")")
  }
  size - smallest
}

# A size given once for every spatial dim, or once per dim.
conv_sizes <- function(what, value, dims, fn = "nn_conv") {
  if (!is.numeric(value) || !(length(value) %in% c(1, dims)) || any(value != round(value))) {
    value_error(fn, ": ", what, " must be one whole number or ", dims, " of them, got ",
                deparse(value)[1])
  }
  rep_len(as.integer(value), dims)
}

# torch's _ConvNd: weight [out, in / groups, k...] (transposed: [in, out / groups, k...]),
# kaiming_uniform_(a = sqrt(5)) and a bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
nn_conv_nd <- nn_module(
  "nn_conv_nd",
  initialize = function(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                        bias, padding_mode, dims, transposed = FALSE, output_padding = 0) {
    if (!identical(padding_mode, "zeros")) {
      value_error("nn_conv", dims, "d: padding_mode \"", padding_mode, "\" is not supported (only \"zeros\")")
    }
    for (arg in c("in_channels", "out_channels", "groups")) {
      v <- get(arg)
      if (!is.numeric(v) || length(v) != 1 || v < 1 || v != round(v)) {
        value_error("nn_conv", dims, "d: ", arg, " must be a positive whole number, got ", deparse(v)[1])
      }
    }
    if (in_channels %% groups != 0 || out_channels %% groups != 0) {
      value_error("nn_conv", dims, "d: in_channels (", in_channels, ") and out_channels (", out_channels,
                  ") must be divisible by groups (", groups, ")")
    }
    self$in_channels <- in_channels
    self$out_channels <- out_channels
    self$kernel_size <- conv_sizes("kernel_size", kernel_size, dims)
    self$stride <- conv_sizes("stride", stride, dims)
    self$padding <- if (is.character(padding)) padding else conv_sizes("padding", padding, dims)
    self$dilation <- conv_sizes("dilation", dilation, dims)
    self$output_padding <- conv_sizes("output_padding", output_padding, dims)
    self$groups <- groups
    self$transposed <- transposed
    shape <- if (transposed) c(in_channels, out_channels / groups) else c(out_channels, in_channels / groups)
    self$weight <- nn_parameter(torch_empty(c(shape, self$kernel_size)))
    if (isTRUE(bias)) self$bias <- nn_parameter(torch_empty(out_channels)) else self$bias <- NULL
    self$reset_parameters()
  },
  reset_parameters = function() {
    nn_init_kaiming_uniform_(self$weight, a = sqrt(5))
    if (!is.null(self$bias)) {
      fan_in <- prod(self$weight$shape[-1])
      if (fan_in > 0) nn_init_uniform_(self$bias, -1 / sqrt(fan_in), 1 / sqrt(fan_in))
    }
  }
)

# nn_conv1d and nn_conv2d: the same module over `dims` spatial dims.
conv_module <- function(classname, dims) {
  kind <- paste0("conv", dims, "d")
  nn_module(
    classname,
    inherit = nn_conv_nd,
    initialize = function(in_channels, out_channels, kernel_size, stride = 1, padding = 0,
                          dilation = 1, groups = 1, bias = TRUE, padding_mode = "zeros") {
      super$initialize(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                       bias, padding_mode, dims = dims)
    },
    forward = function(input) {
      .Call(rc_nn_conv, kind, input, self$weight, self$bias, self$stride, self$padding,
            self$dilation, self$groups, 0)
    }
  )
}

#' @export
nn_conv1d <- conv_module("nn_conv1d", 1L)
#' @export
nn_conv2d <- conv_module("nn_conv2d", 2L)

# nn_conv_transpose1d and nn_conv_transpose2d: the same module over `dims` spatial dims.
transposed_module <- function(classname, dims) {
  nn_module(
    classname,
    inherit = nn_conv_nd,
    initialize = function(in_channels, out_channels, kernel_size, stride = 1, padding = 0,
                          output_padding = 0, groups = 1, bias = TRUE, dilation = 1,
                          padding_mode = "zeros") {
      if (is.character(padding)) value_error(classname, ": padding must be numbers, got \"", padding, "\"")
      super$initialize(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                       bias, padding_mode, dims = dims, transposed = TRUE,
                       output_padding = output_padding)
    },
    forward = function(input, output_size = NULL) {
      f <- if (dims == 1L) nnf_conv_transpose1d else nnf_conv_transpose2d
      f(input, self$weight, self$bias, self$stride, self$padding,
        transposed_output_padding(self, input, output_size, dims), self$groups, self$dilation)
    }
  )
}

#' @export
nn_conv_transpose1d <- transposed_module("nn_conv_transpose1d", 1L)
#' @export
nn_conv_transpose2d <- transposed_module("nn_conv_transpose2d", 2L)
