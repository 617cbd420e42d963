# Attention and the transformer encoder against base R: softmax(Q K^T / sqrt(d)) V per head, with
# the projections done in base R from the module's own parameters (as_array), masks applied by hand.

# ---- base R references --------------------------------------------------------------------------

softmax_rows <- function(s) {
  e <- exp(s - apply(s, 1, max))
  e / rowSums(e)
}

# x rows times W^T plus b (b may be NULL).
linear_ref <- function(x, w, b = NULL) {
  y <- matrix(x, ncol = ncol(w)) %*% t(w)
  if (is.null(b)) y else sweep(y, 2, b, "+")
}

# A logical mask sets TRUE scores to -Inf, a numeric one is added; columns past the mask's own
# (a learnt bias_k or a zero key) are allowed.
mask_ref <- function(s, m) {
  if (is.null(m)) return(s)
  extra <- ncol(s) - ncol(m)
  if (extra > 0) m <- cbind(m, matrix(if (is.logical(m)) FALSE else 0, nrow(m), extra))
  if (is.logical(m)) {
    s[m] <- -Inf
    s
  } else {
    s + m
  }
}

# The projections of an nn_multihead_attention, read from its parameters. The packed
# in_proj_weight is [W_q; W_k; W_v] by rows, as PyTorch documents.
mha_params <- function(m) {
  a <- function(x) if (is.null(x)) NULL else as_array(x)
  e <- m$embed_dim
  if (!is.null(m$in_proj_weight)) {
    w <- a(m$in_proj_weight)
    ws <- list(w[1:e, , drop = FALSE], w[e + 1:e, , drop = FALSE], w[2 * e + 1:e, , drop = FALSE])
  } else {
    ws <- list(a(m$q_proj_weight), a(m$k_proj_weight), a(m$v_proj_weight))
  }
  b <- a(m$in_proj_bias)
  list(wq = ws[[1]], wk = ws[[2]], wv = ws[[3]],
       bq = b[1:e], bk = b[e + 1:e], bv = b[2 * e + 1:e],
       wo = a(m$out_proj$weight), bo = a(m$out_proj$bias),
       bias_k = as.vector(a(m$bias_k)), bias_v = as.vector(a(m$bias_v)),
       heads = m$num_heads, zero_attn = isTRUE(m$add_zero_attn))
}

# q [L, N, E], k [S, N, kdim], v [S, N, vdim]; attn_mask [L, S] or [N * H, L, S]; kpm [N, S].
# Returns the output [L, N, E] and the weights [N, H, L, S].
mha_ref <- function(q, k, v, p, attn_mask = NULL, kpm = NULL) {
  L <- dim(q)[1]; N <- dim(q)[2]; E <- dim(q)[3]; H <- p$heads; hd <- E / H
  out <- array(0, c(L, N, E))
  weights <- NULL
  for (b in 1:N) {
    Q <- linear_ref(q[, b, ], p$wq, p$bq)
    K <- linear_ref(k[, b, ], p$wk, p$bk)
    V <- linear_ref(v[, b, ], p$wv, p$bv)
    if (!is.null(p$bias_k)) {
      K <- rbind(K, p$bias_k)
      V <- rbind(V, p$bias_v)
    }
    if (p$zero_attn) {
      K <- rbind(K, 0)
      V <- rbind(V, 0)
    }
    if (is.null(weights)) weights <- array(0, c(N, H, L, nrow(K)))
    heads_out <- matrix(0, L, E)
    for (h in 1:H) {
      cols <- (h - 1) * hd + 1:hd
      s <- Q[, cols, drop = FALSE] %*% t(K[, cols, drop = FALSE]) / sqrt(hd)
      if (!is.null(attn_mask)) {
        am <- if (length(dim(attn_mask)) == 3) attn_mask[(b - 1) * H + h, , ] else attn_mask
        s <- mask_ref(s, matrix(am, L))
      }
      if (!is.null(kpm)) s <- mask_ref(s, matrix(kpm[b, ], L, ncol(kpm), byrow = TRUE))
      P <- softmax_rows(s)
      weights[b, h, , ] <- P
      heads_out[, cols] <- P %*% V[, cols, drop = FALSE]
    }
    out[, b, ] <- linear_ref(heads_out, p$wo, p$bo)
  }
  list(out = out, weights = weights)
}

