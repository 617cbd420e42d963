# Recurrent layers from R: forwards against plain R loops of PyTorch's equations (double
# precision), gradients against the same network written with rcuda's elementwise ops and
# matrix products (autograd through those, not through the RNN kernels), the modules'
# parameters, batch_first, unbatched input, dropout, errors, CUDA against the CPU and a model
# that learns.

sigmoid <- function(v) 1 / (1 + exp(-v))

# One step of a cell in plain R: x [N, I], h [N, H], c [N, H] (LSTM), w_ih [G H, I], ...
rnn_cell_reference <- function(mode, x, h, c, w_ih, w_hh, b_ih, b_hh) {
  H <- ncol(h)
  gi <- x %*% t(w_ih) + matrix(b_ih, nrow(x), length(b_ih), byrow = TRUE)
  gh <- h %*% t(w_hh) + matrix(b_hh, nrow(x), length(b_hh), byrow = TRUE)
  part <- function(m, k) m[, (k - 1) * H + seq_len(H), drop = FALSE]
  switch(mode,
    LSTM = {
      g <- gi + gh
      i <- sigmoid(part(g, 1)); f <- sigmoid(part(g, 2)); u <- tanh(part(g, 3)); o <- sigmoid(part(g, 4))
      c_new <- f * c + i * u
      list(h = o * tanh(c_new), c = c_new)
    },
    GRU = {
      r <- sigmoid(part(gi, 1) + part(gh, 1)); z <- sigmoid(part(gi, 2) + part(gh, 2))
      n <- tanh(part(gi, 3) + r * part(gh, 3))
      list(h = (1 - z) * n + z * h, c = NULL)
    },
    RNN_TANH = list(h = tanh(gi + gh), c = NULL),
    RNN_RELU = list(h = pmax(gi + gh, 0), c = NULL))
}

# The whole stack: x [T, N, I]; h0, c0 [L D, N, H]; weights in the engine's flat order.
rnn_reference <- function(mode, x, h0, c0, weights, layers, directions, bias) {
  steps <- dim(x)[1]; n <- dim(x)[2]; H <- dim(h0)[3]
  per <- if (bias) 4 else 2
  input <- x
  hn <- h0; cn <- c0
  for (l in seq_len(layers)) {
    out <- array(0, c(steps, n, directions * H))
    for (d in seq_len(directions)) {
      k <- (l - 1) * directions + d
      w <- weights[((k - 1) * per + 1):(k * per)]
      gates <- nrow(w[[1]])
      b_ih <- if (bias) w[[3]] else rep(0, gates)
      b_hh <- if (bias) w[[4]] else rep(0, gates)
      h <- matrix(h0[k, , ], n, H); c <- if (mode == "LSTM") matrix(c0[k, , ], n, H) else NULL
      order <- if (d == 1) seq_len(steps) else rev(seq_len(steps))
      for (t in order) {
        s <- rnn_cell_reference(mode, matrix(input[t, , ], n), h, c, w[[1]], w[[2]], b_ih, b_hh)
        h <- s$h; c <- s$c
        out[t, , (d - 1) * H + seq_len(H)] <- h
      }
      hn[k, , ] <- h
      if (mode == "LSTM") cn[k, , ] <- c
    }
    input <- out
  }
  list(output = out, h_n = hn, c_n = cn)
}

module_for <- function(mode, ...) {
  switch(mode, LSTM = nn_lstm(...), GRU = nn_gru(...),
         RNN_TANH = nn_rnn(..., nonlinearity = "tanh"), RNN_RELU = nn_rnn(..., nonlinearity = "relu"))
}

configs <- list(
  list(mode = "LSTM", layers = 2, bidirectional = TRUE, bias = TRUE),
  list(mode = "LSTM", layers = 1, bidirectional = FALSE, bias = FALSE),
  list(mode = "GRU", layers = 2, bidirectional = FALSE, bias = TRUE),
  list(mode = "GRU", layers = 1, bidirectional = TRUE, bias = TRUE),
  list(mode = "RNN_TANH", layers = 3, bidirectional = FALSE, bias = TRUE),
  list(mode = "RNN_RELU", layers = 1, bidirectional = TRUE, bias = FALSE)
)

