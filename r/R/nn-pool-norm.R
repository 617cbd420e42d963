# Pooling and normalisation layers (torch for R's nn_max_pool2d, nn_batch_norm2d, ...) over the
# engine's (docs/pooling-normalization.md). Each forward is one nnf_* call. Pooling indices are
# 1-based, as torch for R's: flat positions in each input plane, plus one.


#' @export
nnf_max_pool1d <- function(input, kernel_size, stride = NULL, padding = 0, dilation = 1,
                           ceil_mode = FALSE, return_indices = FALSE) {
  .Call(rc_nn_max_pool, 1L, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
}

#' @export
nnf_max_pool2d <- function(input, kernel_size, stride = NULL, padding = 0, dilation = 1,
                           ceil_mode = FALSE, return_indices = FALSE) {
  .Call(rc_nn_max_pool, 2L, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
}

#' @export
nnf_avg_pool1d <- function(input, kernel_size, stride = NULL, padding = 0, ceil_mode = FALSE,
                           count_include_pad = TRUE) {
  .Call(rc_nn_avg_pool, 1L, input, kernel_size, stride, padding, ceil_mode, count_include_pad, NULL)
}

#' @export
nnf_avg_pool2d <- function(input, kernel_size, stride = NULL, padding = 0, ceil_mode = FALSE,
                           count_include_pad = TRUE, divisor_override = NULL) {
  .Call(rc_nn_avg_pool, 2L, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override)
}

#' @export
nnf_adaptive_avg_pool2d <- function(input, output_size) {
  .Call(rc_nn_adaptive_pool, "avg", input, output_size, FALSE)
}

#' @export
nnf_adaptive_max_pool2d <- function(input, output_size, return_indices = FALSE) {
  .Call(rc_nn_adaptive_pool, "max", input, output_size, return_indices)
}

# Adaptive pooling over the last dim of (C, L) or (N, C, L) input, as torch's: the input seen as
# planes of one row, (N, C, 1, L), through the 2-d pooling with output (1, output_size), as
# PyTorch's own adaptive_avg_pool1d does. The 2-d indices of a one-row plane are the positions
# along L (1-based).
adaptive_pool1d <- function(kind, input, output_size, return_indices, fn) {
  if (!is_torch_tensor(input)) value_error(fn, ": input must be a tensor, got ", describe(input))
  if (!input$dim() %in% c(2L, 3L)) {
    shape_error(fn, ": expected 2-d (C, L) or 3-d (N, C, L) input, got shape [",
                paste(input$shape, collapse = ", "), "]")
  }
  convenience_number(output_size, fn, "output_size", function(v) v >= 1 && v == trunc(v),
                     "one whole number >= 1")
  planes <- input$unsqueeze(-2)
  out <- .Call(rc_nn_adaptive_pool, kind, planes, c(1L, as.integer(output_size)), return_indices)
  if (isTRUE(return_indices)) return(list(out[[1]]$squeeze(-2), out[[2]]$squeeze(-2)))
  out$squeeze(-2)
}

#' @export
nnf_adaptive_avg_pool1d <- function(input, output_size) {
  adaptive_pool1d("avg", input, output_size, FALSE, "nnf_adaptive_avg_pool1d")
}

#' @export
nnf_adaptive_max_pool1d <- function(input, output_size, return_indices = FALSE) {
  adaptive_pool1d("max", input, output_size, return_indices, "nnf_adaptive_max_pool1d")
}

#' @export
nnf_batch_norm <- function(input, running_mean, running_var, weight = NULL, bias = NULL,
                           training = FALSE, momentum = 0.1, eps = 1e-5) {
  .Call(rc_nn_batch_norm, input, running_mean, running_var, weight, bias, training, momentum, eps)
}

#' @export
nnf_group_norm <- function(input, num_groups, weight = NULL, bias = NULL, eps = 1e-5) {
  .Call(rc_nn_group_norm, input, num_groups, weight, bias, eps)
}

#' @export
nnf_instance_norm <- function(input, running_mean = NULL, running_var = NULL, weight = NULL,
                              bias = NULL, use_input_stats = TRUE, momentum = 0.1, eps = 1e-5) {
  .Call(rc_nn_instance_norm, input, running_mean, running_var, weight, bias, use_input_stats,
        momentum, eps)
}

# ---- modules --------------------------------------------------------------------------------

pool_module <- function(classname, dims, max) {
  nn_module(
    classname,
    initialize = if (max) {
      function(kernel_size, stride = NULL, padding = 0, dilation = 1, return_indices = FALSE,
               ceil_mode = FALSE) {
        self$kernel_size <- kernel_size
        self$stride <- if (is.null(stride)) kernel_size else stride
        self$padding <- padding
        self$dilation <- dilation
        self$return_indices <- return_indices
        self$ceil_mode <- ceil_mode
      }
    } else {
      function(kernel_size, stride = NULL, padding = 0, ceil_mode = FALSE, count_include_pad = TRUE,
               divisor_override = NULL) {
        self$kernel_size <- kernel_size
        self$stride <- if (is.null(stride)) kernel_size else stride
        self$padding <- padding
        self$ceil_mode <- ceil_mode
        self$count_include_pad <- count_include_pad
        self$divisor_override <- divisor_override
      }
    },
    forward = if (max) {
      function(input) {
        .Call(rc_nn_max_pool, dims, input, self$kernel_size, self$stride, self$padding,
              self$dilation, self$ceil_mode, self$return_indices)
      }
    } else {
      function(input) {
        .Call(rc_nn_avg_pool, dims, input, self$kernel_size, self$stride, self$padding,
              self$ceil_mode, self$count_include_pad, self$divisor_override)
      }
    }
  )
}

#' @export
nn_max_pool1d <- pool_module("nn_max_pool1d", 1L, TRUE)
#' @export
nn_max_pool2d <- pool_module("nn_max_pool2d", 2L, TRUE)
#' @export
nn_avg_pool1d <- pool_module("nn_avg_pool1d", 1L, FALSE)
#' @export
nn_avg_pool2d <- pool_module("nn_avg_pool2d", 2L, FALSE)

#' @export
nn_adaptive_avg_pool1d <- nn_module(
  "nn_adaptive_avg_pool1d",
  initialize = function(output_size) self$output_size <- output_size,
  forward = function(input) nnf_adaptive_avg_pool1d(input, self$output_size)
)

#' @export
nn_adaptive_max_pool1d <- nn_module(
  "nn_adaptive_max_pool1d",
  initialize = function(output_size, return_indices = FALSE) {
    self$output_size <- output_size
    self$return_indices <- return_indices
  },
  forward = function(input) nnf_adaptive_max_pool1d(input, self$output_size, self$return_indices)
)

#' @export
nn_adaptive_avg_pool2d <- nn_module(
  "nn_adaptive_avg_pool2d",
  initialize = function(output_size) self$output_size <- output_size,
  forward = function(input) .Call(rc_nn_adaptive_pool, "avg", input, self$output_size, FALSE)
)

#' @export
nn_adaptive_max_pool2d <- nn_module(
  "nn_adaptive_max_pool2d",
  initialize = function(output_size, return_indices = FALSE) {
    self$output_size <- output_size
    self$return_indices <- return_indices
  },
  forward = function(input) {
    .Call(rc_nn_adaptive_pool, "max", input, self$output_size, self$return_indices)
  }
)

# torch's _BatchNorm: weight ones and bias zeros (affine), running_mean zeros, running_var ones
# and num_batches_tracked 0 as buffers (track_running_stats). Training normalises with the batch
# statistics and updates the running ones; eval uses the running ones.
nn_batch_norm_ <- nn_module(
  "nn_batch_norm_",
  initialize = function(num_features, eps = 1e-5, momentum = 0.1, affine = TRUE,
                        track_running_stats = TRUE) {
    if (!is.numeric(momentum) || length(momentum) != 1) {
      value_error("nn_batch_norm: momentum must be a number (a cumulative average, NULL, is not supported)")
    }
    self$num_features <- num_features
    self$eps <- eps
    self$momentum <- momentum
    self$affine <- affine
    self$track_running_stats <- track_running_stats
    if (isTRUE(affine)) {
      self$weight <- nn_parameter(torch_ones(num_features))
      self$bias <- nn_parameter(torch_zeros(num_features))
    } else {
      self$weight <- NULL
      self$bias <- NULL
    }
    if (isTRUE(track_running_stats)) {
      self$running_mean <- nn_buffer(torch_zeros(num_features))
      self$running_var <- nn_buffer(torch_ones(num_features))
      self$num_batches_tracked <- nn_buffer(torch_tensor(0L, dtype = torch_long()))
    } else {
      self$running_mean <- NULL
      self$running_var <- NULL
      self$num_batches_tracked <- NULL
    }
  },
  check_input_dim = function(input) {},
  forward = function(input) {
    self$check_input_dim(input)
    training <- self$training || is.null(self$running_mean)
    if (self$training && !is.null(self$num_batches_tracked)) {
      with_no_grad(self$num_batches_tracked$copy_(self$num_batches_tracked + 1L))
    }
    .Call(rc_nn_batch_norm, input, self$running_mean, self$running_var, self$weight, self$bias,
          training, self$momentum, self$eps)
  }
)

#' @export
nn_batch_norm1d <- nn_module(
  "nn_batch_norm1d",
  inherit = nn_batch_norm_,
  check_input_dim = function(input) {
    if (!input$dim() %in% c(2, 3)) {
      value_error("nn_batch_norm1d: expected a 2-D or 3-D input, got ", input$dim(), " dims")
    }
  }
)

#' @export
nn_batch_norm2d <- nn_module(
  "nn_batch_norm2d",
  inherit = nn_batch_norm_,
  check_input_dim = function(input) {
    if (input$dim() != 4) value_error("nn_batch_norm2d: expected a 4-D input, got ", input$dim(), " dims")
  }
)

#' @export
nn_group_norm <- nn_module(
  "nn_group_norm",
  initialize = function(num_groups, num_channels, eps = 1e-5, affine = TRUE) {
    if (num_channels %% num_groups != 0) {
      value_error("nn_group_norm: num_channels (", num_channels, ") must be divisible by num_groups (",
                  num_groups, ")")
    }
    self$num_groups <- num_groups
    self$num_channels <- num_channels
    self$eps <- eps
    if (isTRUE(affine)) {
      self$weight <- nn_parameter(torch_ones(num_channels))
      self$bias <- nn_parameter(torch_zeros(num_channels))
    } else {
      self$weight <- NULL
      self$bias <- NULL
    }
  },
  forward = function(input) .Call(rc_nn_group_norm, input, self$num_groups, self$weight, self$bias, self$eps)
)

# ---- power-average pooling ------------------------------------------------------------------

# torch for R's nnf_lp_pool1d / nnf_lp_pool2d, as PyTorch composes them: the window's sum of
# x^p (average pooling times the window's size) to the power 1/p, with the sign of the average
# kept and negative averages clipped to 0 first, so that p = 1 sums and a large p nears the max.
lp_pool <- function(fn, dims, input, norm_type, kernel_size, stride, ceil_mode) {
  input <- extra_tensor(input, fn, "input")
  p <- number_arg(norm_type, fn, "norm_type")
  if (p == 0) value_error(fn, ": norm_type must be nonzero")
  kernel <- conv_sizes("kernel_size", kernel_size, dims, fn)
  pool <- if (dims == 1) nnf_avg_pool1d else nnf_avg_pool2d
  out <- pool(input$pow(p), kernel_size, stride, 0, ceil_mode)
  (torch_sign(out) * nnf_relu(torch_abs(out)))$mul(prod(kernel))$pow(1 / p)
}

#' @export
nnf_lp_pool1d <- function(input, norm_type, kernel_size, stride = NULL, ceil_mode = FALSE) {
  lp_pool("nnf_lp_pool1d", 1L, input, norm_type, kernel_size, stride, ceil_mode)
}

#' @export
nnf_lp_pool2d <- function(input, norm_type, kernel_size, stride = NULL, ceil_mode = FALSE) {
  lp_pool("nnf_lp_pool2d", 2L, input, norm_type, kernel_size, stride, ceil_mode)
}

lp_pool_module <- function(classname, dims) {
  nn_module(
    classname,
    initialize = function(norm_type, kernel_size, stride = NULL, ceil_mode = FALSE) {
      self$norm_type <- norm_type
      self$kernel_size <- kernel_size
      self$stride <- stride
      self$ceil_mode <- ceil_mode
    },
    forward = function(input) {
      lp_pool(paste0("nnf_lp_pool", dims, "d"), dims, input, self$norm_type, self$kernel_size,
              self$stride, self$ceil_mode)
    }
  )
}

#' @export
nn_lp_pool1d <- lp_pool_module("nn_lp_pool1d", 1L)
#' @export
nn_lp_pool2d <- lp_pool_module("nn_lp_pool2d", 2L)