layer_norm_ref <- function(x, w, b, eps) {
  mu <- rowMeans(x)
  y <- (x - mu) / sqrt(rowMeans((x - mu)^2) + eps)
  if (is.null(w)) y else sweep(sweep(y, 2, w, "*"), 2, b, "+")
}

# One encoder layer on x [L, N, E] (sequence first), post-norm or pre-norm.
encoder_layer_ref <- function(x, layer, norm_first, act, mask = NULL, kpm = NULL, eps = 1e-5) {
  a <- function(t) if (is.null(t)) NULL else as_array(t)
  p <- mha_params(layer$self_attn)
  flat <- function(y) matrix(y, ncol = dim(x)[3])
  unflat <- function(y) array(y, dim(x))
  norm <- function(y, m) unflat(layer_norm_ref(flat(y), a(m$weight), a(m$bias), eps))
  attend <- function(y) mha_ref(y, y, y, p, mask, kpm)$out
  ff <- function(y) {
    hidden <- act(linear_ref(flat(y), a(layer$linear1$weight), a(layer$linear1$bias)))
    unflat(linear_ref(hidden, a(layer$linear2$weight), a(layer$linear2$bias)))
  }
  if (norm_first) {
    h <- x + attend(norm(x, layer$norm1))
    h + ff(norm(h, layer$norm2))
  } else {
    h <- norm(x + attend(x), layer$norm1)
    norm(h + ff(h), layer$norm2)
  }
}

relu_ref <- function(x) pmax(x, 0)
gelu_ref <- function(x) x * pnorm(x)
seq_first <- function(x) aperm(x, c(2, 1, 3))

# Fresh non-zero values for every parameter, so that biases (zero at init) count in the tests.
randomize <- function(m) {
  for (p in m$parameters) nn_init_normal_(p, std = 0.5)
  m
}

# ---- torch_scaled_dot_product_attention --------------------------------------------------------

# q [B1, B2, L, E] etc.; mask an [L, S] matrix (logical: TRUE = attend) or NULL.
sdpa_ref <- function(q, k, v, mask = NULL, scale = 1 / sqrt(dim(q)[4])) {
  d <- dim(q)
  out <- array(0, c(d[1:3], dim(v)[4]))
  for (i in 1:d[1]) for (j in 1:d[2]) {
    s <- q[i, j, , ] %*% t(k[i, j, , ]) * scale
    if (is.logical(mask)) s[!mask] <- -Inf else if (!is.null(mask)) s <- s + mask
    out[i, j, , ] <- softmax_rows(s) %*% v[i, j, , ]
  }
  out
}

test_that("torch_scaled_dot_product_attention matches softmax(Q K^T / sqrt(E)) V", {
  for (dtype in list(torch_float32(), torch_float64())) {
    tol <- if (dtype == torch_float64()) 1e-10 else 1e-5
    q <- torch_randn(2, 3, 4, 5, dtype = dtype)
    k <- torch_randn(2, 3, 6, 5, dtype = dtype)
    v <- torch_randn(2, 3, 6, 7, dtype = dtype)
    qa <- as_array(q); ka <- as_array(k); va <- as_array(v)
    expect_equal(as_array(torch_scaled_dot_product_attention(q, k, v)), sdpa_ref(qa, ka, va), tolerance = tol)
    expect_equal(as_array(torch_scaled_dot_product_attention(q, k, v, scale = 0.3)),
                 sdpa_ref(qa, ka, va, scale = 0.3), tolerance = tol)
    # Boolean masks mark the positions that take part; one [L, S] mask broadcasts over the batch.
    allowed <- matrix(runif(24) > 0.4, 4, 6)
    allowed[, 1] <- TRUE
    expect_equal(as_array(torch_scaled_dot_product_attention(q, k, v, attn_mask = torch_tensor(allowed))),
                 sdpa_ref(qa, ka, va, allowed), tolerance = tol)
    added <- matrix(rnorm(24), 4, 6)
    expect_equal(as_array(torch_scaled_dot_product_attention(q, k, v, attn_mask = torch_tensor(added, dtype = dtype))),
                 sdpa_ref(qa, ka, va, added), tolerance = tol)
    causal <- outer(1:4, 1:6, ">=")
    expect_equal(as_array(torch_scaled_dot_product_attention(q, k, v, is_causal = TRUE)),
                 sdpa_ref(qa, ka, va, causal), tolerance = tol)
  }
})

