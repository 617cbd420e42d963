# torch for R's smaller conveniences: the *_as and new_* methods, diff, index_fill,
# masked_scatter, renorm, the random draws (bernoulli, poisson, multinomial and the in-place
# fills) and the window functions. Each is a composition of rcuda's own ops, so it records for
# autograd and runs on the CPU and CUDA alike. Dims and indices count from 1, as in torch for R.
#
# Note [Random draws from the default generator]
# Every draw here starts from torch_rand() (torch_randn(), torch_randint()) on the target's device, so
# torch_manual_seed() repeats it, on the CPU and the GPU alike, as for rcuda's $uniform_().
# Uniforms are drawn in float64 unless the target is float32 (whose precision is all its
# draws can hold), then transformed (inverse CDFs, Hoermann's rejection for Poisson) and cast
# to the target's dtype. The in-place fills write with inplace() (Note [In-place methods as
# copies]), so they refuse what every in-place method refuses. A torch_generator() given as
# `generator` supplies the draws instead (Note [Generator objects] in R/generator.R).

convenience_tensor <- function(x, fn, arg) {
  if (!is_torch_tensor(x)) value_error(fn, ": ", arg, " must be a tensor, got ", describe(x))
  x
}

convenience_number <- function(x, fn, arg, ok, expected) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || !ok(x)) {
    value_error(fn, ": ", arg, " must be ", expected, ", got ", deparse(x, nlines = 1)[1])
  }
  x
}

dtype_of <- function(x) .Call(rc_meta, x)[[2]]

# Uniform [0, 1) draws of `shape` on x's device (Note [Random draws from the default generator]).
uniform_draws <- function(x, shape = x$shape) {
  draw_dtype <- if (dtype_of(x) == "float32") "float32" else "float64"
  torch_rand(shape, dtype = draw_dtype, device = x$device)
}

# ---- methods that take their shape or dtype from another tensor ---------------------------

m <- tensor_methods
m$expand_as <- function(self, other) self$expand(convenience_tensor(other, "expand_as", "other")$shape)
m$view_as <- function(self, other) self$view(convenience_tensor(other, "view_as", "other")$shape)
m$reshape_as <- function(self, other) self$reshape(convenience_tensor(other, "reshape_as", "other")$shape)
m$type_as <- function(self, other) self$to(dtype = convenience_tensor(other, "type_as", "other")$dtype)
m$nelement <- function(self) self$numel()
m$is_floating_point <- function(self) is_floating_dtype(dtype_of(self))
m$is_complex <- function(self) is_complex_dtype(dtype_of(self))

# torch for R's new_*(size, options): options holds dtype, device and requires_grad, which
# default to self's dtype and device and FALSE.
new_options <- function(self, options, fn) {
  if (!is.list(options)) value_error(fn, ": options must be a list (dtype, device, requires_grad), got ", describe(options))
  unknown <- setdiff(names(options), c("dtype", "device", "requires_grad"))
  if (length(unknown) || (length(options) && is.null(names(options)))) {
    value_error(fn, ": options may hold dtype, device and requires_grad, got ",
                paste(if (length(unknown)) unknown else "an unnamed entry", collapse = ", "))
  }
  list(dtype = options$dtype %||% self$dtype, device = options$device %||% self$device,
       requires_grad = options$requires_grad %||% FALSE)
}
new_like <- function(self, fn, size, fill, options) {
  o <- new_options(self, options, fn)
  t <- filled(fill$kind, size_value(size, fn), fill$value, o$dtype, o$device, FALSE)
  with_requires_grad(t, o$requires_grad)
}
m$new_zeros <- function(self, size, options = list()) new_like(self, "new_zeros", size, list(kind = "zeros"), options)
m$new_ones <- function(self, size, options = list()) new_like(self, "new_ones", size, list(kind = "ones"), options)
m$new_empty <- function(self, size, options = list()) new_like(self, "new_empty", size, list(kind = "empty"), options)
m$new_full <- function(self, size, fill_value, options = list()) {
  new_like(self, "new_full", size, list(kind = "full", value = fill_value), options)
}
# As PyTorch's: data takes self's dtype and device unless given (not the dtype data would infer).
m$new_tensor <- function(self, data, dtype = NULL, device = NULL, requires_grad = FALSE) {
  torch_tensor(data, dtype = dtype %||% self$dtype, device = device %||% self$device, requires_grad = requires_grad)
}

