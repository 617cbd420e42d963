# Layers: modules that own parameters (or none) and call one nnf_* function in forward.
#
# Note [Adding a layer]
# ~~~~~~~~~~~~~~~~~~~~~
# A layer is an nn_module whose initialize makes its parameters with
# nn_parameter(torch_empty(...)) and fills them in reset_parameters() with nn_init_* (as
# PyTorch's defaults), and whose forward is one nnf_* call; the nnf_* function is one .Call into
# r/src/nn.cpp over the engine's rcuda::nn function. So nn_conv2d, once the engine has
# nn::conv2d, is an entry point in nn.cpp, an nnf_conv2d line in nnf.R and a module here of the
# shape of nn_linear's.

#' @export
nn_identity <- nn_module(
  "nn_identity",
  initialize = function(...) {},
  forward = function(input) input
)

#' @export
nn_linear <- nn_module(
  "nn_linear",
  initialize = function(in_features, out_features, bias = TRUE) {
    self$in_features <- in_features
    self$out_features <- out_features
    self$weight <- nn_parameter(torch_empty(out_features, in_features))
    if (isTRUE(bias)) self$bias <- nn_parameter(torch_empty(out_features)) else self$bias <- NULL
    self$reset_parameters()
  },
  # PyTorch's: kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)), for the weight
  # and the same bound for the bias.
  reset_parameters = function() {
    nn_init_kaiming_uniform_(self$weight, a = sqrt(5))
    if (!is.null(self$bias) && self$in_features > 0) {
      bound <- 1 / sqrt(self$in_features)
      nn_init_uniform_(self$bias, -bound, bound)
    }
  },
  forward = function(input) .Call(rc_nn_linear, input, self$weight, self$bias)
)

#' @export
nn_flatten <- nn_module(
  "nn_flatten",
  initialize = function(start_dim = 2, end_dim = -1) {
    self$start_dim <- start_dim
    self$end_dim <- end_dim
  },
  forward = function(input) .Call(rc_flatten, input, self$start_dim, self$end_dim)
)

#' @export
nn_unflatten <- nn_module(
  "nn_unflatten",
  initialize = function(dim, unflattened_size) {
    self$dim <- dim
    self$unflattened_size <- unlist(unflattened_size)
  },
  forward = function(input) {
    shape <- input$shape
    d <- if (self$dim < 0) length(shape) + self$dim + 1 else self$dim
    if (d < 1 || d > length(shape)) {
      index_error("nn_unflatten: dim ", self$dim, " is out of range for a ", length(shape), "-d input")
    }
    .Call(rc_reshape, "reshape", input, c(shape[seq_len(d - 1)], self$unflattened_size, shape[-seq_len(d)]))
  }
)

#' @export
nn_dropout <- nn_module(
  "nn_dropout",
  initialize = function(p = 0.5, inplace = FALSE) {
    if (!is.numeric(p) || length(p) != 1 || is.na(p) || p < 0 || p > 1) {
      value_error("nn_dropout: p must be a probability in [0, 1], got ", deparse(p)[1])
    }
    self$p <- p
    self$inplace <- inplace
  },
  forward = function(input) nnf_dropout(input, self$p, self$training, self$inplace)
)

#' @export
nn_embedding <- nn_module(
  "nn_embedding",
  initialize = function(num_embeddings, embedding_dim, padding_idx = NULL, max_norm = NULL,
                        norm_type = 2, scale_grad_by_freq = FALSE, sparse = FALSE, .weight = NULL) {
    self$num_embeddings <- num_embeddings
    self$embedding_dim <- embedding_dim
    if (!is.null(padding_idx)) {
      if (padding_idx == 0 || abs(padding_idx) > num_embeddings) {
        index_error("nn_embedding: padding_idx must be a row 1 to ", num_embeddings, " (or -1 to -",
                    num_embeddings, " from the end), got ", padding_idx)
      }
      if (padding_idx < 0) padding_idx <- num_embeddings + padding_idx + 1
    }
    self$padding_idx <- padding_idx
    self$max_norm <- max_norm
    self$norm_type <- norm_type
    self$scale_grad_by_freq <- scale_grad_by_freq
    self$sparse <- sparse
    if (is.null(.weight)) {
      self$weight <- nn_parameter(torch_empty(num_embeddings, embedding_dim))
      self$reset_parameters()
    } else {
      if (!identical(as.numeric(.weight$shape), as.numeric(c(num_embeddings, embedding_dim)))) {
        shape_error("nn_embedding: .weight of shape [", paste(.weight$shape, collapse = ", "),
                    "] does not match num_embeddings = ", num_embeddings, " and embedding_dim = ", embedding_dim)
      }
      self$weight <- nn_parameter(.weight)
    }
  },
  reset_parameters = function() {
    nn_init_normal_(self$weight)
    if (!is.null(self$padding_idx)) nn_init_zeros_(self$weight$narrow(1, self$padding_idx, 1))
  },
  forward = function(input) {
    nnf_embedding(input, self$weight, self$padding_idx, self$max_norm, self$norm_type,
                  self$scale_grad_by_freq, self$sparse)
  }
)

#' @export
nn_layer_norm <- nn_module(
  "nn_layer_norm",
  initialize = function(normalized_shape, eps = 1e-05, elementwise_affine = TRUE) {
    self$normalized_shape <- unlist(normalized_shape)
    self$eps <- eps
    self$elementwise_affine <- elementwise_affine
    if (isTRUE(elementwise_affine)) {
      self$weight <- nn_parameter(torch_empty(self$normalized_shape))
      self$bias <- nn_parameter(torch_empty(self$normalized_shape))
    } else {
      self$weight <- NULL
      self$bias <- NULL
    }
    self$reset_parameters()
  },
  reset_parameters = function() {
    if (isTRUE(self$elementwise_affine)) {
      nn_init_ones_(self$weight)
      nn_init_zeros_(self$bias)
    }
  },
  forward = function(input) {
    .Call(rc_nn_layer_norm, input, self$normalized_shape, self$weight, self$bias, self$eps)
  }
)
