# Distances between rows (nnf_cosine_similarity, nnf_pairwise_distance and their modules),
# composed from the reductions and the elementwise ops. Dims are 1-based, negative from the end.

act_broadcast_shape <- function(a, b, fn) {
  n <- max(length(a), length(b))
  a <- c(rep(1L, n - length(a)), a)
  b <- c(rep(1L, n - length(b)), b)
  if (any(a != b & a != 1 & b != 1)) {
    value_error(fn, ": shapes [", paste(a, collapse = ", "), "] and [", paste(b, collapse = ", "),
                "] do not broadcast")
  }
  pmax(a, b) * (a != 0 & b != 0)
}

# As PyTorch: each input is divided by its own norm, clamped below at eps, before the dot
# product (which keeps the result within [-1, 1]). The clamp is applied without gradient, as
# PyTorch's in-place clamp under no_grad, so the gradient flows through the norm.
#' @export
nnf_cosine_similarity <- function(x1, x2, dim = 2, eps = 1e-8) {
  act_tensor(x1, "nnf_cosine_similarity", "x1")
  act_tensor(x2, "nnf_cosine_similarity", "x2")
  act_number(eps, "nnf_cosine_similarity", "eps")
  shape <- act_broadcast_shape(x1$shape, x2$shape, "nnf_cosine_similarity")
  d <- act_dim(dim, length(shape), "nnf_cosine_similarity")
  unit <- function(x) {
    x <- x$expand(shape)
    norm <- torch_norm(x, 2, d, keepdim = TRUE)
    x / (norm + (torch_clamp(norm, min = eps) - norm)$detach())
  }
  (unit(x1) * unit(x2))$sum(dim = d)
}

# ||x1 - x2 + eps||_p over the last dim, as PyTorch.
#' @export
nnf_pairwise_distance <- function(x1, x2, p = 2, eps = 1e-6, keepdim = FALSE) {
  act_tensor(x1, "nnf_pairwise_distance", "x1")
  act_tensor(x2, "nnf_pairwise_distance", "x2")
  act_number(p, "nnf_pairwise_distance", "p")
  act_number(eps, "nnf_pairwise_distance", "eps")
  if (p < 0) value_error("nnf_pairwise_distance: p must be >= 0, got ", p)
  if (x1$dim() == 0 && x2$dim() == 0) value_error("nnf_pairwise_distance: x1 and x2 must have at least 1 dim")
  torch_norm(x1 - x2 + eps, p, -1, keepdim = keepdim)
}

#' @export
nn_cosine_similarity <- nn_module(
  "nn_cosine_similarity",
  initialize = function(dim = 2, eps = 1e-8) {
    self$dim <- dim
    self$eps <- eps
  },
  forward = function(x1, x2) nnf_cosine_similarity(x1, x2, self$dim, self$eps)
)

#' @export
nn_pairwise_distance <- nn_module(
  "nn_pairwise_distance",
  initialize = function(p = 2, eps = 1e-6, keepdim = FALSE) {
    self$norm <- p
    self$eps <- eps
    self$keepdim <- keepdim
  },
  forward = function(x1, x2) nnf_pairwise_distance(x1, x2, self$norm, self$eps, self$keepdim)
)