m$diff <- function(self, n = 1L, dim = -1L, prepend = list(), append = list()) torch_diff(self, n, dim, prepend, append)
m$index_fill <- function(self, dim, index, value) torch_index_fill(self, dim, index, value)
m$index_fill_ <- function(self, dim, index, value) inplace("index_fill_", self, torch_index_fill, dim, index, value)
m$masked_scatter <- function(self, mask, source) torch_masked_scatter(self, mask, source)
m$masked_scatter_ <- function(self, mask, source) inplace("masked_scatter_", self, torch_masked_scatter, mask, source)
m$renorm <- function(self, p, dim, maxnorm) torch_renorm(self, p, dim, maxnorm)
m$clamp_max <- function(self, max) torch_clamp_max(self, max)
m$clamp_min <- function(self, min) torch_clamp_min(self, min)
rm(m)

#' @export
torch_numel <- function(self) convenience_tensor(self, "torch_numel", "self")$numel()

#' @export
torch_is_floating_point <- function(self) convenience_tensor(self, "torch_is_floating_point", "self")$is_floating_point()

#' @export
torch_is_complex <- function(self) convenience_tensor(self, "torch_is_complex", "self")$is_complex()

# As torch for R: the function's `start` counts from 0 (its binding passes it to libtorch
# untranslated: -1 is the last position), while the method $narrow_copy(), like narrow,
# counts from 1.
#' @export
torch_narrow_copy <- function(self, dim, start, length) {
  self <- as_tensor_arg(self)
  start <- number_arg(start, "torch_narrow_copy", "start", "one number")
  if (start < 0) start <- start + self$size(dim)
  self$narrow_copy(dim, start + 1, length)
}

#' @export
torch_one_hot <- function(self, num_classes = -1L) nnf_one_hot(self, num_classes)

# A tensor max (or min) broadcasts as torch_maximum does; a number goes to torch_clamp.
#' @export
torch_clamp_max <- function(self, max) {
  self <- as_tensor_arg(self)
  if (is_torch_tensor(max)) torch_minimum(self, max) else torch_clamp(self, max = max)
}

#' @export
torch_clamp_min <- function(self, min) {
  self <- as_tensor_arg(self)
  if (is_torch_tensor(min)) torch_maximum(self, min) else torch_clamp(self, min = min)
}

# ---- diff, vander, index_fill, masked_scatter, renorm -------------------------------------

# n-th forward difference along dim after joining prepend and append there; bool tensors differ
# by xor, as in torch.
#' @export
torch_diff <- function(self, n = 1L, dim = -1L, prepend = list(), append = list()) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_diff", "self")
  convenience_number(n, "torch_diff", "n", function(v) v >= 0 && v == trunc(v), "a whole number >= 0")
  if (self$dim() == 0) value_error("torch_diff: self must have at least one dim, got a 0-d tensor")
  dim <- extra_dim(dim, self$dim(), "torch_diff", "dim")
  given <- function(x) !is.null(x) && !(is.list(x) && length(x) == 0)
  parts <- list(if (given(prepend)) as_tensor_arg(prepend), self, if (given(append)) as_tensor_arg(append))
  x <- if (length(Filter(Negate(is.null), parts)) > 1) torch_cat(Filter(Negate(is.null), parts), dim) else self
  for (i in seq_len(n)) {
    len <- x$size(dim)
    if (len == 0) break
    later <- x$narrow(dim, 2, len - 1)
    earlier <- x$narrow(dim, 1, len - 1)
    x <- if (dtype_of(x) == "bool") torch_logical_xor(later, earlier) else later - earlier
  }
  x
}

