# torch_fft_fftfreq() and torch_fft_rfftfreq(): the sample frequencies of a discrete Fourier
# transform, as torch for R's (PyTorch's torch.fft.fftfreq). They need no FFT: each is a
# formula over 0..n-1, computed in double precision in R and made a tensor of `dtype`.

fft_freq_args <- function(n, d, fn) {
  if (!is.numeric(n) || length(n) != 1 || is.na(n) || n != trunc(n) || n < 0) {
    value_error(fn, ": n must be a whole number >= 0, got ", describe_value(n))
  }
  if (!is.numeric(d) || length(d) != 1 || is.na(d) || d == 0) {
    value_error(fn, ": d (the sample spacing) must be a nonzero number, got ", describe_value(d))
  }
}

fft_freq_tensor <- function(values, dtype, layout, device, requires_grad, fn) {
  check_layout(layout, fn)
  if (is.null(dtype)) dtype <- torch_get_default_dtype()
  with_requires_grad(torch_tensor(values, dtype = dtype, device = creation_device(device)), requires_grad)
}

#' Sample frequencies of a discrete Fourier transform
#'
#' `torch_fft_fftfreq(n, d)` gives the frequencies of an FFT of `n` samples spaced `d` apart:
#' `c(0, 1, ..., ceiling(n / 2) - 1, -floor(n / 2), ..., -1) / (d * n)`.
#' `torch_fft_rfftfreq(n, d)` gives those of a one-sided (real) FFT: `0:floor(n / 2) / (d * n)`.
#'
#' @param n the number of samples (a whole number >= 0).
#' @param d the sample spacing (nonzero); the frequencies are in cycles per unit of `d`.
#' @param dtype the dtype of the result (the default dtype when `NULL`).
#' @param layout `NULL` or [torch_strided()].
#' @param device the device of the result.
#' @param requires_grad whether the result requires grad.
#' @export
torch_fft_fftfreq <- function(n, d = 1, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  fn <- "torch_fft_fftfreq"
  fft_freq_args(n, d, fn)
  k <- seq_len(n) - 1
  values <- ifelse(k < ceiling(n / 2), k, k - n) / (d * n)
  fft_freq_tensor(values, dtype, layout, device, requires_grad, fn)
}

#' @rdname torch_fft_fftfreq
#' @export
torch_fft_rfftfreq <- function(n, d = 1, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  fn <- "torch_fft_rfftfreq"
  fft_freq_args(n, d, fn)
  values <- if (n == 0) numeric(0) else seq(0, floor(n / 2)) / (d * n)
  fft_freq_tensor(values, dtype, layout, device, requires_grad, fn)
}