test_that("torch_scaled_dot_product_attention takes views, grouped queries, empty inputs and dropout", {
  q <- torch_randn(2, 4, 3, 5, dtype = torch_float64())$transpose(3, 4)$contiguous()$transpose(3, 4)
  k <- torch_randn(2, 4, 5, 6, dtype = torch_float64())$transpose(3, 4)  # a non-contiguous [2, 4, 6, 5]
  v <- torch_randn(2, 4, 6, 3, dtype = torch_float64())
  expect_equal(as_array(torch_scaled_dot_product_attention(q, k, v)),
               sdpa_ref(as_array(q), as_array(k), as_array(v)), tolerance = 1e-10)
  # enable_gqa: 4 query heads share 2 key/value heads, heads 1-2 the first and 3-4 the second.
  k2 <- torch_randn(2, 2, 6, 5, dtype = torch_float64())
  v2 <- torch_randn(2, 2, 6, 3, dtype = torch_float64())
  ka <- as_array(k2)[, c(1, 1, 2, 2), , , drop = FALSE]
  va <- as_array(v2)[, c(1, 1, 2, 2), , , drop = FALSE]
  expect_equal(as_array(torch_scaled_dot_product_attention(q, k2, v2, enable_gqa = TRUE)),
               sdpa_ref(as_array(q), ka, va), tolerance = 1e-10)
  empty <- torch_scaled_dot_product_attention(torch_randn(2, 0, 4), torch_randn(2, 3, 4), torch_randn(2, 3, 5))
  expect_equal(empty$shape, c(2, 0, 5))
  # dropout_p > 0 drops weights at random (rescaled), so two calls differ and differ from p = 0.
  a <- as_array(torch_scaled_dot_product_attention(q, k, v, dropout_p = 0.5))
  b <- as_array(torch_scaled_dot_product_attention(q, k, v, dropout_p = 0.5))
  expect_false(isTRUE(all.equal(a, b)))
})

test_that("torch_scaled_dot_product_attention's gradient matches finite differences", {
  q <- torch_randn(1, 1, 3, 4, dtype = torch_float64(), requires_grad = TRUE)
  k <- torch_randn(1, 1, 5, 4, dtype = torch_float64())
  v <- torch_randn(1, 1, 5, 2, dtype = torch_float64())
  g <- array(rnorm(6), c(1, 1, 3, 2))
  (torch_scaled_dot_product_attention(q, k, v) * torch_tensor(g, dtype = torch_float64()))$sum()$backward()
  qa <- as_array(q); ka <- as_array(k); va <- as_array(v)
  loss <- function(x) sum(sdpa_ref(x, ka, va) * g)
  expect_equal(as_array(q$grad), numeric_grad(loss, qa), tolerance = 1e-6)
})

test_that("torch_scaled_dot_product_attention rejects bad arguments", {
  q <- torch_randn(2, 3, 4)
  expect_error(torch_scaled_dot_product_attention(q, q, q, attn_mask = torch_ones(3, 3), is_causal = TRUE),
               class = "value_error", regexp = "torch_scaled_dot_product_attention: attn_mask")
  expect_error(torch_scaled_dot_product_attention(q, q, q, dropout_p = 2),
               class = "value_error", regexp = "dropout_p must be a probability in \\[0, 1\\], got 2")
  expect_error(torch_scaled_dot_product_attention(q, 1, q), class = "value_error", regexp = "key must be a tensor")
})