# Columns x^(N-1) ... x^0 (increasing: x^0 ... x^(N-1)), as a cumulative product of x so that
# gradients at x = 0 are the polynomial's (pow would give 0 * x^-1 there).
#' @export
torch_vander <- function(x, N = NULL, increasing = FALSE) {
  x <- convenience_tensor(as_tensor_arg(x), "torch_vander", "x")
  if (x$dim() != 1) value_error("torch_vander: x must be a 1-d tensor, got ", x$dim(), " dims")
  N <- N %||% x$size(1)
  convenience_number(N, "torch_vander", "N", function(v) v >= 0 && v == trunc(v), "a whole number >= 0")
  extra_flag(increasing, "torch_vander", "increasing")
  # Integer x gives int64 powers, as in torch.
  if (!is_floating_dtype(dtype_of(x))) x <- x$to(dtype = "int64")
  if (N == 0) return(x$new_zeros(c(x$size(1), 0)))
  column <- x$unsqueeze(2)
  powers <- torch_cat(list(torch_ones_like(column), column$expand(c(x$size(1), N - 1))), 2)$cumprod(2)
  if (increasing) powers else powers$flip(2)
}

# The 1-based positions of index along a dim of length `size`, as a bool mask shaped to
# broadcast against an ndim-d tensor.
dim_mask <- function(index, size, dim, ndim, device, fn) {
  if (is.numeric(index) && !is.object(index)) index <- torch_tensor(index, dtype = "int64", device = device)
  if (!is_torch_tensor(index) || !dtype_of(index) %in% c("int64", "int32", "int16", "int8", "uint8") || index$dim() > 1) {
    value_error(fn, ": index must be a 1-d integer tensor of 1-based positions, got ",
                if (is_torch_tensor(index)) paste0(index$dim(), "-d ", dtype_of(index)) else describe(index))
  }
  index <- index$to(dtype = "int64")$flatten()
  if (index$numel() > 0) {
    bad <- index$masked_select((index < 1) | (index > size))
    if (bad$numel() > 0) {
      index_error(fn, ": index ", bad[1]$item(), " is out of range for a dim of size ", size, " (index values count from 1)")
    }
  }
  hits <- torch_zeros(size, dtype = "int64", device = device)$index_add(1, index, torch_ones_like(index))
  shape <- rep(1, ndim)
  shape[dim] <- size
  (hits > 0)$reshape(shape)
}

# self with the slices at 1-based `index` along dim set to value (a number or a 0-d tensor).
#' @export
torch_index_fill <- function(self, dim, index, value) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_index_fill", "self")
  if (self$dim() == 0) value_error("torch_index_fill: self must have at least one dim, got a 0-d tensor")
  dim <- extra_dim(dim, self$dim(), "torch_index_fill", "dim")
  if (is_torch_tensor(value)) {
    if (value$dim() != 0) value_error("torch_index_fill: a tensor value must be 0-d, got ", value$dim(), " dims")
    # A 0-d value on another device is a number, as torch's index_fill takes it (a CPU
    # scalar for a CUDA tensor).
    value <- value$to(device = self$device, dtype = self$dtype)
  } else {
    if (!(is.numeric(value) || is.logical(value)) || length(value) != 1 || is.na(value)) {
      value_error("torch_index_fill: value must be a number or a 0-d tensor, got ", deparse(value, nlines = 1)[1])
    }
    value <- torch_scalar_tensor(value, dtype = self$dtype, device = self$device)
  }
  mask <- dim_mask(index, self$size(dim), dim, self$dim(), self$device, "torch_index_fill")
  torch_where(mask, value, self)
}

