# torch for R's random draws: bernoulli, poisson, the Gamma sampler, multinomial, normal,
# randint_like and the in-place fills (exponential_, log_normal_, cauchy_, geometric_, random_),
# each a composition of rcuda's own ops over uniform or normal draws, or (Poisson, Gamma) the
# engine's samplers, on the CPU and CUDA alike.
#
# Note [Random draws from the default generator]
# Every draw here starts from torch_rand() (torch_randn(), torch_randint()) on the target's device,
# or from the engine's Poisson and Gamma samplers (rcuda/ops/random.h), which draw from the same
# generator, so torch_manual_seed() repeats it, on the CPU and the GPU alike, as for rcuda's
# $uniform_(). Uniforms are drawn in float64 unless the target is float32 (whose precision is
# all its draws can hold), then transformed (inverse CDFs) and cast to the target's dtype. The in-place fills write with inplace() (Note [In-place methods as
# copies]), so they refuse what every in-place method refuses. A torch_generator() given as
# `generator` supplies the draws instead (Note [Generator objects] in R/generator.R).

# Uniform [0, 1) draws of `shape` on x's device (Note [Random draws from the default generator]).
uniform_draws <- function(x, shape = x$shape) {
  draw_dtype <- if (dtype_of(x) == "float32") "float32" else "float64"
  torch_rand(shape, dtype = draw_dtype, device = x$device)
}

#' @export
torch_randint_like <- function(input, low, high, dtype = NULL, layout = NULL, device = NULL,
                               requires_grad = FALSE) {
  input <- extra_tensor(input, "torch_randint_like", "input")
  check_layout(layout, "torch_randint_like")
  # torch_randint_like(x, high) draws from 0 to high - 1, as torch's overload without low.
  if (missing(high)) {
    high <- low
    low <- 0L
  }
  torch_randint(low, high, as.integer(input$shape), dtype = if (is.null(dtype)) input$dtype else dtype,
                device = if (is.null(device)) input$device else device, requires_grad = requires_grad)
}

# mean + std * a standard normal draw from rcuda's generator (torch_manual_seed repeats it).
# As in torch, the draw carries no gradient to mean or std.
#' @export
torch_normal <- function(mean, std, size = NULL, generator = NULL, ...) {
  if (missing(mean)) mean <- 0
  if (missing(std)) std <- 1
  options <- list(...)
  if (!is.null(generator)) {
    return(with_generator(generator, "torch_normal", function() torch_normal(mean, std, size, NULL, ...)))
  }
  tensors <- is_torch_tensor(mean) || is_torch_tensor(std)
  if (!is.null(size) && tensors) value_error("torch_normal: size is set, but one of mean or std is not a scalar value.")
  if (length(options) && tensors) value_error("torch_normal: options is set, but one of mean or std is not a scalar value.")
  if (!tensors && is.null(size)) value_error("torch_normal: size is not set.")
  if (!is_torch_tensor(mean)) number_arg(mean, "torch_normal", "mean")
  if (!is_torch_tensor(std) && number_arg(std, "torch_normal", "std") < 0) {
    value_error("torch_normal: std must be non-negative, got ", std)
  }
  if (!tensors) {
    requires_grad <- isTRUE(options$requires_grad)
    options$requires_grad <- NULL
    draw <- do.call(torch_randn, c(list(size_value(size, "torch_normal")), options))
    return(with_requires_grad(draw * std + mean, requires_grad))
  }
  with_no_grad({
    like <- if (is_torch_tensor(mean)) mean else std
    if (is_torch_tensor(mean) && is_torch_tensor(std)) like <- torch_zeros_like(mean) + torch_zeros_like(std)
    if (!is_float_tensor(like)) value_error("torch_normal: mean and std must have a floating dtype, got ", like$dtype$name)
    torch_randn_like(like) * std + mean
  })
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

#' @export
torch_poisson <- function(self, generator = NULL) {
  self <- convenience_tensor(as_tensor_arg(self), "torch_poisson", "self")
  if (!is_floating_dtype(dtype_of(self))) value_error("torch_poisson: self must hold floating rates, got ", dtype_of(self))
  with_generator(generator, "torch_poisson", function() {
    sampler_draw(self, "torch_poisson", "rates", "must be >= 0 and finite", function(x) x >= 0,
                 function() .Call(rc_sample, "poisson", self$detach()))
  })
}

# torch for R's names for the Gamma(alpha, 1) sampler and its gradient (the distributions'
# Gamma, Chi2, Beta and Dirichlet draw from it). The draw is differentiable in alpha through
# the implicit reparameterisation gradient (ops::standard_gamma_grad in rcuda/ops/random.h).
#' @export
torch__standard_gamma <- function(self, generator = NULL) {
  self <- convenience_tensor(as_tensor_arg(self), "torch__standard_gamma", "self")
  if (!is_floating_dtype(dtype_of(self))) value_error("torch__standard_gamma: self must hold floating concentrations, got ", dtype_of(self))
  with_generator(generator, "torch__standard_gamma", function() {
    sampler_draw(self, "torch__standard_gamma", "self (the concentration)", "must be > 0 and finite",
                 function(x) x > 0, function() standard_gamma_function(self))
  })
}

standard_gamma_function <- autograd_function(
  forward = function(ctx, alpha) {
    sample <- .Call(rc_sample, "standard_gamma", alpha)
    ctx$save_for_backward(alpha = alpha, sample = sample)
    sample
  },
  backward = function(ctx, grad_output) {
    saved <- ctx$saved_variables
    list(alpha = grad_output * torch__standard_gamma_grad(saved$alpha, saved$sample))
  }
)

#' @export
torch__standard_gamma_grad <- function(self, output) {
  self <- convenience_tensor(as_tensor_arg(self), "torch__standard_gamma_grad", "self")
  output <- convenience_tensor(as_tensor_arg(output), "torch__standard_gamma_grad", "output")
  .Call(rc_standard_gamma_grad, self$detach(), output$detach())
}

# A sampler's draw. The engine checks its parameter (one flag read back from the device); when it
# refuses one, the error names the R function, the argument and the first bad value, looked for
# only then, so that a valid call reads nothing more back.
sampler_draw <- function(x, fn, arg, what, valid, draw) {
  withCallingHandlers(draw(), rcuda_value_error = function(e) {
    if (!grepl("every element of", conditionMessage(e), fixed = TRUE)) return()
    with_no_grad({
      bad <- x$masked_select(!(valid(x) & torch_isfinite(x)))
      if (bad$numel() > 0) value_error(fn, ": ", arg, " ", what, ", got ", bad[1]$item())
    })
  })
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
