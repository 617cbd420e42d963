# torch for R's less common activations, channel dropout, local response norm, pixel shuffles
# and distances, composed from the engine's elementwise ops, where, narrow, cat and reshape, so
# they record autograd and run on every device those do. `inplace = TRUE` writes the result
# back into the input through write_back() (nnf.R). Dims are 1-based, negative from the end.

# ---- argument checks ----------------------------------------------------------------------

act_number <- function(x, fn, arg) number_arg(x, fn, arg, "a single number")

act_count <- function(x, fn, arg) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || x < 1 || x != round(x)) {
    value_error(fn, ": ", arg, " must be a positive whole number, got ", deparse(x)[1])
  }
  as.integer(x)
}

act_tensor <- function(x, fn, arg = "input", floating = TRUE) {
  if (!is_torch_tensor(x)) value_error(fn, ": ", arg, " must be a tensor, got ", class(x)[1])
  if (floating && !is_floating_dtype(dtype_name(x$dtype))) {
    value_error(fn, ": ", arg, " must be a floating tensor (float16, bfloat16, float32 or float64), got ", dtype_name(x$dtype))
  }
  x
}

# A 1-based dim (negative counts from the end) as a positive index into x's dims.
act_dim <- function(dim, ndim, fn) {
  act_number(dim, fn, "dim")
  if (dim != round(dim) || dim == 0 || dim > ndim || dim < -ndim) {
    value_error(fn, ": dim ", dim, " is out of range for a ", ndim, "-d input (expected 1 to ", ndim, " or -", ndim, " to -1)")
  }
  if (dim < 0) as.integer(ndim + dim + 1) else as.integer(dim)
}

# ---- elementwise activations --------------------------------------------------------------

# The exponential branch sees min(x, 0) only: for x > 0 it is not taken, and an overflowing
# exp there would turn its zero gradient into NaN.
#' @export
nnf_celu <- function(input, alpha = 1, inplace = FALSE) {
  act_tensor(input, "nnf_celu")
  act_number(alpha, "nnf_celu", "alpha")
  if (alpha == 0) value_error("nnf_celu: alpha must be nonzero (it divides the input), got 0")
  negative <- alpha * torch_expm1(torch_clamp(input, max = 0) / alpha)
  write_back(input, torch_where(input > 0, input, negative), inplace)
}

# The constants of Klambauer et al. (2017), as PyTorch spells them.
selu_alpha <- 1.6732632423543772848170429916717
selu_scale <- 1.0507009873554804934193349852946

#' @export
nnf_selu <- function(input, inplace = FALSE) {
  act_tensor(input, "nnf_selu")
  write_back(input, selu_scale * nnf_elu(input, selu_alpha), inplace)
}

#' @export
nnf_hardswish <- function(input, inplace = FALSE) {
  act_tensor(input, "nnf_hardswish")
  write_back(input, input * nnf_hardtanh(input + 3, 0, 6) / 6, inplace)
}

#' @export
nnf_hardsigmoid <- function(input, inplace = FALSE) {
  act_tensor(input, "nnf_hardsigmoid")
  write_back(input, nnf_hardtanh(input + 3, 0, 6) / 6, inplace)
}

#' @export
nnf_mish <- function(input, inplace = FALSE) {
  act_tensor(input, "nnf_mish")
  write_back(input, input * torch_tanh(nnf_softplus(input)), inplace)
}

#' @export
nnf_softsign <- function(input) {
  act_tensor(input, "nnf_softsign", floating = FALSE)
  input / (torch_abs(input) + 1)
}

#' @export
nnf_tanhshrink <- function(input) {
  act_tensor(input, "nnf_tanhshrink", floating = FALSE)
  input - torch_tanh(input)
}

# x - clamp(x, -lambd, lambd) is x - lambd above lambd, x + lambd below -lambd and exactly 0
# between, with gradient 0 there, as PyTorch's softshrink.
#' @export
nnf_softshrink <- function(input, lambd = 0.5) {
  act_tensor(input, "nnf_softshrink")
  act_number(lambd, "nnf_softshrink", "lambd")
  if (lambd < 0) value_error("nnf_softshrink: lambd must be >= 0, got ", lambd)
  input - torch_clamp(input, -lambd, lambd)
}