# self with source's leading elements written, in row-major order, where mask is TRUE.
#' @export
torch_masked_scatter <- function(self, mask, source) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_masked_scatter", "self")
  mask <- convenience_tensor(mask, "torch_masked_scatter", "mask")
  source <- convenience_tensor(source, "torch_masked_scatter", "source")
  if (dtype_of(mask) != "bool") value_error("torch_masked_scatter: mask must be a bool tensor, got ", dtype_of(mask))
  if (dtype_of(source) != dtype_of(self)) {
    value_error("torch_masked_scatter: source must have self's dtype ", dtype_of(self), ", got ", dtype_of(source))
  }
  both <- torch_broadcast_tensors(list(self, mask))
  flat_mask <- both[[2]]$flatten()
  wanted <- flat_mask$sum()$item()
  if (wanted > source$numel()) {
    value_error("torch_masked_scatter: mask selects ", wanted, " elements but source has only ", source$numel())
  }
  if (wanted == 0) return(both[[1]]$clone())
  # The k-th TRUE takes source's k-th element; positions under FALSE take any valid index.
  take <- flat_mask$to(dtype = "int64")$cumsum(1)$clamp(min = 1)$to(dtype = "int64")
  values <- source$flatten()$gather(1, take)
  torch_where(flat_mask, values, both[[1]]$flatten())$reshape(both[[1]]$shape)
}

# Each slice along dim whose p-norm exceeds maxnorm, scaled to norm maxnorm (torch's factor
# maxnorm / (norm + 1e-7)).
#' @export
torch_renorm <- function(self, p, dim, maxnorm) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_renorm", "self")
  if (!is_floating_dtype(dtype_of(self))) value_error("torch_renorm: self must be a floating tensor, got ", dtype_of(self))
  convenience_number(p, "torch_renorm", "p", function(v) v > 0, "a number > 0")
  convenience_number(maxnorm, "torch_renorm", "maxnorm", function(v) v >= 0, "a number >= 0")
  if (self$dim() == 0) value_error("torch_renorm: self must have at least one dim, got a 0-d tensor")
  dim <- extra_dim(dim, self$dim(), "torch_renorm", "dim")
  others <- setdiff(seq_len(self$dim()), dim)
  norm <- if (length(others)) torch_norm(self, p, dim = others, keepdim = TRUE) else self$abs()
  factor <- torch_where(norm > maxnorm, maxnorm / (norm + 1e-7), torch_ones_like(norm))
  self * factor
}

# ---- random draws (Note [Random draws from the default generator]) ------------------------

# Probabilities p as a tensor for self: a number in [0, 1] or a tensor of them.
bernoulli_p <- function(p, self, fn) {
  if (is_torch_tensor(p)) {
    if (p$numel() > 0 && ((p < 0) | (p > 1))$any()$item()) value_error(fn, ": p must hold probabilities in [0, 1]")
    return(p$to(device = self$device))
  }
  convenience_number(p, fn, "p", function(v) v >= 0 && v <= 1, "a probability in [0, 1] or a tensor of them")
}

bernoulli_draw <- function(self, p, fn) {
  p <- bernoulli_p(p, self, fn)
  (uniform_draws(self) < p)$to(dtype = self$dtype)
}

# self's probabilities drawn (p missing), or p's (a number or a tensor) at self's shape.
#' @export
torch_bernoulli <- function(self, p, generator = NULL) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_bernoulli", "self")
  if (missing(p)) {
    if (!is_floating_dtype(dtype_of(self))) value_error("torch_bernoulli: self must hold floating probabilities, got ", dtype_of(self))
    p <- self$detach()
  }
  with_generator(generator, "torch_bernoulli", function() with_no_grad(bernoulli_draw(self, p, "torch_bernoulli")))
}

