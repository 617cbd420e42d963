# fp8 linear layers (the engine's nn::fp8_linear; docs/mixed-precision.md): nn_linear's math with
# the forward product and both backward products in float8 on GPUs of compute capability 8.9 or
# newer (the CPU runs the same arithmetic, slowly, as a reference). Beyond torch for R, which has
# no fp8 layer.

#' @export
nn_fp8_linear <- nn_module(
  "nn_fp8_linear",
  initialize = function(in_features, out_features, bias = TRUE, amax_history_len = 1024,
                        margin = 0) {
    for (arg in c("in_features", "out_features")) {
      v <- get(arg)
      if (!is.numeric(v) || length(v) != 1 || is.na(v) || v <= 0 || v %% 16 != 0) {
        value_error("nn_fp8_linear: ", arg, " must be a positive multiple of 16 (cuBLASLt's fp8 ",
                    "kernels), got ", deparse(v)[1])
      }
    }
    if (!is.numeric(amax_history_len) || length(amax_history_len) != 1 || amax_history_len < 1) {
      value_error("nn_fp8_linear: amax_history_len must be at least 1, got ", deparse(amax_history_len)[1])
    }
    if (!is.numeric(margin) || length(margin) != 1 || margin < 0 || margin %% 1 != 0) {
      value_error("nn_fp8_linear: margin must be a non-negative integer, got ", deparse(margin)[1])
    }
    self$in_features <- in_features
    self$out_features <- out_features
    self$margin <- as.integer(margin)
    self$weight <- nn_parameter(torch_empty(out_features, in_features))
    if (isTRUE(bias)) self$bias <- nn_parameter(torch_empty(out_features)) else self$bias <- NULL
    # Delayed scaling's state (Note [Delayed scaling] in src/nn/fp8_linear.cpp): rows input,
    # weight, output gradient. Buffers, so that $to() moves them and state_dict() saves them.
    self$amax_history <- nn_buffer(torch_zeros(3, amax_history_len))
    self$scale <- nn_buffer(torch_ones(3))
    nn_init_kaiming_uniform_(self$weight, a = sqrt(5))
    if (!is.null(self$bias)) {
      bound <- 1 / sqrt(in_features)
      nn_init_uniform_(self$bias, -bound, bound)
    }
  },
  forward = function(input) {
    # $to(dtype =) converts floating buffers; the scaling state stays float32.
    if (self$amax_history$dtype != torch_float32()) {
      self$amax_history <- self$amax_history$to(dtype = torch_float32())$contiguous()
      self$scale <- self$scale$to(dtype = torch_float32())$contiguous()
    }
    out <- .Call(rc_nn_fp8_linear, input, self$weight, self$bias, self$amax_history,
                 self$scale, self$margin)
    self$scale <- out[[2]]
    out[[1]]
  }
)
