# Attention, as torch for R's: torch_scaled_dot_product_attention, nnf_multi_head_attention_forward,
# nn_multihead_attention and the transformer encoder built on it. All are compositions of rcuda's
# linear, bmm / matmul, softmax, dropout and masked_fill, so they record autograd and run on any
# device without kernels of their own.
#
# Note [Attention masks]
# ~~~~~~~~~~~~~~~~~~~~~~
# The two APIs read a boolean mask the opposite way round, as in PyTorch: for multi-head attention
# (attn_mask, key_padding_mask) TRUE marks a position that may NOT be attended; for
# torch_scaled_dot_product_attention TRUE marks one that may. A floating mask is added to the
# scores in both. Integer masks (torch for R's "ByteTensor") count as boolean, non-zero = TRUE.
# Masking is done with masked_fill(-Inf) before the softmax, so a row with every position masked
# gives NaN, as PyTorch's math path does.

# The scores with a mask applied; `blocked` says which way a boolean mask reads.
apply_attention_mask <- function(scores, mask, blocked) {
  if (is_floating_dtype(dtype_name(mask$dtype))) return(scores + mask)
  if (mask$dtype != torch_bool()) mask <- mask$to(dtype = torch_bool())
  if (!blocked) mask <- mask$logical_not()
  scores$masked_fill(mask, -Inf)
}

check_attention_input <- function(fn, name, x, ndim) {
  if (!is_torch_tensor(x)) value_error(fn, ": ", name, " must be a tensor, got ", describe(x))
  if (!is.null(ndim) && x$dim() != ndim) {
    value_error(fn, ": ", name, " must be ", ndim, "-d, got shape [", paste(x$shape, collapse = ", "), "]")
  }
}

#' @export
torch_scaled_dot_product_attention <- function(query, key, value, attn_mask = list(), dropout_p = 0L,
                                               is_causal = FALSE, scale = NULL, enable_gqa = FALSE) {
  fn <- "torch_scaled_dot_product_attention"
  for (name in c("query", "key", "value")) check_attention_input(fn, name, get(name), NULL)
  if (query$dim() < 2) value_error(fn, ": query must be at least 2-d, got ", query$dim(), "-d")
  if (!is.numeric(dropout_p) || length(dropout_p) != 1 || is.na(dropout_p) || dropout_p < 0 || dropout_p > 1) {
    value_error(fn, ": dropout_p must be a probability in [0, 1], got ", deparse(dropout_p)[1])
  }
  has_mask <- is_torch_tensor(attn_mask)
  if (has_mask && isTRUE(is_causal)) {
    value_error(fn, ": attn_mask should not be set when is_causal = TRUE; use one or the other")
  }
  if (isTRUE(enable_gqa)) {
    # Grouped-query attention: each key/value head serves a group of consecutive query heads.
    groups <- query$size(-3) / key$size(-3)
    if (groups != round(groups)) {
      value_error(fn, ": with enable_gqa the query's heads (", query$size(-3),
                  ") must be a multiple of the key's (", key$size(-3), ")")
    }
    key <- key$repeat_interleave(as.integer(groups), dim = -3)
    value <- value$repeat_interleave(as.integer(groups), dim = -3)
  }
  if (is.null(scale)) scale <- 1 / sqrt(query$size(-1))
  scores <- torch_matmul(query, key$transpose(-2, -1)) * scale
  if (isTRUE(is_causal)) {
    allowed <- torch_ones(query$size(-2), key$size(-2), dtype = torch_bool(), device = query$device)$tril()
    scores <- apply_attention_mask(scores, allowed, blocked = FALSE)
  } else if (has_mask) {
    scores <- apply_attention_mask(scores, attn_mask, blocked = FALSE)
  }
  weights <- nnf_softmax(scores, dim = -1)
  if (dropout_p > 0) weights <- nnf_dropout(weights, p = dropout_p, training = TRUE)
  torch_matmul(weights, value)
}

# Rows first to first + size - 1 of a packed in-projection (weight or bias), NULL stays NULL.
in_proj_rows <- function(x, first, size) if (is.null(x)) NULL else x$narrow(1, first, size)