# ---- nn_multihead_attention --------------------------------------------------------------------

test_that("nn_multihead_attention matches base R for self-attention, float32 and float64", {
  for (dtype in list(torch_float32(), torch_float64())) {
    tol <- if (dtype == torch_float64()) 1e-10 else 1e-5
    m <- randomize(nn_multihead_attention(8, 2))$to(dtype = dtype)
    x <- torch_randn(5, 3, 8, dtype = dtype)
    p <- mha_params(m)
    ref <- mha_ref(as_array(x), as_array(x), as_array(x), p)
    out <- m(x, x, x)
    expect_equal(out[[1]]$shape, c(5, 3, 8))
    expect_equal(as_array(out[[1]]), ref$out, tolerance = tol)
    expect_equal(as_array(out[[2]]), apply(ref$weights, c(1, 3, 4), mean), tolerance = tol)
    per_head <- m(x, x, x, avg_weights = FALSE)[[2]]
    expect_equal(per_head$shape, c(3, 2, 5, 5))
    expect_equal(as_array(per_head), ref$weights, tolerance = tol)
    expect_null(m(x, x, x, need_weights = FALSE)[[2]])
  }
})

test_that("nn_multihead_attention matches base R for cross-attention with boolean masks, batch first", {
  m <- randomize(nn_multihead_attention(6, 3, batch_first = TRUE))$to(dtype = torch_float64())
  q <- torch_randn(2, 4, 6, dtype = torch_float64())
  k <- torch_randn(2, 5, 6, dtype = torch_float64())
  v <- torch_randn(2, 5, 6, dtype = torch_float64())
  attn_mask <- matrix(runif(20) > 0.6, 4, 5)
  attn_mask[, 1] <- FALSE  # every query keeps key 1, which neither batch pads
  kpm <- matrix(c(FALSE, FALSE, TRUE, FALSE, TRUE, FALSE, TRUE, FALSE, FALSE, FALSE), 2, 5, byrow = TRUE)
  out <- m(q, k, v, attn_mask = torch_tensor(attn_mask), key_padding_mask = torch_tensor(kpm), avg_weights = FALSE)
  ref <- mha_ref(seq_first(as_array(q)), seq_first(as_array(k)), seq_first(as_array(v)), mha_params(m),
                 attn_mask, kpm)
  expect_equal(as_array(out[[1]]), seq_first(ref$out), tolerance = 1e-10)
  expect_equal(as_array(out[[2]]), ref$weights, tolerance = 1e-10)
  expect_true(all(as_array(out[[2]])[2, , , 2] == 0))  # a padded key gets no weight
})

test_that("nn_multihead_attention adds float masks, 2-d and per-head 3-d, and float key padding", {
  m <- randomize(nn_multihead_attention(4, 2))$to(dtype = torch_float64())
  q <- torch_randn(3, 2, 4, dtype = torch_float64())
  kv <- torch_randn(5, 2, 4, dtype = torch_float64())
  p <- mha_params(m)
  mask2 <- matrix(rnorm(15), 3, 5)
  mask3 <- array(rnorm(4 * 15), c(4, 3, 5))
  kpm <- matrix(rnorm(10), 2, 5)
  f64 <- function(x) torch_tensor(x, dtype = torch_float64())
  for (mask in list(mask2, mask3)) {
    out <- m(q, kv, kv, attn_mask = f64(mask), key_padding_mask = f64(kpm))
    ref <- mha_ref(as_array(q), as_array(kv), as_array(kv), p, mask, kpm)
    expect_equal(as_array(out[[1]]), ref$out, tolerance = 1e-10)
    expect_equal(as_array(out[[2]]), apply(ref$weights, c(1, 3, 4), mean), tolerance = 1e-10)
  }
})

