# distr_multivariate_normal(): the multivariate normal N(loc, Sigma), given by exactly one of
# covariance_matrix (Sigma), precision_matrix (Sigma^-1) or scale_tril (L, lower-triangular with
# a positive diagonal, Sigma = L L^T). Everything is computed from L, kept without broadcasting
# (its batch dims may be fewer than loc's); rsample() is loc + L eps, differentiable in all.

MultivariateNormal <- R6::R6Class(
  "torch_MultivariateNormal",
  inherit = Distribution,
  lock_objects = FALSE,
  public = list(
    .arg_constraints = list(
      loc = constraint_real_vector,
      covariance_matrix = constraint_positive_definite,
      precision_matrix = constraint_positive_definite,
      scale_tril = constraint_lower_cholesky
    ),
    .support = constraint_real_vector,
    has_rsample = TRUE,
    loc = NULL,
    .unbroadcasted_scale_tril = NULL,
    initialize = function(loc, covariance_matrix = NULL, precision_matrix = NULL,
                          scale_tril = NULL, validate_args = NULL) {
      fn <- private$.fn
      loc <- distr_param(loc, fn, "loc")
      if (loc$dim() < 1) {
        value_error(fn, ": loc must be at least one-dimensional, got a 0-dim tensor")
      }
      given <- list(covariance_matrix = covariance_matrix, precision_matrix = precision_matrix,
                    scale_tril = scale_tril)
      given <- Filter(Negate(is.null), given)
      if (length(given) != 1) {
        value_error(fn, ": exactly one of covariance_matrix, precision_matrix or scale_tril ",
                    "must be given, got ", length(given))
      }
      which <- names(given)
      matrix <- distr_param(given[[1]], fn, which, like = loc)
      n <- loc$size(-1)
      if (matrix$dim() < 2 || matrix$size(-1) != n || matrix$size(-2) != n) {
        value_error(fn, ": ", which, " must be ", n, " x ", n, " matrices (loc's last size) ",
                    "with optional leading batch dims, got shape ", shape_string(matrix$shape))
      }
      devices <- c(device_string(loc$device), device_string(matrix$device))
      if (devices[1] != devices[2]) {
        value_error(fn, ": loc and ", which, " must be on one device, got ",
                    paste(devices, collapse = " and "))
      }
      if (!identical(dtype_of(matrix), dtype_of(loc))) {
        dtype <- promote_float_dtypes(c(dtype_of(matrix), dtype_of(loc)))
        matrix <- matrix$to(dtype = dtype)
        loc <- loc$to(dtype = dtype)
      }
      matrix_batch <- utils::head(matrix$shape, -2)
      loc_batch <- utils::head(loc$shape, -1)
      if (!shapes_broadcast(matrix_batch, loc_batch)) {
        value_error(fn, ": the batch dims of loc ", shape_string(loc_batch), " and ", which,
                    " ", shape_string(matrix_batch), " do not broadcast")
      }
      batch_shape <- torch_broadcast_shapes(matrix_batch, loc_batch)
      self$loc <- loc$expand(c(batch_shape, n))
      private$.given <- list(which = which, value = matrix)
      params <- list(loc = loc)
      params[[which]] <- matrix
      super$initialize(batch_shape, n, validate_args = validate_args, params = params)
      self$.unbroadcasted_scale_tril <- switch(which,
        scale_tril = matrix,
        covariance_matrix = linalg_cholesky(matrix),
        precision_matrix = precision_to_scale_tril(matrix)
      )
    },
    expand = function(batch_shape, .instance = NULL) {
      batch_shape <- as.integer(batch_shape)
      n <- self$event_shape
      args <- list(self$loc$expand(c(batch_shape, n)), validate_args = FALSE)
      args[[private$.given$which]] <- private$.given$value$expand(c(batch_shape, n, n))
      self$.expanded(do.call(MultivariateNormal$new, args))
    },
    rsample = function(sample_shape = NULL) {
      shape <- self$.extended_shape(sample_shape)
      eps <- standard_normal(shape, self$loc)
      self$loc + torch_matmul(self$.unbroadcasted_scale_tril, eps$unsqueeze(-1))$squeeze(-1)
    },
    log_prob = function(value) {
      value <- self$.as_value(value, self$loc)
      if (self$.validate_args) self$.validate_sample(value)
      n <- self$event_shape
      m <- batch_mahalanobis(self$.unbroadcasted_scale_tril, value - self$loc)
      -0.5 * (n * log(2 * pi) + m) - self$.half_log_det()
    },
    entropy = function() {
      n <- self$event_shape
      h <- 0.5 * n * (1 + log(2 * pi)) + self$.half_log_det()
      h$expand(self$batch_shape)
    },
    .shown_params = function() c("loc", private$.given$which),
    .half_log_det = function() {
      self$.unbroadcasted_scale_tril$diagonal(dim1 = -2, dim2 = -1)$log()$sum(dim = -1)
    }
  ),
  active = list(
    scale_tril = function() {
      n <- self$event_shape
      self$.unbroadcasted_scale_tril$expand(c(self$batch_shape, n, n))
    },
    covariance_matrix = function() {
      l <- self$.unbroadcasted_scale_tril
      n <- self$event_shape
      torch_matmul(l, l$transpose(-1, -2))$expand(c(self$batch_shape, n, n))
    },
    precision_matrix = function() {
      l <- self$.unbroadcasted_scale_tril
      n <- self$event_shape
      identity <- torch_eye(n, dtype = l$dtype, device = l$device)
      l_inv <- linalg_solve_triangular(l, identity$expand(l$shape), upper = FALSE)
      torch_matmul(l_inv$transpose(-1, -2), l_inv)$expand(c(self$batch_shape, n, n))
    },
    mean = function() self$loc,
    variance = function() {
      n <- self$event_shape
      self$.unbroadcasted_scale_tril$pow(2)$sum(dim = -1)$expand(c(self$batch_shape, n))
    }
  ),
  private = list(.fn = "distr_multivariate_normal", .given = NULL)
)