# Knuth's product of uniforms below rate 10, Hoermann's transformed rejection (PTRS, 1993) at
# and above, as torch's CPU sampler; each loop runs until every element has its draw.
poisson_draw <- function(rate) {
  out <- torch_zeros_like(rate)
  still <- function(mask) mask$any()$item()
  small <- (rate > 0) & (rate < 10)
  limit <- torch_exp(-rate)
  product <- torch_ones_like(rate)
  while (still(small)) {
    product <- torch_where(small, product * torch_rand_like(rate), product)
    small <- small & (product > limit)
    out <- out + small$to(dtype = out$dtype)
  }
  large <- rate >= 10
  slam <- rate$sqrt()
  b <- 0.931 + 2.53 * slam
  a <- -0.059 + 0.02483 * b
  log_inv_alpha <- torch_log(1.1239 + 1.1328 / (b - 3.4))
  vr <- 0.9277 - 3.6224 / (b - 2)
  while (still(large)) {
    u <- torch_rand_like(rate) - 0.5
    v <- torch_rand_like(rate)
    us <- 0.5 - u$abs()
    k <- ((2 * a / us + b) * u + rate + 0.43)$floor()
    quick <- (us >= 0.07) & (v <= vr)
    rejected <- (k < 0) | ((us < 0.013) & (v > us))
    kept <- torch_log(v) + log_inv_alpha - torch_log(a / (us * us) + b) <=
      -rate + k * torch_log(rate) - torch_lgamma(k + 1)
    accept <- large & (quick | (!rejected & kept))
    out <- torch_where(accept, k, out)
    large <- large & !accept
  }
  out
}

#' @export
torch_poisson <- function(self, generator = NULL) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_poisson", "self")
  if (!is_floating_dtype(dtype_of(self))) value_error("torch_poisson: self must hold floating rates, got ", dtype_of(self))
  rate <- with_no_grad(self$to(dtype = "float64"))
  if (rate$numel() > 0 && ((rate < 0) | rate$isnan())$any()$item()) value_error("torch_poisson: rates must be >= 0")
  with_generator(generator, "torch_poisson", function() with_no_grad(poisson_draw(rate)$to(dtype = self$dtype)))
}

# 1-based category indices (int64), num_samples per row of weights. With replacement: where
# a uniform falls among the cumulative probabilities. Without: the num_samples smallest of
# Exp(1) / weight, which orders the categories as drawing one at a time without replacement.
#' @export
torch_multinomial <- function(self, num_samples, replacement = FALSE, generator = NULL) {
  fn <- "torch_multinomial"
  self <- convenience_tensor(as_tensor_arg(self), fn, "self")
  extra_flag(replacement, fn, "replacement")
  convenience_number(num_samples, fn, "num_samples", function(v) v >= 1 && v == trunc(v), "a whole number >= 1")
  if (!self$dim() %in% 1:2) value_error(fn, ": self must be 1-d or 2-d weights, got ", self$dim(), " dims")
  if (!is_floating_dtype(dtype_of(self))) value_error(fn, ": self must hold floating weights, got ", dtype_of(self))
  with_no_grad({
    w <- self$to(dtype = "float64")
    if (w$dim() == 1) w <- w$unsqueeze(1)
    categories <- w$size(2)
    if (categories == 0) value_error(fn, ": self has no categories")
    if ((!w$isfinite() | (w < 0))$any()$item()) value_error(fn, ": weights must be finite and >= 0")
    positive <- (w > 0)$sum(dim = 2)
    if ((positive == 0)$any()$item()) value_error(fn, ": each row of weights must have a positive sum")
    if (!replacement && (positive < num_samples)$any()$item()) {
      value_error(fn, ": cannot draw ", num_samples, " samples without replacement from a row with only ",
                  positive$min()$item(), " categories of positive weight")
    }
    rows <- w$size(1)
    out <- with_generator(generator, fn, function() if (replacement) {
      cumulative <- w$cumsum(2) / w$sum(dim = 2, keepdim = TRUE)
      u <- torch_rand(c(rows, num_samples, 1), dtype = "float64", device = w$device)
      # Categories passed: those whose cumulative probability is <= u; the last always counts.
      below <- (cumulative$narrow(2, 1, categories - 1)$unsqueeze(2) <= u)
      below$sum(dim = 3)$to(dtype = "int64") + 1L
    } else {
      keys <- -torch_log1p(-torch_rand(c(rows, categories), dtype = "float64", device = w$device)) / w
      torch_topk(keys, num_samples, dim = 2, largest = FALSE)[[2]]$to(dtype = "int64")
    })
  })
  if (self$dim() == 1) out$squeeze(1) else out
}