# masked_fill keeps the input's dtype (where() with a number would promote integers) and
# leaves NaN as it is, as PyTorch.
#' @export
nnf_hardshrink <- function(input, lambd = 0.5) {
  act_tensor(input, "nnf_hardshrink", floating = FALSE)
  act_number(lambd, "nnf_hardshrink", "lambd")
  input$masked_fill(torch_abs(input) <= lambd, 0)
}

#' @export
nnf_threshold <- function(input, threshold, value, inplace = FALSE) {
  act_tensor(input, "nnf_threshold", floating = FALSE)
  if (missing(threshold)) value_error("nnf_threshold: threshold is required")
  if (missing(value)) value_error("nnf_threshold: value is required")
  act_number(threshold, "nnf_threshold", "threshold")
  act_number(value, "nnf_threshold", "value")
  write_back(input, input$masked_fill(input <= threshold, value), inplace)
}

# log(sigmoid(x)) = -softplus(-x), which neither underflows for very negative x nor rounds
# to log(1) = 0 early for large x.
#' @export
nnf_logsigmoid <- function(input) {
  act_tensor(input, "nnf_logsigmoid")
  -nnf_softplus(-input)
}

#' @export
nnf_softmin <- function(input, dim, dtype = NULL) {
  if (missing(dim)) value_error("nnf_softmin: dim is required (the 1-based dim that sums to 1)")
  act_tensor(input, "nnf_softmin")
  torch_softmax(-input, dim, dtype)
}

# The first half along dim, gated by the sigmoid of the second half.
#' @export
nnf_glu <- function(input, dim = -1) {
  act_tensor(input, "nnf_glu")
  if (input$dim() == 0) value_error("nnf_glu: input must have at least 1 dim, got a 0-d tensor")
  d <- act_dim(dim, input$dim(), "nnf_glu")
  n <- input$shape[d]
  if (n %% 2 != 0) value_error("nnf_glu: the size of dim ", dim, " must be even to halve it, got ", n)
  half <- n %/% 2
  input$narrow(d, 1, half) * torch_sigmoid(input$narrow(d, half + 1, half))
}

# weight has one element, or one per channel (dim 2 of input), as PyTorch's prelu.
#' @export
nnf_prelu <- function(input, weight) {
  act_tensor(input, "nnf_prelu")
  act_tensor(weight, "nnf_prelu", "weight")
  if (weight$dim() > 1) value_error("nnf_prelu: weight must be a number or a 1-d tensor, got ", weight$dim(), " dims")
  count <- weight$numel()
  if (count == 1) {
    weight <- weight$reshape(rep(1L, input$dim()))
  } else {
    channels <- if (input$dim() >= 2) input$shape[2] else 1L
    if (channels != count) {
      value_error("nnf_prelu: weight has ", count, " elements but input has ", channels,
                  " channels (dim 2); give one weight, or one per channel")
    }
    weight <- weight$reshape(c(count, rep(1L, input$dim() - 2)))
  }
  torch_where(input > 0, input, weight * input)
}

# Training draws each element's slope uniformly from [lower, upper] with the package's
# generator (torch_manual_seed() repeats them); evaluation uses their mean, a leaky relu.
#' @export
nnf_rrelu <- function(input, lower = 1 / 8, upper = 1 / 3, training = FALSE, inplace = FALSE) {
  act_tensor(input, "nnf_rrelu")
  act_number(lower, "nnf_rrelu", "lower")
  act_number(upper, "nnf_rrelu", "upper")
  if (lower > upper) value_error("nnf_rrelu: lower (", lower, ") must not exceed upper (", upper, ")")
  if (!isTRUE(training)) return(nnf_leaky_relu(input, (lower + upper) / 2, inplace))
  slope <- torch_rand(input$shape, dtype = input$dtype, device = input$device) * (upper - lower) + lower
  write_back(input, torch_where(input > 0, input, input * slope), inplace)
}

# ---- channel dropout ----------------------------------------------------------------------