# L with L L^T = P^-1, from the Cholesky factor of P with its rows and columns reversed (a
# lower factor of the reversed matrix is an upper one of P, whose inverse transposed is L).
precision_to_scale_tril <- function(p) {
  l_flip <- linalg_cholesky(torch_flip(p, c(-2, -1)))
  l_inv <- torch_flip(l_flip, c(-2, -1))$transpose(-2, -1)
  identity <- torch_eye(p$size(-1), dtype = p$dtype, device = p$device)
  linalg_solve_triangular(l_inv, identity$expand(p$shape), upper = FALSE)
}

# The squared Mahalanobis distances |L^-1 diff|^2 over the last dim of diff, shaped
# (sample..., batch..., n), with l of shape (batch'..., n, n) broadcasting to batch. The
# sample dims are moved into the right-hand sides of one triangular solve per batch element
# rather than expanding l over the samples.
batch_mahalanobis <- function(l, diff) {
  n <- diff$size(-1)
  l_batch <- utils::head(l$shape, -2)
  diff_batch <- utils::head(diff$shape, -1)
  n_batch <- length(l_batch)
  if (length(diff_batch) < n_batch) {
    diff <- diff$expand(c(l_batch, n))
    diff_batch <- l_batch
  }
  outer <- utils::head(diff_batch, length(diff_batch) - n_batch)
  inner <- torch_broadcast_shapes(l_batch, utils::tail(diff_batch, n_batch))
  diff <- diff$expand(c(outer, inner, n))$reshape(c(prod(outer), inner, n))
  rhs <- diff$permute(c(seq_len(n_batch) + 1L, n_batch + 2L, 1L))
  solved <- linalg_solve_triangular(l$expand(c(inner, n, n)), rhs, upper = FALSE)
  m <- solved$pow(2)$sum(dim = -2)
  m$permute(c(n_batch + 1L, seq_len(n_batch)))$reshape(c(outer, inner))
}

# Documented in man/distributions.Rd.
#' @export
distr_multivariate_normal <- function(loc, covariance_matrix = NULL, precision_matrix = NULL,
                                      scale_tril = NULL, validate_args = NULL) {
  MultivariateNormal$new(loc, covariance_matrix, precision_matrix, scale_tril, validate_args)
}