#' @export
nnf_multi_head_attention_forward <- function(query, key, value, embed_dim_to_check, num_heads,
                                             in_proj_weight, in_proj_bias, bias_k, bias_v,
                                             add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                             training = TRUE, key_padding_mask = NULL,
                                             need_weights = TRUE, attn_mask = NULL, avg_weights = TRUE,
                                             use_separate_proj_weight = FALSE, q_proj_weight = NULL,
                                             k_proj_weight = NULL, v_proj_weight = NULL,
                                             static_k = NULL, static_v = NULL, batch_first = FALSE) {
  fn <- "nnf_multi_head_attention_forward"
  for (name in c("query", "key", "value")) check_attention_input(fn, name, get(name), 3)
  if (batch_first) {
    query <- query$transpose(1, 2)
    key <- key$transpose(1, 2)
    value <- value$transpose(1, 2)
  }
  tgt_len <- query$size(1)
  bsz <- query$size(2)
  embed_dim <- query$size(3)
  if (embed_dim != embed_dim_to_check) {
    value_error(fn, ": the query's embedding size ", embed_dim, " differs from embed_dim_to_check = ",
                embed_dim_to_check)
  }
  if (embed_dim %% num_heads != 0) {
    value_error(fn, ": embed_dim = ", embed_dim, " must be divisible by num_heads = ", num_heads)
  }
  head_dim <- embed_dim %/% num_heads

  # The packed in_proj_weight is [W_q; W_k; W_v] (and in_proj_bias likewise); projecting each input
  # by its own rows gives the same as torch for R's self-attention shortcut (one linear, chunked).
  if (!use_separate_proj_weight) {
    q_proj_weight <- in_proj_rows(in_proj_weight, 1, embed_dim)
    k_proj_weight <- in_proj_rows(in_proj_weight, embed_dim + 1, embed_dim)
    v_proj_weight <- in_proj_rows(in_proj_weight, 2 * embed_dim + 1, embed_dim)
  }
  q <- nnf_linear(query, q_proj_weight, in_proj_rows(in_proj_bias, 1, embed_dim))
  k <- nnf_linear(key, k_proj_weight, in_proj_rows(in_proj_bias, embed_dim + 1, embed_dim))
  v <- nnf_linear(value, v_proj_weight, in_proj_rows(in_proj_bias, 2 * embed_dim + 1, embed_dim))
  q <- q * head_dim^(-0.5)

  # One more key/value position (a learnt one, or zeros below): masks grow by an allowed column.
  pad_masks <- function() {
    if (!is.null(attn_mask)) attn_mask <<- nnf_pad(attn_mask, c(0, 1))
    if (!is.null(key_padding_mask)) key_padding_mask <<- nnf_pad(key_padding_mask, c(0, 1))
  }
  if (!is.null(bias_k) && !is.null(bias_v) && is.null(static_k) && is.null(static_v)) {
    k <- torch_cat(list(k, bias_k$expand(c(1, bsz, embed_dim))), dim = 1)
    v <- torch_cat(list(v, bias_v$expand(c(1, bsz, embed_dim))), dim = 1)
    pad_masks()
  }

  # [len, batch, embed] -> [batch * heads, len, head_dim]: batch-major, heads within a batch.
  split_heads <- function(x) x$reshape(c(x$size(1), bsz * num_heads, head_dim))$transpose(1, 2)
  q <- split_heads(q)
  k <- if (is.null(static_k)) split_heads(k) else static_k
  v <- if (is.null(static_v)) split_heads(v) else static_v

  if (add_zero_attn) {
    zeros <- torch_zeros(bsz * num_heads, 1, head_dim, dtype = k$dtype, device = k$device)
    k <- torch_cat(list(k, zeros), dim = 2)
    v <- torch_cat(list(v, zeros), dim = 2)
    pad_masks()
  }
  src_len <- k$size(2)

  scores <- torch_bmm(q, k$transpose(2, 3))
  if (!is.null(attn_mask)) {
    if (!attn_mask$dim() %in% c(2, 3)) {
      value_error(fn, ": attn_mask must be 2-d [L, S] or 3-d [batch * heads, L, S], got shape [",
                  paste(attn_mask$shape, collapse = ", "), "]")
    }
    scores <- apply_attention_mask(scores, attn_mask, blocked = TRUE)
  }
  if (!is.null(key_padding_mask)) {
    # [batch, S] reaches every head and query position of its batch.
    scores <- scores$view(c(bsz, num_heads, tgt_len, src_len))
    scores <- apply_attention_mask(scores, key_padding_mask$unsqueeze(2)$unsqueeze(3), blocked = TRUE)
    scores <- scores$view(c(bsz * num_heads, tgt_len, src_len))
  }
  weights <- nnf_softmax(scores, dim = -1)
  weights <- nnf_dropout(weights, p = dropout_p, training = training)

  out <- torch_bmm(weights, v)$transpose(1, 2)$reshape(c(tgt_len, bsz, embed_dim))
  out <- nnf_linear(out, out_proj_weight, out_proj_bias)
  if (batch_first) out <- out$transpose(1, 2)

  if (!need_weights) return(list(out, NULL))
  weights <- weights$view(c(bsz, num_heads, tgt_len, src_len))
  list(out, if (avg_weights) weights$sum(dim = 2) / num_heads else weights)
}

