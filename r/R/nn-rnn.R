# Recurrent layers (torch for R's nn_rnn, nn_lstm, nn_gru) over the engine's cuDNN / oneDNN RNNs
# (docs/rnn.md). A forward is one engine call for every layer and direction (one per layer when
# dropout is on while training), recorded as one autograd node per call.

rnn_gate_count <- c(LSTM = 4, GRU = 3, RNN_TANH = 1, RNN_RELU = 1)

rnn_check_count <- function(what, value, minimum) {
  if (!is.numeric(value) || length(value) != 1 || is.na(value) || value < minimum ||
      value != round(value)) {
    value_error("nn_rnn: ", what, " must be a whole number >= ", minimum, ", got ", deparse(value)[1])
  }
  as.integer(value)
}

# Parameters are named as torch for R names them: weight_ih_l1, weight_hh_l1, bias_ih_l1,
# bias_hh_l1, and *_reverse for the second direction (layers counted from 1).
nn_rnn_base <- nn_module(
  "nn_rnn_base",
  initialize = function(mode, input_size, hidden_size, num_layers = 1, bias = TRUE,
                        batch_first = FALSE, dropout = 0, bidirectional = FALSE) {
    if (!mode %in% names(rnn_gate_count)) value_error("nn_rnn: unknown mode \"", mode, "\"")
    self$mode <- mode
    self$input_size <- rnn_check_count("input_size", input_size, 1)
    self$hidden_size <- rnn_check_count("hidden_size", hidden_size, 1)
    self$num_layers <- rnn_check_count("num_layers", num_layers, 1)
    if (!is.numeric(dropout) || length(dropout) != 1 || is.na(dropout) || dropout < 0 || dropout > 1) {
      value_error("nn_rnn: dropout must be a probability in [0, 1], got ", deparse(dropout)[1])
    }
    if (dropout > 0 && num_layers == 1) {
      warning("nn_rnn: dropout adds dropout after all but the last recurrent layer, so a ",
              "non-zero dropout expects num_layers greater than 1, but got dropout = ", dropout,
              " and num_layers = 1", call. = FALSE)
    }
    self$bias <- isTRUE(bias)
    self$batch_first <- isTRUE(batch_first)
    self$dropout <- dropout
    self$bidirectional <- isTRUE(bidirectional)
    self$proj_size <- 0
    directions <- if (self$bidirectional) 2 else 1
    gates <- rnn_gate_count[[mode]] * self$hidden_size
    names <- character()
    for (layer in seq_len(self$num_layers)) {
      layer_input <- if (layer == 1) self$input_size else self$hidden_size * directions
      for (direction in seq_len(directions)) {
        suffix <- paste0("_l", layer, if (direction == 2) "_reverse" else "")
        self[[paste0("weight_ih", suffix)]] <- nn_parameter(torch_empty(gates, layer_input))
        self[[paste0("weight_hh", suffix)]] <- nn_parameter(torch_empty(gates, self$hidden_size))
        names <- c(names, paste0(c("weight_ih", "weight_hh"), suffix))
        if (self$bias) {
          self[[paste0("bias_ih", suffix)]] <- nn_parameter(torch_empty(gates))
          self[[paste0("bias_hh", suffix)]] <- nn_parameter(torch_empty(gates))
          names <- c(names, paste0(c("bias_ih", "bias_hh"), suffix))
        }
      }
    }
    self$flat_weight_names_ <- names
    self$reset_parameters()
  },
  # Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch does.
  reset_parameters = function() {
    stdv <- 1 / sqrt(self$hidden_size)
    for (weight in self$parameters) nn_init_uniform_(weight, -stdv, stdv)
  },
  # The weights in the engine's order, looked up at each call so that $to() and
  # load_state_dict(), which replace parameters, are seen.
  flat_weights = function() lapply(self$flat_weight_names_, function(name) self[[name]]),
  forward = function(input, hx = NULL) {
    packed <- inherits(input, "PackedSequence")
    if (!packed && !is_torch_tensor(input)) {
      value_error("nn_rnn: input must be a tensor or a PackedSequence, got ", describe(input))
    }
    h0 <- hx
    c0 <- NULL
    if (self$mode == "LSTM" && !is.null(hx)) {
      if (!is.list(hx) || length(hx) != 2) {
        value_error("nn_lstm: hx must be list(h_0, c_0), got ", describe(hx))
      }
      h0 <- hx[[1]]
      c0 <- hx[[2]]
    } else if (!is.null(hx) && !is_torch_tensor(hx)) {
      value_error(if (self$mode == "GRU") "nn_gru" else "nn_rnn", ": hx must be a tensor, got ",
                  describe(hx))
    }
    if (packed) return(rnn_packed_forward(self, input, hx))  # Note [Packed sequences]
    result <- .Call(rc_nn_rnn, self$mode, input, h0, c0, self$flat_weights(), self$num_layers,
                    self$dropout, self$training, self$bidirectional, self$batch_first)
    hidden <- if (self$mode == "LSTM") list(result[[2]], result[[3]]) else result[[2]]
    list(result[[1]], hidden)
  }
)

#' Multi-layer Elman RNN with tanh or ReLU non-linearity
#'
#' h_t = tanh(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh), or relu. Input
#' `(seq_len, batch, input_size)` (`batch_first = TRUE`: `(batch, seq_len, input_size)`) or
#' unbatched `(seq_len, input_size)`; `hx` `(num_layers * num_directions, batch, hidden_size)`,
#' zeros when NULL. Returns `list(output, h_n)`.
#' @export
nn_rnn <- nn_module(
  "nn_rnn",
  inherit = nn_rnn_base,
  initialize = function(input_size, hidden_size, num_layers = 1, nonlinearity = NULL, bias = TRUE,
                        batch_first = FALSE, dropout = 0, bidirectional = FALSE, ...) {
    self$nonlinearity <- if (is.null(nonlinearity)) "tanh" else nonlinearity
    mode <- switch(self$nonlinearity, tanh = "RNN_TANH", relu = "RNN_RELU",
                   value_error("nn_rnn: nonlinearity must be \"tanh\" or \"relu\", got ",
                               deparse(self$nonlinearity)[1]))
    super$initialize(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                     bidirectional)
  }
)

#' Multi-layer long short-term memory (LSTM) RNN
#'
#' PyTorch's equations and gate order (i, f, g, o). `forward(input, hx = NULL)` with
#' `hx = list(h_0, c_0)`; returns `list(output, list(h_n, c_n))`. cuDNN on CUDA, oneDNN on the
#' CPU (float32; float64 by the engine's own loops).
#' @export
nn_lstm <- nn_module(
  "nn_lstm",
  inherit = nn_rnn_base,
  initialize = function(input_size, hidden_size, num_layers = 1, bias = TRUE, batch_first = FALSE,
                        dropout = 0, bidirectional = FALSE, ...) {
    super$initialize("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                     bidirectional)
  }
)

#' Multi-layer gated recurrent unit (GRU) RNN
#'
#' PyTorch's equations (gates r, z, n; the reset gate applied after the hidden-hidden product).
#' Returns `list(output, h_n)`.
#' @export
nn_gru <- nn_module(
  "nn_gru",
  inherit = nn_rnn_base,
  initialize = function(input_size, hidden_size, num_layers = 1, bias = TRUE, batch_first = FALSE,
                        dropout = 0, bidirectional = FALSE, ...) {
    super$initialize("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                     bidirectional)
  }
)