test_that("nn_multihead_attention with kdim/vdim, bias_kv and a zero key matches base R", {
  m <- randomize(nn_multihead_attention(6, 2, kdim = 3, vdim = 5, add_bias_kv = TRUE, add_zero_attn = TRUE))
  m$to(dtype = torch_float64())
  expect_null(m$in_proj_weight)
  expect_equal(m$k_proj_weight$shape, c(6, 3))
  expect_equal(m$v_proj_weight$shape, c(6, 5))
  # A non-contiguous query: [N, L, E] transposed to [L, N, E].
  q <- torch_randn(2, 4, 6, dtype = torch_float64())$transpose(1, 2)
  k <- torch_randn(3, 2, 3, dtype = torch_float64())
  v <- torch_randn(3, 2, 5, dtype = torch_float64())
  causal <- outer(1:4, 1:3, "<")
  kpm <- matrix(c(FALSE, FALSE, TRUE, FALSE, FALSE, FALSE), 2, 3, byrow = TRUE)
  out <- m(q, k, v, attn_mask = torch_tensor(causal), key_padding_mask = torch_tensor(kpm), avg_weights = FALSE)
  ref <- mha_ref(as_array(q), as_array(k), as_array(v), mha_params(m), causal, kpm)
  expect_equal(out[[2]]$shape, c(2, 2, 4, 5))  # 3 keys, the learnt one and the zero one
  expect_equal(as_array(out[[1]]), ref$out, tolerance = 1e-10)
  expect_equal(as_array(out[[2]]), ref$weights, tolerance = 1e-10)
})

test_that("nn_multihead_attention's dropout acts in training only", {
  m <- randomize(nn_multihead_attention(4, 2, dropout = 0.5))
  x <- torch_randn(6, 2, 4)
  ref <- mha_ref(as_array(x), as_array(x), as_array(x), mha_params(m))
  m$train()
  a <- as_array(m(x, x, x)[[1]])
  b <- as_array(m(x, x, x)[[1]])
  expect_false(isTRUE(all.equal(a, b)))
  expect_false(isTRUE(all.equal(a, ref$out)))
  m$eval()
  expect_equal(as_array(m(x, x, x)[[1]]), ref$out, tolerance = 1e-5)
  expect_equal(as_array(m(x, x, x)[[1]]), as_array(m(x, x, x)[[1]]))
})

test_that("nn_multihead_attention's gradients reach every parameter and match finite differences", {
  m <- randomize(nn_multihead_attention(4, 2, add_bias_kv = TRUE))$to(dtype = torch_float64())
  xa <- array(rnorm(2 * 2 * 4), c(2, 2, 4))
  x <- torch_tensor(xa, dtype = torch_float64(), requires_grad = TRUE)
  g <- array(rnorm(16), c(2, 2, 4))
  (m(x, x, x)[[1]] * torch_tensor(g, dtype = torch_float64()))$sum()$backward()
  expect_setequal(names(m$parameters),
                  c("in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight", "out_proj.bias"))
  for (name in names(m$parameters)) {
    grad <- m$parameters[[name]]$grad
    expect_false(is_undefined_tensor(grad), label = name)
    expect_true(all(is.finite(as_array(grad))), label = name)
    expect_gt(sum(abs(as_array(grad))), 0, label = name)
  }
  p <- mha_params(m)
  loss <- function(y) sum(mha_ref(y, y, y, p)$out * g)
  expect_equal(as_array(x$grad), numeric_grad(loss, xa), tolerance = 1e-6)
})

