# Packed sequences (R/nn-rnn-packed.R, Note [Packed sequences]): torch for R's layouts, and a
# recurrent layer over a PackedSequence against the same layer run on each sequence alone.

test_that("pack_padded_sequence lays out torch for R's data, batch sizes and indices", {
  x <- torch_tensor(rbind(c(1, 2, 0, 0), c(1, 2, 3, 0), c(1, 2, 3, 4)), dtype = torch_long())
  p <- nn_utils_rnn_pack_padded_sequence(x, c(2, 3, 4), batch_first = TRUE, enforce_sorted = FALSE)
  expect_s3_class(p, "PackedSequence")
  expect_equal(as_array(p$data), c(1, 1, 1, 2, 2, 2, 3, 3, 4))
  expect_equal(as_array(p$batch_sizes), c(3, 2 + 1, 2, 1))
  expect_equal(as_array(p$sorted_indices), c(3, 2, 1))
  expect_equal(as_array(p$unsorted_indices), c(3, 2, 1))
  expect_error(nn_utils_rnn_pack_padded_sequence(x, c(2, 3, 4), batch_first = TRUE), "decreasing order",
               class = "rcuda_value_error")
  sorted <- nn_utils_rnn_pack_padded_sequence(x$flip(1), torch_tensor(c(4, 3, 2)), batch_first = TRUE)
  expect_equal(as_array(sorted$data), c(1, 1, 1, 2, 2, 2, 3, 3, 4))
  expect_null(sorted$sorted_indices)
  expect_error(nn_utils_rnn_pack_padded_sequence(x, c(2, 3), batch_first = TRUE, enforce_sorted = FALSE),
               "2 lengths for a batch of 3", class = "rcuda_value_error")
  expect_error(nn_utils_rnn_pack_padded_sequence(x, c(2, 5, 1), batch_first = TRUE, enforce_sorted = FALSE),
               "lengths must lie in 1..4", class = "rcuda_value_error")
})

test_that("pack_sequence and pad_packed_sequence round trip, with padding and total_length", {
  p <- nn_utils_rnn_pack_sequence(list(torch_tensor(c(1, 2, 3)), torch_tensor(c(4, 5)), torch_tensor(6)))
  expect_equal(as_array(p$data), c(1, 4, 6, 2, 5, 3))
  expect_equal(as_array(p$batch_sizes), c(3, 2, 1))
  seq <- torch_tensor(rbind(c(1, 2, 0), c(3, 0, 0), c(4, 5, 6)))
  packed <- nn_utils_rnn_pack_padded_sequence(seq, c(2, 1, 3), batch_first = TRUE, enforce_sorted = FALSE)
  o <- nn_utils_rnn_pad_packed_sequence(packed, batch_first = TRUE)
  expect_equal(as_array(o[[1]]), as_array(seq))
  expect_equal(as_array(o[[2]]), c(2, 1, 3))
  o <- nn_utils_rnn_pad_packed_sequence(packed, batch_first = TRUE, padding_value = -1, total_length = 5)
  expect_equal(as_array(o[[1]]), rbind(c(1, 2, -1, -1, -1), c(3, -1, -1, -1, -1), c(4, 5, 6, -1, -1)))
  expect_error(nn_utils_rnn_pad_packed_sequence(packed, total_length = 2), "less than the longest",
               class = "rcuda_value_error")
  expect_error(nn_utils_rnn_pad_packed_sequence(seq), "must be a PackedSequence", class = "rcuda_value_error")
})

test_that("recurrent layers over a PackedSequence equal each sequence run alone", {
  for (device in test_devices()) {
    lengths <- c(3, 5, 1, 5, 2)
    features <- 4
    # (cuDNN's RNN has no float64: float32 on CUDA, with TF32 tensor cores as PyTorch's default)
    dtype <- if (device == "cpu") torch_float64() else torch_float32()
    tol <- if (device == "cpu") 1e-10 else 1e-3
    seqs <- lapply(lengths, function(n) torch_randn(n, features, dtype = dtype, device = device))
    for (make in list(function() nn_lstm(features, 3, num_layers = 2, bidirectional = TRUE),
                      function() nn_gru(features, 3),
                      function() nn_rnn(features, 3, nonlinearity = "relu", bidirectional = TRUE))) {
      m <- make()$to(dtype = dtype, device = device)
      lstm <- inherits(m, "nn_lstm")
      dirs <- if (m$bidirectional) 2 else 1
      states <- dirs * m$num_layers
      h0 <- torch_randn(states, length(lengths), 3, dtype = dtype, device = device)
      c0 <- torch_randn(states, length(lengths), 3, dtype = dtype, device = device)
      hx <- if (lstm) list(h0, c0) else h0
      packed <- nn_utils_rnn_pack_sequence(seqs, enforce_sorted = FALSE)
      res <- m(packed, hx)
      expect_s3_class(res[[1]], "PackedSequence")
      out <- nn_utils_rnn_pad_packed_sequence(res[[1]], batch_first = TRUE)
      expect_equal(as_array(out[[2]]), lengths)
      padded <- as_array(out[[1]])
      h_n <- as_array(if (lstm) res[[2]][[1]] else res[[2]])
      for (b in seq_along(lengths)) {
        one_hx <- if (lstm) list(h0[, b, ]$unsqueeze(2), c0[, b, ]$unsqueeze(2)) else h0[, b, ]$unsqueeze(2)
        alone <- m(seqs[[b]]$unsqueeze(2), one_hx)
        # (c(): a length-1 sequence or a single state drops a dim on one side only)
        expect_equal(c(padded[b, seq_len(lengths[b]), ]), c(as_array(alone[[1]][, 1, ])), tolerance = tol)
        if (lengths[b] < max(lengths)) expect_true(all(padded[b, -seq_len(lengths[b]), ] == 0))
        expect_equal(c(h_n[, b, ]), c(as_array((if (lstm) alone[[2]][[1]] else alone[[2]])[, 1, ])),
                     tolerance = tol)
      }
    }
  }
})

test_that("gradients flow through packing to the inputs and the weights", {
  m <- nn_gru(2, 3)$to(dtype = torch_float64())
  seqs <- lapply(c(4, 2, 3), function(n) torch_randn(n, 2, dtype = torch_float64())$requires_grad_(TRUE))
  res <- m(nn_utils_rnn_pack_sequence(seqs, enforce_sorted = FALSE))
  (res[[1]]$data$sum() + res[[2]]$sum())$backward()
  packed_grads <- lapply(seqs, function(s) as_array(s$grad))
  weight_grad <- as_array(m$weight_hh_l1$grad)
  m$zero_grad()
  alone <- lapply(seqs, function(s) s$detach()$requires_grad_(TRUE))
  total <- Reduce(`+`, lapply(alone, function(s) {
    r <- m(s$unsqueeze(2))
    r[[1]]$sum() + r[[2]]$sum()
  }))
  total$backward()
  for (i in seq_along(seqs)) expect_equal(packed_grads[[i]], as_array(alone[[i]]$grad), tolerance = 1e-10)
  expect_equal(weight_grad, as_array(m$weight_hh_l1$grad), tolerance = 1e-10)
})
