# nnf_embedding_bag / nn_embedding_bag (R/nn-embedding-bag.R) against loops over the weight
# matrix in R: each bag's rows (1-based indices) summed, averaged or maxed.

bag_ref <- function(w, bags, mode, padding_idx = NULL, psw = NULL) {
  t(vapply(seq_along(bags), function(b) {
    idx <- bags[[b]]
    scale <- if (is.null(psw)) rep(1, length(idx)) else psw[[b]]
    keep <- if (is.null(padding_idx)) rep(TRUE, length(idx)) else idx != padding_idx
    rows <- w[idx[keep], , drop = FALSE] * scale[keep]
    if (!nrow(rows)) return(rep(0, ncol(w)))
    switch(mode, sum = colSums(rows), mean = colMeans(rows), max = apply(rows, 2, max))
  }, numeric(ncol(w))))
}

test_that("2-D bags: sum, mean and max of the rows, with padding left out", {
  for (device in test_devices()) {
    w <- matrix(rnorm(10 * 3), 10)
    idx <- matrix(sample.int(10, 12, replace = TRUE), 3)
    W <- torch_tensor(w, dtype = torch_float64(), device = device)
    I <- torch_tensor(idx, dtype = torch_long(), device = device)
    bags <- lapply(seq_len(nrow(idx)), function(i) idx[i, ])
    for (mode in c("sum", "mean", "max")) {
      expect_equal(as_array(nnf_embedding_bag(I, W, mode = mode)), bag_ref(w, bags, mode))
      pad <- idx[1, 1]
      expect_equal(as_array(nnf_embedding_bag(I, W, mode = mode, padding_idx = pad)),
                   bag_ref(w, bags, mode, padding_idx = pad))
    }
  }
})

test_that("1-D input with 0-based offsets, empty bags, include_last_offset, weights", {
  for (device in test_devices()) {
    w <- matrix(rnorm(8 * 2), 8)
    flat <- sample.int(8, 9, replace = TRUE)
    offsets <- c(0, 3, 3, 7)  # bags of 3, 0, 4 and 2 entries
    bags <- list(flat[1:3], integer(0), flat[4:7], flat[8:9])
    W <- torch_tensor(w, dtype = torch_float64(), device = device)
    I <- torch_tensor(flat, dtype = torch_long(), device = device)
    O <- torch_tensor(offsets, dtype = torch_long(), device = device)
    for (mode in c("sum", "mean", "max")) {
      expect_equal(as_array(nnf_embedding_bag(I, W, O, mode = mode)), bag_ref(w, bags, mode))
    }
    expect_equal(as_array(nnf_embedding_bag(I, W, c(offsets, 9), mode = "sum", include_last_offset = TRUE)),
                 bag_ref(w, bags, "sum"))
    psw <- runif(9)
    expect_equal(as_array(nnf_embedding_bag(I, W, O, mode = "sum",
                                            per_sample_weights = torch_tensor(psw, dtype = torch_float64(), device = device))),
                 bag_ref(w, bags, "sum", psw = list(psw[1:3], numeric(0), psw[4:7], psw[8:9])))
    # The weight's gradient: each entry's row gets its bag's output gradient (over the count
    # for "mean").
    Wr <- W$clone()$requires_grad_(TRUE)
    g <- matrix(rnorm(4 * 2), 4)
    (nnf_embedding_bag(I, Wr, O, mode = "mean") * torch_tensor(g, dtype = torch_float64(), device = device))$sum()$backward()
    expected <- matrix(0, 8, 2)
    for (b in seq_along(bags)) for (i in bags[[b]]) expected[i, ] <- expected[i, ] + g[b, ] / length(bags[[b]])
    expect_equal(as_array(Wr$grad), expected)
  }
})

test_that("nn_embedding_bag holds the weight, zeroes the padding row, and checks its input", {
  m <- nn_embedding_bag(10, 3, mode = "sum", padding_idx = 1)
  expect_equal(as_array(m$weight[1, ]), c(0, 0, 0))
  input <- torch_tensor(rbind(c(1, 3, 1, 6), c(2, 4, 1, 5)), dtype = torch_long())
  w <- as_array(m$weight)
  expect_equal(as_array(m(input)), rbind(w[3, ] + w[6, ], w[2, ] + w[4, ] + w[5, ]), tolerance = 1e-6)
  mean_bag <- nn_embedding_bag(10, 3)
  v <- as_array(mean_bag$weight)
  expect_equal(as_array(mean_bag(input))[1, ], colMeans(v[c(1, 3, 1, 6), ]), tolerance = 1e-6)
  W <- torch_randn(10, 3)
  expect_error(nnf_embedding_bag(input, W, offsets = torch_tensor(c(1, 2))), "offsets has to be NULL",
               class = "rcuda_value_error")
  flat <- torch_tensor(c(1, 2, 3), dtype = torch_long())
  expect_error(nnf_embedding_bag(flat, W), "needs offsets", class = "rcuda_value_error")
  expect_error(nnf_embedding_bag(flat, W, c(1, 2)), "start at 0", class = "rcuda_value_error")
  expect_error(nnf_embedding_bag(flat, W, c(0, 2, 1)), "non-decreasing", class = "rcuda_value_error")
  expect_error(nnf_embedding_bag(input, W, mode = "mean", per_sample_weights = torch_ones(2, 4)),
               "only supported for mode", class = "rcuda_value_error")
  expect_error(nnf_embedding_bag(input, W, mode = "median"), "mode must be", class = "rcuda_value_error")
})