test_that("nn_multihead_attention's state dict has torch for R's names", {
  expect_identical(names(nn_multihead_attention(4, 2)$state_dict()),
                   c("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"))
  expect_identical(names(nn_multihead_attention(4, 2, bias = FALSE)$state_dict()),
                   c("in_proj_weight", "out_proj.weight"))
  expect_identical(names(nn_multihead_attention(4, 2, kdim = 3, vdim = 5, add_bias_kv = TRUE)$state_dict()),
                   c("q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k", "bias_v",
                     "out_proj.weight", "out_proj.bias"))
  sd <- nn_multihead_attention(4, 2)$state_dict()
  expect_equal(sd$in_proj_weight$shape, c(12, 4))
  expect_equal(sd$in_proj_bias$shape, 12)
  # Initialised as torch for R's: zero biases.
  expect_true(all(as_array(sd$in_proj_bias) == 0))
  expect_true(all(as_array(sd$out_proj.bias) == 0))
})

test_that("nn_multihead_attention and its functional form reject bad arguments", {
  expect_error(nn_multihead_attention(10, 3), class = "value_error",
               regexp = "nn_multihead_attention: embed_dim = 10 must be divisible by num_heads = 3")
  m <- nn_multihead_attention(4, 2)
  expect_error(m(torch_randn(3, 4), torch_randn(3, 4), torch_randn(3, 4)), class = "value_error",
               regexp = "nnf_multi_head_attention_forward: query must be 3-d, got shape \\[3, 4\\]")
  x <- torch_randn(3, 2, 4)
  expect_error(nnf_multi_head_attention_forward(x, x, x, 6, 2, m$in_proj_weight, m$in_proj_bias, NULL, NULL,
                                                FALSE, 0, m$out_proj$weight, m$out_proj$bias),
               class = "value_error", regexp = "embedding size 4 differs from embed_dim_to_check = 6")
  expect_error(m(x, x, x, attn_mask = torch_zeros(3)), class = "value_error", regexp = "attn_mask must be 2-d")
})

# ---- nn_transformer_encoder_layer and nn_transformer_encoder -----------------------------------

test_that("nn_transformer_encoder_layer matches base R, post-norm and pre-norm, relu and gelu", {
  for (norm_first in c(FALSE, TRUE)) for (activation in c("relu", "gelu")) {
    layer <- randomize(nn_transformer_encoder_layer(8, 2, dim_feedforward = 16, dropout = 0,
                                                    activation = activation, norm_first = norm_first))
    layer$to(dtype = torch_float64())
    x <- torch_randn(5, 3, 8, dtype = torch_float64())
    act <- if (activation == "relu") relu_ref else gelu_ref
    expect_equal(as_array(layer(x)), encoder_layer_ref(as_array(x), layer, norm_first, act), tolerance = 1e-10)
  }
})

test_that("nn_transformer_encoder_layer takes masks, is_causal, batch_first, float32 and a function", {
  layer <- randomize(nn_transformer_encoder_layer(6, 3, dim_feedforward = 10, dropout = 0, batch_first = TRUE,
                                                  activation = function(x) torch_tanh(x), layer_norm_eps = 1e-3))
  x <- torch_randn(2, 4, 6)  # [N, L, E]
  xs <- seq_first(as_array(x))
  kpm <- matrix(c(FALSE, FALSE, FALSE, FALSE, FALSE, TRUE, FALSE, TRUE), 2, 4, byrow = TRUE)
  causal <- outer(1:4, 1:4, "<")
  ref <- encoder_layer_ref(xs, layer, FALSE, tanh, causal, kpm, eps = 1e-3)
  expect_equal(as_array(layer(x, src_mask = torch_tensor(causal), src_key_padding_mask = torch_tensor(kpm))),
               seq_first(ref), tolerance = 1e-5)
  expect_equal(as_array(layer(x, is_causal = TRUE)),
               seq_first(encoder_layer_ref(xs, layer, FALSE, tanh, causal, eps = 1e-3)), tolerance = 1e-5)
  expect_error(layer(x, src_mask = torch_tensor(causal), is_causal = TRUE), class = "value_error",
               regexp = "src_mask should not be set when is_causal = TRUE")
  expect_error(nn_transformer_encoder_layer(6, 3, activation = "tanh"), class = "value_error",
               regexp = "activation must be \"relu\", \"gelu\" or a function, got \"tanh\"")
})