#' @export
nn_multihead_attention <- nn_module(
  "nn_multihead_attention",
  initialize = function(embed_dim, num_heads, dropout = 0., bias = TRUE, add_bias_kv = FALSE,
                        add_zero_attn = FALSE, kdim = NULL, vdim = NULL, batch_first = FALSE) {
    if (embed_dim %% num_heads != 0) {
      value_error("nn_multihead_attention: embed_dim = ", embed_dim,
                  " must be divisible by num_heads = ", num_heads)
    }
    self$embed_dim <- embed_dim
    self$kdim <- if (is.null(kdim)) embed_dim else kdim
    self$vdim <- if (is.null(vdim)) embed_dim else vdim
    self$qkv_same_embed_dim_ <- self$kdim == embed_dim && self$vdim == embed_dim
    self$num_heads <- num_heads
    self$dropout <- dropout
    self$head_dim <- embed_dim %/% num_heads
    # Parameter names (and so state dict keys) are torch for R's and PyTorch's.
    if (self$qkv_same_embed_dim_) {
      self$in_proj_weight <- nn_parameter(torch_empty(3 * embed_dim, embed_dim))
    } else {
      self$q_proj_weight <- nn_parameter(torch_empty(embed_dim, embed_dim))
      self$k_proj_weight <- nn_parameter(torch_empty(embed_dim, self$kdim))
      self$v_proj_weight <- nn_parameter(torch_empty(embed_dim, self$vdim))
    }
    if (bias) self$in_proj_bias <- nn_parameter(torch_empty(3 * embed_dim))
    self$out_proj <- nn_linear(embed_dim, embed_dim, bias = bias)
    if (add_bias_kv) {
      self$bias_k <- nn_parameter(torch_empty(1, 1, embed_dim))
      self$bias_v <- nn_parameter(torch_empty(1, 1, embed_dim))
    }
    self$add_zero_attn <- add_zero_attn
    self$batch_first <- batch_first
    self$reset_parameters()
  },
  reset_parameters = function() {
    if (self$qkv_same_embed_dim_) {
      nn_init_xavier_uniform_(self$in_proj_weight)
    } else {
      nn_init_xavier_uniform_(self$q_proj_weight)
      nn_init_xavier_uniform_(self$k_proj_weight)
      nn_init_xavier_uniform_(self$v_proj_weight)
    }
    if (!is.null(self$in_proj_bias)) {
      nn_init_constant_(self$in_proj_bias, 0)
      nn_init_constant_(self$out_proj$bias, 0)
    }
    if (!is.null(self$bias_k)) nn_init_xavier_normal_(self$bias_k)
    if (!is.null(self$bias_v)) nn_init_xavier_normal_(self$bias_v)
  },
  forward = function(query, key, value, key_padding_mask = NULL, need_weights = TRUE,
                     attn_mask = NULL, avg_weights = TRUE) {
    nnf_multi_head_attention_forward(
      query, key, value, self$embed_dim, self$num_heads,
      self$in_proj_weight, self$in_proj_bias, self$bias_k, self$bias_v, self$add_zero_attn,
      self$dropout, self$out_proj$weight, self$out_proj$bias,
      training = self$training, key_padding_mask = key_padding_mask, need_weights = need_weights,
      attn_mask = attn_mask, avg_weights = avg_weights,
      use_separate_proj_weight = !self$qkv_same_embed_dim_, q_proj_weight = self$q_proj_weight,
      k_proj_weight = self$k_proj_weight, v_proj_weight = self$v_proj_weight,
      batch_first = self$batch_first
    )
  }
)