test_that("the recurrent modules match plain R loops, with and without initial states", {
  for (cfg in configs) {
    m <- module_for(cfg$mode, 5, 6, num_layers = cfg$layers, bias = cfg$bias,
                    bidirectional = cfg$bidirectional)
    m$to(dtype = torch_double())
    directions <- if (cfg$bidirectional) 2 else 1
    x <- random_array(4, 3, 5)
    h0 <- random_array(cfg$layers * directions, 3, 6)
    c0 <- random_array(cfg$layers * directions, 3, 6)
    weights <- lapply(m$flat_weights(), as_array)
    want <- rnn_reference(cfg$mode, x, h0, c0, weights, cfg$layers, directions, cfg$bias)
    xt <- torch_tensor(x, dtype = torch_double())
    hx <- if (cfg$mode == "LSTM") {
      list(torch_tensor(h0, dtype = torch_double()), torch_tensor(c0, dtype = torch_double()))
    } else {
      torch_tensor(h0, dtype = torch_double())
    }
    got <- m(xt, hx)
    info <- deparse(cfg)
    expect_equal(as_array(got[[1]]), want$output, tolerance = 1e-10, info = info)
    h_n <- if (cfg$mode == "LSTM") got[[2]][[1]] else got[[2]]
    expect_equal(as_array(h_n), want$h_n, tolerance = 1e-10, info = info)
    if (cfg$mode == "LSTM") expect_equal(as_array(got[[2]][[2]]), want$c_n, tolerance = 1e-10, info = info)
    # No initial state: zeros.
    zeros <- array(0, dim(h0))
    want0 <- rnn_reference(cfg$mode, x, zeros, zeros, weights, cfg$layers, directions, cfg$bias)
    expect_equal(as_array(m(xt)[[1]]), want0$output, tolerance = 1e-10, info = info)
  }
})

# The same network from rcuda's ops, differentiated by autograd through them.
rnn_ops_reference <- function(mode, x, h0, c0, weights, layers, directions, bias) {
  steps <- x$shape[1]; H <- h0$shape[3]
  per <- if (bias) 4 else 2
  input <- x
  hs <- list(); cs <- list()
  for (l in seq_len(layers)) {
    outs <- list()
    for (d in seq_len(directions)) {
      k <- (l - 1) * directions + d
      w <- weights[((k - 1) * per + 1):(k * per)]
      h <- h0[k, , ]; c <- if (mode == "LSTM") c0[k, , ] else NULL
      seq_out <- vector("list", steps)
      order <- if (d == 1) seq_len(steps) else rev(seq_len(steps))
      for (t in order) {
        gi <- torch_matmul(input[t, , ], w[[1]]$t())
        gh <- torch_matmul(h, w[[2]]$t())
        if (bias) { gi <- gi + w[[3]]; gh <- gh + w[[4]] }
        part <- function(m, j) m[, ((j - 1) * H + 1):(j * H)]
        if (mode == "LSTM") {
          g <- gi + gh
          c <- torch_sigmoid(part(g, 2)) * c + torch_sigmoid(part(g, 1)) * torch_tanh(part(g, 3))
          h <- torch_sigmoid(part(g, 4)) * torch_tanh(c)
        } else if (mode == "GRU") {
          r <- torch_sigmoid(part(gi, 1) + part(gh, 1)); z <- torch_sigmoid(part(gi, 2) + part(gh, 2))
          n <- torch_tanh(part(gi, 3) + r * part(gh, 3))
          h <- (1 - z) * n + z * h
        } else if (mode == "RNN_TANH") {
          h <- torch_tanh(gi + gh)
        } else {
          h <- torch_relu(gi + gh)
        }
        seq_out[[t]] <- h
      }
      outs[[d]] <- torch_stack(seq_out, dim = 1)
      hs[[k]] <- h; cs[[k]] <- c
    }
    input <- if (directions == 2) torch_cat(outs, dim = 3) else outs[[1]]
  }
  list(output = input, h_n = torch_stack(hs, dim = 1),
       c_n = if (mode == "LSTM") torch_stack(cs, dim = 1) else NULL)
}