m <- tensor_methods
m$bernoulli <- function(self, p, generator = NULL) {
  if (missing(p)) torch_bernoulli(self, generator = generator) else torch_bernoulli(self, p, generator)
}
m$bernoulli_ <- function(self, p = 0.5, generator = NULL) {
  if (!is.null(generator)) return(with_generator(generator, "bernoulli_", function() self$bernoulli_(p)))
  inplace("bernoulli_", self, function(x, p) with_no_grad(bernoulli_draw(x, p, "bernoulli_")), p)
}

# The in-place fills drawn from a transform of uniforms; floating self only.
fill_from_uniforms <- function(fn, self, generator, transform) {
  if (!is.null(generator)) return(with_generator(generator, fn, function() fill_from_uniforms(fn, self, NULL, transform)))
  if (!is_floating_dtype(dtype_of(self))) value_error(fn, ": self must be a floating tensor, got ", dtype_of(self))
  inplace(fn, self, function(x) with_no_grad(transform(uniform_draws(x))$to(dtype = x$dtype)))
}
m$exponential_ <- function(self, lambd = 1L, generator = NULL) {
  convenience_number(lambd, "exponential_", "lambd", function(v) v > 0, "a number > 0")
  fill_from_uniforms("exponential_", self, generator, function(u) -torch_log1p(-u) / lambd)
}
m$log_normal_ <- function(self, mean = 1L, std = 2L, generator = NULL) {
  convenience_number(mean, "log_normal_", "mean", is.finite, "a finite number")
  convenience_number(std, "log_normal_", "std", function(v) v > 0, "a number > 0")
  if (!is.null(generator)) return(with_generator(generator, "log_normal_", function() self$log_normal_(mean, std)))
  if (!is_floating_dtype(dtype_of(self))) value_error("log_normal_: self must be a floating tensor, got ", dtype_of(self))
  inplace("log_normal_", self, function(x) {
    with_no_grad(torch_exp(mean + std * torch_randn(x$shape, dtype = "float64", device = x$device))$to(dtype = x$dtype))
  })
}
m$cauchy_ <- function(self, median = 0L, sigma = 1L, generator = NULL) {
  convenience_number(median, "cauchy_", "median", is.finite, "a finite number")
  convenience_number(sigma, "cauchy_", "sigma", function(v) v > 0, "a number > 0")
  fill_from_uniforms("cauchy_", self, generator, function(u) median + sigma * torch_tan(pi * (u - 0.5)))
}
# Trials until the first success, 1, 2, ...: P(k) = (1 - p)^(k - 1) p. Any real dtype.
m$geometric_ <- function(self, p, generator = NULL) {
  convenience_number(p, "geometric_", "p", function(v) v > 0 && v < 1, "a probability in (0, 1)")
  if (!is.null(generator)) return(with_generator(generator, "geometric_", function() self$geometric_(p)))
  inplace("geometric_", self, function(x) {
    with_no_grad({
      u <- torch_rand(x$shape, dtype = "float64", device = x$device)
      (torch_log1p(-u) / log1p(-p))$ceil()$clamp(min = 1)$to(dtype = x$dtype)
    })
  })
}
# Whole numbers in [from, to - 1]; random_(to) draws from [0, to - 1], random_() from [0, the
# largest whole number self's dtype holds exactly], as in torch.
m$random_ <- function(self, from, to, generator = NULL) {
  if (!is.null(generator)) {
    args <- c(list(), if (!missing(from)) list(from = from), if (!missing(to)) list(to = to))
    return(with_generator(generator, "random_", function() do.call(self$random_, args)))
  }
  if (missing(from) && missing(to)) {
    from <- 0
    to <- random_top(dtype_of(self)) + 1
  } else if (missing(to)) {
    to <- from
    from <- 0
  } else if (missing(from)) {
    from <- 0
  }
  convenience_number(from, "random_", "from", function(v) v == trunc(v), "a whole number")
  convenience_number(to, "random_", "to", function(v) v == trunc(v), "a whole number")
  if (from >= to) value_error("random_: from must be less than to, got from = ", from, ", to = ", to)
  dtype <- dtype_of(self)
  top <- random_top(dtype)
  bottom <- if (dtype %in% c("bool", "uint8")) 0 else if (is_floating_dtype(dtype)) -top else -top - 1
  if (from < bottom || to - 1 > top) {
    value_error("random_: [from, to - 1] = [", from, ", ", to - 1, "] must lie in [", bottom, ", ", top,
                "], the whole numbers ", dtype, " holds exactly")
  }
  inplace("random_", self, function(x) {
    torch_randint(from, to, x$shape, dtype = "int64", device = x$device)$to(dtype = x$dtype)
  })
}
rm(m)

