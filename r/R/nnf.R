# The functional forms of layers and activations (torch for R's nnf_*): each is one call into
# rcuda::nn (r/src/nn.cpp), which records for autograd. Losses are in nn-loss.R.

# inplace = TRUE: the result is written back into input (recorded as an in-place copy), which
# is then returned, as torch's in-place activations.
write_back <- function(input, out, inplace) {
  if (!isTRUE(inplace)) return(out)
  same <- .Call(rc_tensor_ids, list(input, out))
  if (same[1] != same[2]) .Call(rc_assign, input, out)
  input
}

#' @export
nnf_linear <- function(input, weight, bias = NULL) .Call(rc_nn_linear, input, weight, bias)

#' @export
nnf_dropout <- function(input, p = 0.5, training = TRUE, inplace = FALSE) {
  write_back(input, .Call(rc_nn_dropout, input, p, training), inplace)
}

# indices and padding_idx are 1-based (Note [1-based classes and indices] in src/nn.cpp).
#' @export
nnf_embedding <- function(input, weight, padding_idx = NULL, max_norm = NULL, norm_type = 2,
                          scale_grad_by_freq = FALSE, sparse = FALSE) {
  if (!is.null(max_norm)) value_error("nnf_embedding: max_norm is not supported by rcuda yet")
  if (isTRUE(scale_grad_by_freq)) value_error("nnf_embedding: scale_grad_by_freq = TRUE is not supported by rcuda yet")
  # sparse = TRUE trains with the dense gradient: rcuda's optimizers take dense gradients (docs/sparse.md).
  .Call(rc_nn_embedding, input, weight, padding_idx)
}

#' @export
nnf_layer_norm <- function(input, normalized_shape, weight = NULL, bias = NULL, eps = 1e-05) {
  .Call(rc_nn_layer_norm, input, unlist(normalized_shape), weight, bias, eps)
}

# input / max(||input||_p, eps) along dim (1-based), as torch for R's (its default dim is 2).
#' @export
nnf_normalize <- function(input, p = 2, dim = 2, eps = 1e-12, out = NULL) {
  result <- input / torch_clamp(torch_norm(input, p = p, dim = dim, keepdim = TRUE), min = eps)
  if (is.null(out)) return(result)
  # out =: the result written into out, as torch's out variants (which record no gradient).
  if (!is_torch_tensor(out)) value_error("nnf_normalize: out must be a tensor, got ", describe(out))
  if (!identical(out$shape, result$shape)) {
    shape_error("nnf_normalize: out has shape [", paste(out$shape, collapse = ", "),
                "] but the result has shape [", paste(result$shape, collapse = ", "), "]")
  }
  if (autograd_is_grad_enabled() && (isTRUE(input$requires_grad) || isTRUE(out$requires_grad))) {
    value_error("nnf_normalize: out = records no gradient, and an argument requires grad; ",
                "assign the result instead")
  }
  out$copy_(result)
  out
}

# ---- activations --------------------------------------------------------------------------

#' @export
nnf_relu <- function(input, inplace = FALSE) {
  write_back(input, .Call(rc_nn_activation, "relu", input, 0, 0, NULL), inplace)
}

#' @export
nnf_leaky_relu <- function(input, negative_slope = 0.01, inplace = FALSE) {
  write_back(input, .Call(rc_nn_activation, "leaky_relu", input, negative_slope, 0, NULL), inplace)
}

#' @export
nnf_elu <- function(input, alpha = 1, inplace = FALSE) {
  write_back(input, .Call(rc_nn_activation, "elu", input, alpha, 0, NULL), inplace)
}

#' @export
nnf_gelu <- function(input, approximate = "none") {
  if (!is.character(approximate) || length(approximate) != 1) {
    value_error("nnf_gelu: approximate must be \"none\" or \"tanh\", got ", deparse(approximate)[1])
  }
  .Call(rc_nn_activation, "gelu", input, 0, 0, approximate)
}

#' @export
nnf_silu <- function(input, inplace = FALSE) {
  write_back(input, .Call(rc_nn_activation, "silu", input, 0, 0, NULL), inplace)
}

#' @export
nnf_softplus <- function(input, beta = 1, threshold = 20) {
  .Call(rc_nn_activation, "softplus", input, beta, threshold, NULL)
}

#' @export
nnf_sigmoid <- function(input) .Call(rc_nn_activation, "sigmoid", input, 0, 0, NULL)

#' @export
nnf_tanh <- function(input) .Call(rc_nn_activation, "tanh", input, 0, 0, NULL)

#' @export
nnf_relu6 <- function(input, inplace = FALSE) nnf_hardtanh(input, 0, 6, inplace)

#' @export
nnf_hardtanh <- function(input, min_val = -1, max_val = 1, inplace = FALSE) {
  write_back(input, .Call(rc_nn_activation, "hardtanh", input, min_val, max_val, NULL), inplace)
}

#' @export
nnf_softmax <- function(input, dim, dtype = NULL) {
  if (missing(dim)) value_error("nnf_softmax: dim is required (the 1-based dim that sums to 1)")
  torch_softmax(input, dim, dtype)
}

# dim = NULL picks PyTorch's legacy default: the first dim of a 0-, 1- or 3-d input, else the
# second.
#' @export
nnf_log_softmax <- function(input, dim = NULL, dtype = NULL) {
  if (is.null(dim)) dim <- if (input$dim() %in% c(0, 1, 3)) 1L else 2L
  torch_log_softmax(input, dim, dtype)
}
