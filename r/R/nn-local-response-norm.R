# Local response normalisation across channels (nnf_local_response_norm,
# nn_local_response_norm), composed from pad, avg_pool and the elementwise ops.

# x / (k + alpha / size * sum of x^2 over the channels c - size %/% 2 .. c + (size - 1) %/% 2)^beta,
# channels outside 1..C counting as 0 (torch's zero-padded average pool over dim 2).
#' @export
nnf_local_response_norm <- function(input, size, alpha = 1e-4, beta = 0.75, k = 1) {
  act_tensor(input, "nnf_local_response_norm")
  if (missing(size)) value_error("nnf_local_response_norm: size is required")
  size <- act_count(size, "nnf_local_response_norm", "size")
  for (arg in c("alpha", "beta", "k")) act_number(get(arg), "nnf_local_response_norm", arg)
  if (input$dim() < 3) {
    value_error("nnf_local_response_norm: input must have 3 or more dims (N, C, ...), got ", input$dim())
  }
  shape <- input$shape
  channels <- shape[2]
  zeros <- function(n) {
    torch_zeros(replace(shape, 2, n), dtype = input$dtype, device = input$device)
  }
  before <- size %/% 2
  after <- (size - 1) %/% 2
  padded <- torch_cat(list(zeros(before), input * input, zeros(after)), 2)
  total <- padded$narrow(2, 1, channels)
  for (i in seq_len(size - 1)) total <- total + padded$narrow(2, i + 1, channels)
  input / (total * (alpha / size) + k)$pow(beta)
}

#' @export
nn_local_response_norm <- nn_module(
  "nn_local_response_norm",
  initialize = function(size, alpha = 1e-4, beta = 0.75, k = 1) {
    self$size <- size
    self$alpha <- alpha
    self$beta <- beta
    self$k <- k
  },
  forward = function(input) nnf_local_response_norm(input, self$size, self$alpha, self$beta, self$k)
)