# The largest whole number random_() draws for a dtype: 2^digits for floating ones, the
# largest value for integer ones (int64's capped at 2^53, what a double argument holds).
random_top <- function(dtype) {
  switch(dtype, float64 = 2^53, float32 = 2^24, float16 = 2^11, bfloat16 = 2^8, bool = 1,
         uint8 = 255, int8 = 127, int16 = 2^15 - 1, int32 = 2^31 - 1, int64 = 2^53)
}

# ---- windows -------------------------------------------------------------------------------

# The n = 0 ... L - 1 positions of a symmetric window of length L (periodic: L + 1, the last
# dropped), in float64 on device, with the denominator N the closed forms divide by.
window_positions <- function(fn, window_length, periodic, layout, device) {
  convenience_number(window_length, fn, "window_length", function(v) v >= 0 && v == trunc(v), "a whole number >= 0")
  extra_flag(periodic, fn, "periodic")
  check_layout(layout, fn)
  # Windows of length 0 and 1 are all ones. Whole-number ends keep torch_arange exact (its
  # float64 end, nudged by one epsilon, would drop the last position).
  n <- if (window_length >= 2) {
    torch_arange(0L, as.integer(window_length) - 1L, device = device)$to(dtype = "float64")
  } else {
    torch_zeros(window_length, dtype = "float64", device = device)
  }
  list(n = n,
       N = if (periodic) window_length else window_length - 1)
}

window_result <- function(fn, values, window_length, dtype, device, requires_grad) {
  dtype <- dtype_name(dtype %||% torch_get_default_dtype())
  if (!is_floating_dtype(dtype)) value_error(fn, ": dtype must be a floating dtype, got ", dtype)
  if (window_length <= 1) values <- torch_ones(window_length, dtype = "float64", device = device)
  with_requires_grad(values$to(dtype = dtype), isTRUE(requires_grad))
}

cosine_window <- function(fn, coefficients, window_length, periodic, dtype, layout, device, requires_grad) {
  at <- window_positions(fn, window_length, periodic, layout, device)
  angle <- 2 * pi * at$n / max(at$N, 1)
  values <- torch_zeros_like(at$n)
  for (k in seq_along(coefficients)) values <- values + coefficients[k] * torch_cos((k - 1) * angle)
  window_result(fn, values, window_length, dtype, device, requires_grad)
}

#' @export
torch_hann_window <- function(window_length, periodic = TRUE, dtype = NULL, layout = NULL, device = NULL,
                              requires_grad = FALSE) {
  cosine_window("torch_hann_window", c(0.5, -0.5), window_length, periodic, dtype, layout, device, requires_grad)
}