# As torch for R (PyTorch's feature dropout): one draw per (sample, channel), i.e. over dims 1
# and 2, broadcast over the rest, so whole channels are zeroed; kept ones scale by 1 / (1 - p).
#' @export
nnf_dropout2d <- function(input, p = 0.5, training = TRUE, inplace = FALSE) {
  act_tensor(input, "nnf_dropout2d")
  act_number(p, "nnf_dropout2d", "p")
  if (p < 0 || p > 1) value_error("nnf_dropout2d: p must be a probability in [0, 1], got ", p)
  d <- input$dim()
  if (!d %in% c(3, 4)) {
    warning("nnf_dropout2d: received a ", d, "-d input; dropout2d is for 3-d or 4-d inputs ",
            "(channels and 2 spatial dims), use nnf_dropout for others", call. = FALSE)
  }
  if (d == 3) {
    warning("nnf_dropout2d: a 3-d input is taken as (N, C, L) and whole channels of dim 2 are ",
            "dropped (channel-wise 1-d dropout), as torch for R", call. = FALSE)
  }
  if (!isTRUE(training) || p == 0 || input$numel() == 0) return(input)
  if (p == 1) return(write_back(input, input * 0, inplace))
  if (d < 2) value_error("nnf_dropout2d: input must have at least 2 dims (batch and channel), got ", d)
  shape <- input$shape
  keep <- torch_rand(c(shape[1:2], rep(1L, d - 2)), dtype = input$dtype, device = input$device) < 1 - p
  write_back(input, input * (keep$to(dtype = input$dtype) / (1 - p)), inplace)
}

# ---- local response normalisation ---------------------------------------------------------

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

# ---- pixel shuffles -----------------------------------------------------------------------

act_pixel_dims <- function(input, fn) {
  act_tensor(input, fn, floating = FALSE)
  if (input$dim() < 3) value_error(fn, ": input must have 3 or more dims (*, C, H, W), got ", input$dim())
  shape <- input$shape
  d <- length(shape)
  list(batch = shape[seq_len(d - 3)], c = shape[d - 2], h = shape[d - 1], w = shape[d])
}

# (*, C r^2, H, W) -> (*, C, H r, W r): channel c r^2 + i r + j goes to row h r + i, column w r + j.
#' @export
nnf_pixel_shuffle <- function(input, upscale_factor) {
  s <- act_pixel_dims(input, "nnf_pixel_shuffle")
  r <- act_count(upscale_factor, "nnf_pixel_shuffle", "upscale_factor")
  if (s$c %% (r * r) != 0) {
    value_error("nnf_pixel_shuffle: the channel count (", s$c, ") must be divisible by upscale_factor^2 (", r * r, ")")
  }
  b <- length(s$batch)
  c_out <- s$c %/% (r * r)
  input$reshape(c(s$batch, c_out, r, r, s$h, s$w))$
    permute(c(seq_len(b), b + c(1, 4, 2, 5, 3)))$
    reshape(c(s$batch, c_out, s$h * r, s$w * r))
}

# The inverse: (*, C, H r, W r) -> (*, C r^2, H, W).
#' @export
nnf_pixel_unshuffle <- function(input, downscale_factor) {
  s <- act_pixel_dims(input, "nnf_pixel_unshuffle")
  r <- act_count(downscale_factor, "nnf_pixel_unshuffle", "downscale_factor")
  if (s$h %% r != 0 || s$w %% r != 0) {
    value_error("nnf_pixel_unshuffle: height (", s$h, ") and width (", s$w,
                ") must be divisible by downscale_factor (", r, ")")
  }
  b <- length(s$batch)
  h <- s$h %/% r
  w <- s$w %/% r
  input$reshape(c(s$batch, s$c, h, r, w, r))$
    permute(c(seq_len(b), b + c(1, 3, 5, 2, 4)))$
    reshape(c(s$batch, s$c * r * r, h, w))
}

# ---- distances ----------------------------------------------------------------------------

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

# ---- modules: each forward is its nnf_* function with the module's settings ----------------

#' @export
nn_celu <- nn_module(
  "nn_celu",
  initialize = function(alpha = 1, inplace = FALSE) {
    self$alpha <- alpha
    self$inplace <- inplace
  },
  forward = function(input) nnf_celu(input, self$alpha, self$inplace)
)

