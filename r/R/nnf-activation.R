# torch for R's less common activation functions (nnf_celu, nnf_selu, nnf_hardswish, nnf_mish,
# the shrinks, nnf_threshold, nnf_glu, nnf_prelu, nnf_rrelu, ...), composed from the engine's
# elementwise ops and where, so they record autograd and run on every device those do, and the
# argument checks (act_*) that the nnf_* functions of nn-dropout2d.R, nn-local-response-norm.R,
# nn-pixel-shuffle.R and nn-distance.R share. `inplace = TRUE` writes the result back into the
# input through write_back() (nnf.R). Dims are 1-based, negative from the end.

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