test_that("nn_transformer_encoder_layer's dropout acts in training only, and gradients reach every parameter", {
  layer <- randomize(nn_transformer_encoder_layer(4, 2, dim_feedforward = 8, dropout = 0.3))
  x <- torch_randn(3, 2, 4)
  layer$train()
  expect_false(isTRUE(all.equal(as_array(layer(x)), as_array(layer(x)))))
  layer$eval()
  expect_equal(as_array(layer(x)), encoder_layer_ref(as_array(x), layer, FALSE, relu_ref), tolerance = 1e-5)

  for (norm_first in c(FALSE, TRUE)) {
    layer <- randomize(nn_transformer_encoder_layer(4, 2, dim_feedforward = 8, dropout = 0, norm_first = norm_first))
    out <- layer(x)
    (out * torch_randn_like(out))$sum()$backward()
    expect_length(layer$parameters, 12)
    for (name in names(layer$parameters)) {
      grad <- layer$parameters[[name]]$grad
      expect_false(is_undefined_tensor(grad), label = name)
      expect_true(all(is.finite(as_array(grad))), label = name)
      expect_gt(sum(abs(as_array(grad))), 0, label = name)
    }
  }
})

test_that("nn_transformer_encoder stacks independent copies of the layer and a final norm", {
  layer <- randomize(nn_transformer_encoder_layer(6, 2, dim_feedforward = 12, dropout = 0))
  final <- randomize(nn_layer_norm(6))
  enc <- nn_transformer_encoder(layer, num_layers = 3, norm = final)
  enc$to(dtype = torch_float64())
  # The copies start equal to the layer; change one so that the reference must use each layer's own.
  with_no_grad(enc$layers[[2]]$linear1$weight$mul_(2))
  expect_false(isTRUE(all.equal(as_array(enc$layers[[1]]$linear1$weight), as_array(enc$layers[[2]]$linear1$weight))))
  x <- torch_randn(4, 2, 6, dtype = torch_float64())
  kpm <- matrix(c(FALSE, FALSE, FALSE, TRUE, FALSE, FALSE, FALSE, FALSE), 2, 4, byrow = TRUE)
  ref <- as_array(x)
  for (i in 1:3) ref <- encoder_layer_ref(ref, enc$layers[[i]], FALSE, relu_ref, kpm = kpm)
  ref <- array(layer_norm_ref(matrix(ref, ncol = 6), as_array(enc$norm$weight), as_array(enc$norm$bias), 1e-5), dim(ref))
  expect_equal(as_array(enc(x, src_key_padding_mask = torch_tensor(kpm))), ref, tolerance = 1e-10)
  expect_error(nn_transformer_encoder("layer", 2), class = "value_error",
               regexp = "nn_transformer_encoder: encoder_layer must be an nn_module")
})

test_that("the encoder's state dicts have torch for R's names", {
  layer_names <- c("self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                   "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                   "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias")
  layer <- nn_transformer_encoder_layer(8, 2, dim_feedforward = 16)
  expect_identical(names(layer$state_dict()), layer_names)
  expect_identical(names(nn_transformer_encoder_layer(8, 2, bias = FALSE)$state_dict()),
                   c("self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight", "linear2.weight"))
  enc <- nn_transformer_encoder(layer, 2, norm = nn_layer_norm(8))
  expect_identical(names(enc$state_dict()),
                   c(paste0("layers.0.", layer_names), paste0("layers.1.", layer_names), "norm.weight", "norm.bias"))
  # A state dict round-trips into a fresh encoder.
  other <- nn_transformer_encoder(nn_transformer_encoder_layer(8, 2, dim_feedforward = 16), 2, norm = nn_layer_norm(8))
  other$load_state_dict(enc$state_dict())
  enc$eval(); other$eval()
  x <- torch_randn(3, 2, 8)
  expect_equal(as_array(other(x)), as_array(enc(x)))
})