#' @export
nn_selu <- nn_module(
  "nn_selu",
  initialize = function(inplace = FALSE) self$inplace <- inplace,
  forward = function(input) nnf_selu(input, self$inplace)
)

#' @export
nn_hardswish <- nn_module(
  "nn_hardswish",
  initialize = function() {},
  forward = function(input) nnf_hardswish(input)
)

#' @export
nn_hardsigmoid <- nn_module(
  "nn_hardsigmoid",
  initialize = function() {},
  forward = function(input) nnf_hardsigmoid(input)
)

#' @export
nn_mish <- nn_module(
  "nn_mish",
  initialize = function(inplace = FALSE) self$inplace <- inplace,
  forward = function(input) nnf_mish(input, self$inplace)
)

#' @export
nn_softsign <- nn_module(
  "nn_softsign",
  initialize = function() {},
  forward = function(input) nnf_softsign(input)
)

#' @export
nn_tanhshrink <- nn_module(
  "nn_tanhshrink",
  initialize = function() {},
  forward = function(input) nnf_tanhshrink(input)
)

#' @export
nn_softshrink <- nn_module(
  "nn_softshrink",
  initialize = function(lambd = 0.5) self$lambd <- lambd,
  forward = function(input) nnf_softshrink(input, self$lambd)
)

#' @export
nn_hardshrink <- nn_module(
  "nn_hardshrink",
  initialize = function(lambd = 0.5) self$lambd <- lambd,
  forward = function(input) nnf_hardshrink(input, self$lambd)
)

#' @export
nn_threshold <- nn_module(
  "nn_threshold",
  initialize = function(threshold, value, inplace = FALSE) {
    self$threshold <- threshold
    self$value <- value
    self$inplace <- inplace
  },
  forward = function(input) nnf_threshold(input, self$threshold, self$value, self$inplace)
)

#' @export
nn_log_sigmoid <- nn_module(
  "nn_log_sigmoid",
  initialize = function() {},
  forward = function(input) nnf_logsigmoid(input)
)

#' @export
nn_softmin <- nn_module(
  "nn_softmin",
  initialize = function(dim) self$dim <- dim,
  forward = function(input) nnf_softmin(input, self$dim)
)

#' @export
nn_glu <- nn_module(
  "nn_glu",
  initialize = function(dim = -1) self$dim <- dim,
  forward = function(input) nnf_glu(input, self$dim)
)

#' @export
nn_prelu <- nn_module(
  "nn_prelu",
  initialize = function(num_parameters = 1, init = 0.25) {
    self$num_parameters <- act_count(num_parameters, "nn_prelu", "num_parameters")
    act_number(init, "nn_prelu", "init")
    self$weight <- nn_parameter(torch_empty(self$num_parameters)$fill_(init))
  },
  forward = function(input) nnf_prelu(input, self$weight)
)

#' @export
nn_rrelu <- nn_module(
  "nn_rrelu",
  initialize = function(lower = 1 / 8, upper = 1 / 3, inplace = FALSE) {
    self$lower <- lower
    self$upper <- upper
    self$inplace <- inplace
  },
  forward = function(input) nnf_rrelu(input, self$lower, self$upper, self$training, self$inplace)
)

#' @export
nn_dropout2d <- nn_module(
  "nn_dropout2d",
  initialize = function(p = 0.5, inplace = FALSE) {
    if (!is.numeric(p) || length(p) != 1 || is.na(p) || p < 0 || p > 1) {
      value_error("nn_dropout2d: p must be a probability in [0, 1], got ", deparse(p)[1])
    }
    self$p <- p
    self$inplace <- inplace
  },
  forward = function(input) nnf_dropout2d(input, self$p, self$training, self$inplace)
)

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

#' @export
nn_pixel_shuffle <- nn_module(
  "nn_pixel_shuffle",
  initialize = function(upscale_factor) self$upscale_factor <- upscale_factor,
  forward = function(input) nnf_pixel_shuffle(input, self$upscale_factor)
)

#' @export
nn_pixel_unshuffle <- nn_module(
  "nn_pixel_unshuffle",
  initialize = function(downscale_factor) self$downscale_factor <- downscale_factor,
  forward = function(input) nnf_pixel_unshuffle(input, self$downscale_factor)
)

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