test_that("gradients of every parameter and of the input and states match autograd through ops", {
  for (cfg in configs) {
    m <- module_for(cfg$mode, 4, 5, num_layers = cfg$layers, bias = cfg$bias,
                    bidirectional = cfg$bidirectional)
    m$to(dtype = torch_double())
    directions <- if (cfg$bidirectional) 2 else 1
    x <- torch_randn(3, 2, 4, dtype = torch_double(), requires_grad = TRUE)
    h0 <- torch_randn(cfg$layers * directions, 2, 5, dtype = torch_double(), requires_grad = TRUE)
    c0 <- torch_randn(cfg$layers * directions, 2, 5, dtype = torch_double(), requires_grad = TRUE)
    hx <- if (cfg$mode == "LSTM") list(h0, c0) else h0
    got <- m(x, hx)
    h_n <- if (cfg$mode == "LSTM") got[[2]][[1]] else got[[2]]
    # Weights on each output, so that every output's gradient path is exercised.
    wo <- torch_randn_like(got[[1]]); wh <- torch_randn_like(h_n)
    loss <- (got[[1]] * wo)$sum() + (h_n * wh)$sum()
    if (cfg$mode == "LSTM") {
      wc <- torch_randn_like(got[[2]][[2]])
      loss <- loss + (got[[2]][[2]] * wc)$sum()
    }
    params <- m$flat_weights()
    grads <- autograd_grad(loss, c(params, list(x, h0), if (cfg$mode == "LSTM") list(c0)))
    copies <- lapply(params, function(p) p$detach()$clone()$requires_grad_(TRUE))
    ref <- rnn_ops_reference(cfg$mode, x, h0, c0, copies, cfg$layers, directions, cfg$bias)
    ref_loss <- (ref$output * wo)$sum() + (ref$h_n * wh)$sum()
    if (cfg$mode == "LSTM") ref_loss <- ref_loss + (ref$c_n * wc)$sum()
    want <- autograd_grad(ref_loss, c(copies, list(x, h0), if (cfg$mode == "LSTM") list(c0)))
    expect_equal(as_array(loss), as_array(ref_loss), tolerance = 1e-10, info = deparse(cfg))
    for (i in seq_along(want)) {
      expect_equal(as_array(grads[[i]]), as_array(want[[i]]), tolerance = 1e-9,
                   info = paste(deparse(cfg), "gradient", i))
    }
  }
})

test_that("float32 on the CPU agrees with float64", {
  m <- nn_lstm(6, 8, num_layers = 2, bidirectional = TRUE)
  x <- torch_randn(7, 4, 6)
  out32 <- m(x)
  m64 <- nn_lstm(6, 8, num_layers = 2, bidirectional = TRUE)
  m64$load_state_dict(m$state_dict())
  m64$to(dtype = torch_double())
  out64 <- m64(x$to(dtype = torch_double()))
  expect_equal(as_array(out32[[1]]), as_array(out64[[1]]), tolerance = 1e-5)
  expect_equal(as_array(out32[[2]][[2]]), as_array(out64[[2]][[2]]), tolerance = 1e-5)
})

test_that("parameters are named, shaped and initialised as torch for R's", {
  m <- nn_lstm(3, 4, num_layers = 2, bidirectional = TRUE)
  expect_equal(names(m$parameters), c(
    "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
    "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse",
    "weight_ih_l2", "weight_hh_l2", "bias_ih_l2", "bias_hh_l2",
    "weight_ih_l2_reverse", "weight_hh_l2_reverse", "bias_ih_l2_reverse", "bias_hh_l2_reverse"))
  expect_equal(m$weight_ih_l1$shape, c(16, 3))
  expect_equal(m$weight_ih_l2$shape, c(16, 8))
  expect_equal(m$weight_hh_l2_reverse$shape, c(16, 4))
  for (p in m$parameters) expect_true(all(abs(as_array(p)) <= 1 / sqrt(4)))
  expect_length(nn_gru(3, 4, bias = FALSE)$parameters, 2)
  expect_equal(nn_gru(3, 4)$weight_hh_l1$shape, c(12, 4))
  expect_equal(nn_rnn(3, 4)$weight_ih_l1$shape, c(4, 3))
})

