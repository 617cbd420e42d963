# Activation modules: each forward is its nnf_* function with the module's settings.

#' @export
nn_relu <- nn_module(
  "nn_relu",
  initialize = function(inplace = FALSE) self$inplace <- inplace,
  forward = function(input) nnf_relu(input, self$inplace)
)

#' @export
nn_leaky_relu <- nn_module(
  "nn_leaky_relu",
  initialize = function(negative_slope = 0.01, inplace = FALSE) {
    self$negative_slope <- negative_slope
    self$inplace <- inplace
  },
  forward = function(input) nnf_leaky_relu(input, self$negative_slope, self$inplace)
)

#' @export
nn_elu <- nn_module(
  "nn_elu",
  initialize = function(alpha = 1, inplace = FALSE) {
    self$alpha <- alpha
    self$inplace <- inplace
  },
  forward = function(input) nnf_elu(input, self$alpha, self$inplace)
)

#' @export
nn_gelu <- nn_module(
  "nn_gelu",
  initialize = function(approximate = "none") self$approximate <- approximate,
  forward = function(input) nnf_gelu(input, self$approximate)
)

#' @export
nn_silu <- nn_module(
  "nn_silu",
  initialize = function(inplace = FALSE) self$inplace <- inplace,
  forward = function(input) nnf_silu(input, self$inplace)
)

#' @export
nn_softplus <- nn_module(
  "nn_softplus",
  initialize = function(beta = 1, threshold = 20) {
    self$beta <- beta
    self$threshold <- threshold
  },
  forward = function(input) nnf_softplus(input, self$beta, self$threshold)
)

#' @export
nn_sigmoid <- nn_module(
  "nn_sigmoid",
  initialize = function() {},
  forward = function(input) nnf_sigmoid(input)
)

#' @export
nn_tanh <- nn_module(
  "nn_tanh",
  initialize = function() {},
  forward = function(input) nnf_tanh(input)
)

# relu6: min(max(0, x), 6), hardtanh between 0 and 6 (MobileNet's activation).
#' @export
nn_relu6 <- nn_module(
  "nn_relu6",
  initialize = function(inplace = FALSE) self$inplace <- inplace,
  forward = function(input) nnf_relu6(input, self$inplace)
)

#' @export
nn_hardtanh <- nn_module(
  "nn_hardtanh",
  initialize = function(min_val = -1, max_val = 1, inplace = FALSE) {
    if (min_val > max_val) value_error("nn_hardtanh: min_val (", min_val, ") must not exceed max_val (", max_val, ")")
    self$min_val <- min_val
    self$max_val <- max_val
    self$inplace <- inplace
  },
  forward = function(input) nnf_hardtanh(input, self$min_val, self$max_val, self$inplace)
)

#' @export
nn_softmax <- nn_module(
  "nn_softmax",
  initialize = function(dim) self$dim <- dim,
  forward = function(input) nnf_softmax(input, self$dim)
)

#' @export
nn_log_softmax <- nn_module(
  "nn_log_softmax",
  initialize = function(dim) self$dim <- dim,
  forward = function(input) nnf_log_softmax(input, self$dim)
)

#' @export
nn_celu <- nn_module(
  "nn_celu",
  initialize = function(alpha = 1, inplace = FALSE) {
    self$alpha <- alpha
    self$inplace <- inplace
  },
  forward = function(input) nnf_celu(input, self$alpha, self$inplace)
)

#' @export
nn_selu <- nn_module(
  "nn_selu",
  initialize = function(inplace = FALSE) self$inplace <- inplace,
  forward = function(input) nnf_selu(input, self$inplace)
)

#' @export
nn_hardswish <- nn_module(
  "nn_hardswish",
  initialize = function() {},
  forward = function(input) nnf_hardswish(input)
)

#' @export
nn_hardsigmoid <- nn_module(
  "nn_hardsigmoid",
  initialize = function() {},
  forward = function(input) nnf_hardsigmoid(input)
)

#' @export
nn_mish <- nn_module(
  "nn_mish",
  initialize = function(inplace = FALSE) self$inplace <- inplace,
  forward = function(input) nnf_mish(input, self$inplace)
)

#' @export
nn_softsign <- nn_module(
  "nn_softsign",
  initialize = function() {},
  forward = function(input) nnf_softsign(input)
)

#' @export
nn_tanhshrink <- nn_module(
  "nn_tanhshrink",
  initialize = function() {},
  forward = function(input) nnf_tanhshrink(input)
)

#' @export
nn_softshrink <- nn_module(
  "nn_softshrink",
  initialize = function(lambd = 0.5) self$lambd <- lambd,
  forward = function(input) nnf_softshrink(input, self$lambd)
)

#' @export
nn_hardshrink <- nn_module(
  "nn_hardshrink",
  initialize = function(lambd = 0.5) self$lambd <- lambd,
  forward = function(input) nnf_hardshrink(input, self$lambd)
)

#' @export
nn_threshold <- nn_module(
  "nn_threshold",
  initialize = function(threshold, value, inplace = FALSE) {
    self$threshold <- threshold
    self$value <- value
    self$inplace <- inplace
  },
  forward = function(input) nnf_threshold(input, self$threshold, self$value, self$inplace)
)

#' @export
nn_log_sigmoid <- nn_module(
  "nn_log_sigmoid",
  initialize = function() {},
  forward = function(input) nnf_logsigmoid(input)
)

#' @export
nn_softmin <- nn_module(
  "nn_softmin",
  initialize = function(dim) self$dim <- dim,
  forward = function(input) nnf_softmin(input, self$dim)
)

#' @export
nn_glu <- nn_module(
  "nn_glu",
  initialize = function(dim = -1) self$dim <- dim,
  forward = function(input) nnf_glu(input, self$dim)
)

#' @export
nn_prelu <- nn_module(
  "nn_prelu",
  initialize = function(num_parameters = 1, init = 0.25) {
    self$num_parameters <- act_count(num_parameters, "nn_prelu", "num_parameters")
    act_number(init, "nn_prelu", "init")
    self$weight <- nn_parameter(torch_empty(self$num_parameters)$fill_(init))
  },
  forward = function(input) nnf_prelu(input, self$weight)
)

#' @export
nn_rrelu <- nn_module(
  "nn_rrelu",
  initialize = function(lower = 1 / 8, upper = 1 / 3, inplace = FALSE) {
    self$lower <- lower
    self$upper <- upper
    self$inplace <- inplace
  },
  forward = function(input) nnf_rrelu(input, self$lower, self$upper, self$training, self$inplace)
)
