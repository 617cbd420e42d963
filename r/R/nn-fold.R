# nnf_unfold() (im2col) and nnf_fold() (col2im), with nn_unfold() and nn_fold(), as torch for
# R's: composed in R from one index_select (unfold) or one index_add (fold) over the padded
# input's flattened spatial positions, so they record autograd and run on every device with no
# kernel of their own. fold is unfold's adjoint: overlapping patches are summed.
#
# Shapes: unfold takes [N, C, H, W] (or unbatched [C, H, W]) and gives [N, C * kh * kw, L],
# L the number of patch positions; fold takes [N, C * kh * kw, L] (or [C * kh * kw, L]) and
# output_size (H, W) and gives [N, C, H, W]. Patch entries are ordered channel first, then
# kernel row, then kernel column, as PyTorch's.

fold_pair <- function(x, fn, arg, minimum) {
  if (!is.numeric(x) || !length(x) %in% 1:2 || anyNA(x) || any(x != trunc(x)) || any(x < minimum)) {
    value_error(fn, ": ", arg, " must be one or two whole numbers of at least ", minimum,
                ", got ", deparse(x, nlines = 1)[1])
  }
  as.integer(rep_len(x, 2))
}

# kernel_size, dilation, padding and stride as pairs, checked.
fold_args <- function(fn, kernel_size, dilation, padding, stride) {
  list(kernel = fold_pair(kernel_size, fn, "kernel_size", 1),
       dilation = fold_pair(dilation, fn, "dilation", 1),
       padding = fold_pair(padding, fn, "padding", 0),
       stride = fold_pair(stride, fn, "stride", 1))
}

# The padded spatial positions each patch entry reads, as a [kh * kw * L] index into the
# flattened [Hp * Wp] plane (kernel offsets outer, patch positions inner), with L and Hp, Wp.
fold_positions <- function(fn, size, a, device) {
  kernel <- a$kernel
  dilation <- a$dilation
  padding <- a$padding
  stride <- a$stride
  padded <- size + 2L * padding
  extent <- dilation * (kernel - 1L) + 1L
  if (any(padded < extent)) {
    value_error(fn, ": the kernel's extent (", paste(extent, collapse = " x "), ") exceeds the ",
                "padded input (", paste(padded, collapse = " x "), ")")
  }
  blocks <- (padded - extent) %/% stride + 1L
  rows <- outer((seq_len(blocks[1]) - 1L) * stride[1], (seq_len(kernel[1]) - 1L) * dilation[1], "+")
  cols <- outer((seq_len(blocks[2]) - 1L) * stride[2], (seq_len(kernel[2]) - 1L) * dilation[2], "+")
  # position[oh, ow, ki, kj] = rows[oh, ki] * Wp + cols[ow, kj]; ordered (ki, kj, oh, ow).
  index <- integer(0)
  for (ki in seq_len(kernel[1])) for (kj in seq_len(kernel[2])) {
    index <- c(index, as.vector(t(outer(rows[, ki] * padded[2], cols[, kj], "+"))))
  }
  list(index = torch_tensor(index, dtype = torch_long(), device = device) + 1L,
       blocks = blocks, padded = padded)
}

#' @export
nnf_unfold <- function(input, kernel_size, dilation = 1, padding = 0, stride = 1) {
  fn <- "nnf_unfold"
  input <- extra_tensor(input, fn, "input")
  if (!input$dim() %in% 3:4) {
    value_error(fn, ": Expected 3D or 4D (batch mode) input, got a ", input$dim(), "D tensor")
  }
  batched <- input$dim() == 4
  x <- if (batched) input else input$unsqueeze(1)
  a <- fold_args(fn, kernel_size, dilation, padding, stride)
  n <- x$size(1)
  channels <- x$size(2)
  p <- fold_positions(fn, c(x$size(3), x$size(4)), a, x$device)
  pad <- a$padding
  if (any(pad > 0)) x <- nnf_pad(x, c(pad[2], pad[2], pad[1], pad[1]))
  patches <- x$flatten(start_dim = 3)$index_select(3, p$index)  # [N, C, kh * kw * L]
  out <- patches$reshape(c(n, channels * prod(a$kernel), prod(p$blocks)))
  if (batched) out else out$squeeze(1)
}

#' @export
nnf_fold <- function(input, output_size, kernel_size, dilation = 1, padding = 0, stride = 1) {
  fn <- "nnf_fold"
  input <- extra_tensor(input, fn, "input")
  if (!input$dim() %in% 2:3) {
    value_error(fn, ": Expected 2D or 3D (batch mode) input, got a ", input$dim(), "D tensor")
  }
  batched <- input$dim() == 3
  x <- if (batched) input else input$unsqueeze(1)
  size <- fold_pair(output_size, fn, "output_size", 1)
  a <- fold_args(fn, kernel_size, dilation, padding, stride)
  p <- fold_positions(fn, size, a, x$device)
  taps <- prod(a$kernel)
  if (x$size(2) %% taps != 0) {
    value_error(fn, ": input's size in dim 2 (", x$size(2), ") must be divisible by the ",
                "product of kernel_size (", taps, ")")
  }
  if (x$size(3) != prod(p$blocks)) {
    value_error(fn, ": input has ", x$size(3), " blocks in dim 3, but output_size, kernel_size, ",
                "dilation, padding and stride give ", prod(p$blocks))
  }
  n <- x$size(1)
  channels <- x$size(2) %/% taps
  patches <- x$reshape(c(n, channels, taps * prod(p$blocks)))
  plane <- torch_zeros(n, channels, prod(p$padded), dtype = x$dtype, device = x$device)
  out <- plane$index_add(3, p$index, patches)$reshape(c(n, channels, p$padded[1], p$padded[2]))
  pad <- a$padding
  if (any(pad > 0)) out <- out$narrow(3, pad[1] + 1, size[1])$narrow(4, pad[2] + 1, size[2])
  if (batched) out else out$squeeze(1)
}

#' @export
nn_unfold <- nn_module(
  "nn_unfold",
  initialize = function(kernel_size, dilation = 1, padding = 0, stride = 1) {
    self$kernel_size <- kernel_size
    self$dilation <- dilation
    self$padding <- padding
    self$stride <- stride
  },
  forward = function(input) nnf_unfold(input, self$kernel_size, self$dilation, self$padding, self$stride)
)

#' @export
nn_fold <- nn_module(
  "nn_fold",
  initialize = function(output_size, kernel_size, dilation = 1, padding = 0, stride = 1) {
    self$output_size <- output_size
    self$kernel_size <- kernel_size
    self$dilation <- dilation
    self$padding <- padding
    self$stride <- stride
  },
  forward = function(input) {
    nnf_fold(input, self$output_size, self$kernel_size, self$dilation, self$padding, self$stride)
  }
)