test_that("batch_first and unbatched inputs are the same computation", {
  m <- nn_gru(3, 4, num_layers = 2)
  x <- torch_randn(5, 2, 3)
  base <- m(x)
  mb <- nn_gru(3, 4, num_layers = 2, batch_first = TRUE)
  mb$load_state_dict(m$state_dict())
  first <- mb(x$permute(c(2, 1, 3)))
  expect_equal(as_array(first[[1]]$permute(c(2, 1, 3))), as_array(base[[1]]), tolerance = 1e-6)
  expect_equal(as_array(first[[2]]), as_array(base[[2]]), tolerance = 1e-6)
  single <- m(x[, 1, ])
  expect_equal(single[[1]]$shape, c(5, 4))
  expect_equal(as_array(single[[1]]), as_array(base[[1]][, 1, ]), tolerance = 1e-6)
  expect_equal(single[[2]]$shape, c(2, 4))
})

test_that("dropout applies between layers while training only, reproducibly by seed", {
  m <- nn_lstm(4, 6, num_layers = 3, dropout = 0.5)
  x <- torch_randn(5, 2, 4)
  m$eval()
  plain <- nn_lstm(4, 6, num_layers = 3)
  plain$load_state_dict(m$state_dict())
  expect_equal(as_array(m(x)[[1]]), as_array(plain(x)[[1]]), tolerance = 1e-6)
  m$train()
  torch_manual_seed(7); a <- as_array(m(x)[[1]])
  torch_manual_seed(7); b <- as_array(m(x)[[1]])
  torch_manual_seed(8); c <- as_array(m(x)[[1]])
  expect_identical(a, b)
  expect_false(isTRUE(all.equal(a, c)))
  expect_false(isTRUE(all.equal(a, as_array(plain(x)[[1]]))))
  expect_warning(nn_gru(3, 4, dropout = 0.2), "num_layers")
})

test_that("bad arguments and inputs give clear errors", {
  expect_error(nn_lstm(0, 4), "input_size")
  expect_error(nn_lstm(3, 4, dropout = 2), "dropout")
  expect_error(nn_rnn(3, 4, nonlinearity = "sigmoid"), "nonlinearity")
  m <- nn_lstm(3, 4)
  expect_error(m(torch_randn(5, 2, 7)), "7")
  expect_error(m(torch_randn(5, 2, 3), torch_zeros(1, 2, 4)), "list")
  expect_error(m(torch_randn(5, 2, 3), list(torch_zeros(2, 2, 4), torch_zeros(2, 2, 4))), "hx|h_0|shape")
  expect_error(nn_gru(3, 4)(torch_randn(5, 2, 3), "state"), "tensor")
})

test_that("a small LSTM learns to sum its sequence", {
  torch_manual_seed(1)
  model <- nn_module(
    initialize = function() {
      self$rnn <- nn_lstm(1, 16, batch_first = TRUE)
      self$head <- nn_linear(16, 1)
    },
    forward = function(x) {
      out <- self$rnn(x)[[1]]
      self$head(out[, out$shape[2], ])
    }
  )()
  opt <- optim_adam(model$parameters, lr = 0.02)
  x <- torch_rand(64, 6, 1)
  y <- x$sum(dim = 2)
  losses <- numeric()
  for (step in 1:150) {
    opt$zero_grad()
    loss <- nnf_mse_loss(model(x), y)
    loss$backward()
    opt$step()
    losses[step] <- as.numeric(loss)
  }
  expect_lt(losses[150], losses[1] / 20)
})

test_that("on CUDA the recurrent layers match the CPU, outputs and gradients", {
  skip_if_cuda_not_available()
  for (make in list(function() nn_lstm(5, 7, num_layers = 2, bidirectional = TRUE),
                    function() nn_gru(5, 7, batch_first = TRUE))) {
    m <- make()
    x <- torch_randn(6, 3, 5)
    out <- m(x)[[1]]
    out$sum()$backward()
    want_grad <- as_array(m$parameters[[1]]$grad)
    m$zero_grad()
    m$to(device = "cuda")
    got <- m(x$cuda())[[1]]
    got$sum()$backward()
    # float32 layers on CUDA use TF32 tensor cores, as PyTorch's cuDNN default: about 1e-3.
    expect_equal(as_array(got$cpu()), as_array(out), tolerance = 5e-3)
    expect_equal(as_array(m$parameters[[1]]$grad$cpu()), want_grad, tolerance = 5e-3)
  }
})
