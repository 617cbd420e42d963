# torch_fft_fftfreq() and torch_fft_rfftfreq() against numpy's definitions written out in base
# R, and torch's reduction enum values.

test_that("fftfreq gives the FFT's frequencies in its order", {
  for (n in c(0, 1, 2, 5, 8, 9)) {
    for (d in c(1, 0.25, -2)) {
      k <- seq_len(n) - 1
      reference <- ifelse(k <= (n - 1) %/% 2, k, k - n) / (d * n)
      out <- torch_fft_fftfreq(n, d, dtype = torch_float64())
      expect_equal(as.numeric(as_array(out)), reference, tolerance = 1e-15)
      rout <- torch_fft_rfftfreq(n, d = d, dtype = torch_float64())
      expect_equal(as.numeric(as_array(rout)), if (n == 0) numeric(0) else (0:(n %/% 2)) / (d * n), tolerance = 1e-15)
    }
  }
  # Against the FFT itself: a cosine at frequency f peaks at the bins whose frequency is +-f.
  n <- 16
  f <- 3 / 16
  peaks <- which(Mod(fft(cos(2 * pi * f * (seq_len(n) - 1)))) > 1)
  expect_equal(sort(abs(as_array(torch_fft_fftfreq(n))[peaks])), c(f, f), tolerance = 1e-7)
  expect_true(torch_fft_fftfreq(4)$dtype == torch_get_default_dtype())
  expect_true(torch_fft_rfftfreq(4, requires_grad = TRUE)$requires_grad)
})

test_that("fftfreq's bad arguments are errors naming them", {
  expect_error(torch_fft_fftfreq(-1), "torch_fft_fftfreq: n must be a whole number >= 0, got -1", fixed = TRUE)
  expect_error(torch_fft_fftfreq(2.5), "torch_fft_fftfreq: n must be a whole number >= 0, got 2.5", fixed = TRUE)
  expect_error(torch_fft_rfftfreq(4, d = 0), "torch_fft_rfftfreq: d (the sample spacing) must be a nonzero number, got 0",
               fixed = TRUE)
  expect_error(torch_fft_rfftfreq(4, layout = torch_sparse_coo()), "torch_fft_rfftfreq: layout", fixed = TRUE)
})

test_that("the reduction enum has LibTorch's values", {
  expect_identical(c(torch_reduction_none(), torch_reduction_mean(), torch_reduction_sum()), c(0, 1, 2))
})

test_that("torch_norm(dtype =) computes in that dtype", {
  a <- matrix(runif(6), 2, 3)
  x <- torch_tensor(a)
  out <- torch_norm(x, dim = 2, dtype = torch_float64())
  expect_true(out$dtype == torch_float64())
  expect_equal(as_array(out), sqrt(rowSums(as_array(x$double())^2)), tolerance = 1e-14)
  expect_equal(x$norm(p = 1, dtype = torch_float64())$item(), sum(abs(as_array(x$double()))), tolerance = 1e-14)
  expect_error(torch_norm(x, dtype = "nonsense"), "nonsense")
})

test_that("permute's dims of 0 are refused in torch for R's words", {
  x <- torch_randn(2, 3, 4)
  expect_error(x$permute(c(2, 1, 0)), "Indexing starts at 1 but found a 0.", fixed = TRUE)
  expect_error(torch_permute(x, c(0, 1, 2)), "permute: dims c(0, 1, 2) count from 1", fixed = TRUE)
  expect_identical(x$permute(c(3, 1, 2))$shape, c(4L, 2L, 3L))
})