#' @export
torch_hamming_window <- function(window_length, periodic = TRUE, alpha = 0.54, beta = 0.46, dtype = NULL,
                                 layout = NULL, device = NULL, requires_grad = FALSE) {
  convenience_number(alpha, "torch_hamming_window", "alpha", is.finite, "a finite number")
  convenience_number(beta, "torch_hamming_window", "beta", is.finite, "a finite number")
  cosine_window("torch_hamming_window", c(alpha, -beta), window_length, periodic, dtype, layout, device, requires_grad)
}

#' @export
torch_blackman_window <- function(window_length, periodic = TRUE, dtype = NULL, layout = NULL, device = NULL,
                                  requires_grad = FALSE) {
  cosine_window("torch_blackman_window", c(0.42, -0.5, 0.08), window_length, periodic, dtype, layout, device,
                requires_grad)
}

#' @export
torch_bartlett_window <- function(window_length, periodic = TRUE, dtype = NULL, layout = NULL, device = NULL,
                                  requires_grad = FALSE) {
  at <- window_positions("torch_bartlett_window", window_length, periodic, layout, device)
  values <- 1 - (2 * at$n / max(at$N, 1) - 1)$abs()
  window_result("torch_bartlett_window", values, window_length, dtype, device, requires_grad)
}

# I0(beta * sqrt(1 - (2 n / N - 1)^2)) / I0(beta). periodic and beta default to torch's TRUE
# and 12 when not given.
#' @export
torch_kaiser_window <- function(window_length, periodic, beta, dtype = NULL, layout = NULL, device = NULL,
                                requires_grad = NULL) {
  fn <- "torch_kaiser_window"
  if (missing(periodic)) periodic <- TRUE
  if (missing(beta)) beta <- 12
  convenience_number(beta, fn, "beta", function(v) is.finite(v) && v >= 0, "a finite number >= 0")
  at <- window_positions(fn, window_length, periodic, layout, device)
  ratio <- 2 * at$n / max(at$N, 1) - 1
  argument <- beta * (1 - ratio * ratio)$clamp(min = 0)$sqrt()
  values <- bessel_i0(argument, beta) / bessel_i0(torch_scalar_tensor(beta, dtype = "float64", device = device), beta)
  window_result(fn, values, window_length, dtype, device, requires_grad)
}

# The modified Bessel function I0 by its series sum_k ((x / 2)^k / k!)^2 for 0 <= x <= largest:
# past k = x the terms shrink at least fourfold a step, so 2 * largest + 40 terms reach double
# precision.
bessel_i0 <- function(x, largest) {
  quarter_square <- x * x / 4
  term <- torch_ones_like(x)
  total <- term
  for (k in seq_len(ceiling(2 * largest) + 40)) {
    term <- term * quarter_square / (k * k)
    total <- total + term
  }
  total
}

# head() and tail() take the first or last n entries along the first dim, as base R's do for
# vectors and matrices (rows): a negative n leaves out the last or first |n|. The result is a
# new tensor, as torch for R's (and R's) are, not a view of x. Base R's default methods would
# index by numel(), which runs past the first dim of a matrix-like tensor.
head_tail_rows <- function(x, n, fn, from_end) {
  if (x$dim() == 0) value_error(fn, "(): a 0-dim tensor has no rows")
  n <- convenience_number(n, fn, "n", function(v) v == trunc(v), "a whole number")
  rows <- x$size(1)
  keep <- if (n >= 0) min(n, rows) else max(rows + n, 0)
  torch_narrow(x, 1, if (from_end && keep > 0) rows - keep + 1 else 1, keep)$clone()
}

#' @export
head.rcuda_tensor <- function(x, n = 6L, ...) head_tail_rows(x, n, "head", from_end = FALSE)

#' @export
tail.rcuda_tensor <- function(x, n = 6L, ...) head_tail_rows(x, n, "tail", from_end = TRUE)