#' @export
nn_transformer_encoder_layer <- nn_module(
  "nn_transformer_encoder_layer",
  initialize = function(d_model, nhead, dim_feedforward = 2048, dropout = 0.1, activation = "relu",
                        layer_norm_eps = 1e-5, batch_first = FALSE, norm_first = FALSE, bias = TRUE) {
    self$norm_first <- norm_first
    self$self_attn <- nn_multihead_attention(embed_dim = d_model, num_heads = nhead, dropout = dropout,
                                             bias = bias, batch_first = batch_first)
    self$linear1 <- nn_linear(d_model, dim_feedforward, bias = bias)
    self$linear2 <- nn_linear(dim_feedforward, d_model, bias = bias)
    self$dropout <- nn_dropout(dropout)   # inside the feed-forward block
    self$dropout1 <- nn_dropout(dropout)  # on the attention's output
    self$dropout2 <- nn_dropout(dropout)  # on the feed-forward's output
    # bias = FALSE drops the norms' affine parameters too, as torch for R's.
    self$norm1 <- nn_layer_norm(d_model, eps = layer_norm_eps, elementwise_affine = bias)
    self$norm2 <- nn_layer_norm(d_model, eps = layer_norm_eps, elementwise_affine = bias)
    if (is.function(activation)) {
      self$activation <- activation
      self$activation_relu_or_gelu <- 0
    } else if (is.character(activation) && length(activation) == 1 && tolower(activation) %in% c("relu", "gelu")) {
      relu <- tolower(activation) == "relu"
      self$activation <- if (relu) function(x) nnf_relu(x) else function(x) nnf_gelu(x)
      self$activation_relu_or_gelu <- if (relu) 1 else 2
    } else {
      value_error("nn_transformer_encoder_layer: activation must be \"relu\", \"gelu\" or a function, got ",
                  deparse(activation)[1])
    }
  },
  forward = function(src, src_mask = NULL, src_key_padding_mask = NULL, is_causal = FALSE) {
    if (!is.null(src_mask) && is_causal) {
      value_error("nn_transformer_encoder_layer: src_mask should not be set when is_causal = TRUE; ",
                  "use one or the other")
    }
    if (is_causal) {
      len <- src$size(if (self$self_attn$batch_first) 2 else 1)
      src_mask <- torch_ones(len, len, dtype = torch_bool(), device = src$device)$triu(diagonal = 1)
    }
    attend <- function(x) {
      self$self_attn(x, x, x, attn_mask = src_mask, key_padding_mask = src_key_padding_mask,
                     need_weights = FALSE)[[1]]
    }
    feed_forward <- function(x) self$linear2(self$dropout(self$activation(self$linear1(x))))
    if (self$norm_first) {
      x <- src + self$dropout1(attend(self$norm1(src)))
      x + self$dropout2(feed_forward(self$norm2(x)))
    } else {
      x <- self$norm1(src + self$dropout1(attend(src)))
      self$norm2(x + self$dropout2(feed_forward(x)))
    }
  }
)

#' @export
nn_transformer_encoder <- nn_module(
  "nn_transformer_encoder",
  initialize = function(encoder_layer, num_layers, norm = NULL) {
    if (!is_nn_module(encoder_layer)) {
      value_error("nn_transformer_encoder: encoder_layer must be an nn_module, got ", describe(encoder_layer))
    }
    self$num_layers <- num_layers
    # Each layer is its own deep copy, so the layers start equal and train apart.
    self$layers <- nn_module_list(lapply(seq_len(num_layers), function(i) encoder_layer$clone(deep = TRUE)))
    self$norm <- norm
  },
  forward = function(src, mask = NULL, src_key_padding_mask = NULL, is_causal = FALSE) {
    output <- src
    for (i in seq_along(self$layers)) {
      output <- self$layers[[i]](output, src_mask = mask, src_key_padding_mask = src_key_padding_mask,
                                 is_causal = is_causal)
    }
    if (!is.null(self$norm)) output <- self$norm(output)
    output
  }
)
