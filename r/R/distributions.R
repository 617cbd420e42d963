# Probability distributions as torch for R's distr_* (which follow torch.distributions): an R6
# base class, torch_Distribution, and the helpers its subclasses share. Each distribution lives
# in its own distributions-<name>.R; constraints (supports and parameter domains) in
# distributions-constraints.R; Gamma draws come from torch__standard_gamma() (R/tensor-random.R).
# docs/distributions.md is the user's guide.
#
# Note [Distribution shapes]
# As torch for R: a sample has shape c(sample_shape, batch_shape, event_shape). batch_shape is
# an integer vector (integer(0) when the parameters are 0-dim tensors; an R number becomes a
# tensor of shape 1, so distr_normal(0, 1) has batch_shape 1); event_shape is NULL for a
# univariate distribution and c(n) for the multivariate normal. sample_shape is NULL, list() or
# whole numbers.
#
# Note [Distribution argument validation]
# With validate_args = TRUE, the constructor checks every parameter against its constraint
# (d$arg_constraints) and log_prob() (cdf(), icdf()) checks that its value has a shape that
# broadcasts with batch_shape + event_shape and lies in d$support. Errors name the
# constructor (distr_normal), the argument and the values at fault. validate_args = NULL takes
# getOption("rcuda.distr_validate_args", TRUE): on, as PyTorch's default is, because a wrong
# parameter otherwise surfaces later as a NaN. Each check reads one boolean back from the
# device; set the option to FALSE (or pass validate_args = FALSE) where that costs too much.

Distribution <- R6::R6Class(
  "torch_Distribution",
  lock_objects = FALSE,
  public = list(
    .validate_args = FALSE,
    has_rsample = FALSE,
    has_enumerate_support = FALSE,
    .arg_constraints = list(),
    .support = NULL,

    # params: the tensors as given, named as in .arg_constraints; those left NULL (Bernoulli's
    # logits when probs is given) are not checked.
    initialize = function(batch_shape = NULL, event_shape = NULL, validate_args = NULL,
                          params = list()) {
      private$.batch_shape <- as.integer(batch_shape)
      private$.event_shape <- if (length(event_shape)) as.integer(event_shape) else NULL
      self$.validate_args <- distr_validate_flag(validate_args, private$.fn)
      if (self$.validate_args) {
        for (name in names(params)) {
          constraint <- self$.arg_constraints[[name]]
          if (!is.null(params[[name]]) && !is.null(constraint)) {
            check_constraint(params[[name]], constraint, private$.fn, name)
          }
        }
      }
      invisible(self)
    },
    expand = function(batch_shape, .instance = NULL) {
      distr_not_implemented(private$.fn, "$expand")
    },
    # An expanded copy (made with validate_args = FALSE, as its parameters were checked) takes
    # this one's validate_args for its log_prob().
    .expanded = function(new) {
      new$.validate_args <- self$.validate_args
      new
    },
    sample = function(sample_shape = NULL) {
      with_no_grad(self$rsample(sample_shape))
    },
    rsample = function(sample_shape = NULL) {
      rcuda_abort(c("rcuda_not_implemented_error", "not_implemented_error"), paste0(
        private$.fn, "$rsample: the distribution is not reparameterisable (has_rsample is ",
        "FALSE); $sample() draws without a gradient"
      ))
    },
    log_prob = function(value) distr_not_implemented(private$.fn, "$log_prob"),
    cdf = function(value) distr_not_implemented(private$.fn, "$cdf"),
    icdf = function(value) distr_not_implemented(private$.fn, "$icdf"),
    enumerate_support = function(expand = TRUE) {
      distr_not_implemented(private$.fn, "$enumerate_support")
    },
    entropy = function() distr_not_implemented(private$.fn, "$entropy"),
    perplexity = function() torch_exp(self$entropy()),
    .extended_shape = function(sample_shape = NULL) {
      c(distr_sample_shape(sample_shape, private$.fn), private$.batch_shape,
        private$.event_shape)
    },
    # Note [Distribution argument validation]: value's shape, then its support.
    .validate_sample = function(value, method = "log_prob") {
      fn <- paste0(private$.fn, "$", method)
      if (!is_torch_tensor(value)) {
        value_error(fn, ": value must be a tensor, got an R ", class(value)[1])
      }
      shape <- value$shape
      event <- private$.event_shape
      n_event <- length(event)
      if (length(shape) < n_event || any(utils::tail(shape, n_event) != event)) {
        value_error(fn, ": the rightmost sizes of value must match event_shape ",
                    shape_string(event), ", got value of shape ", shape_string(shape))
      }
      expected <- c(private$.batch_shape, event)
      if (!shapes_broadcast(shape, expected)) {
        value_error(fn, ": value of shape ", shape_string(shape), " does not broadcast with ",
                    "batch_shape + event_shape ", shape_string(expected))
      }
      support <- self$support
      if (!is.null(support) && !is_dependent(support)) {
        check_constraint(value, support, fn, "value", "must be within the support")
      }
      invisible(value)
    },
    # A number, numbers or a tensor as a tensor of like's dtype and device (log_prob's value).
    .as_value = function(value, like, method = "log_prob") {
      if (is_torch_tensor(value)) return(value)
      if (!is.numeric(value) && !is.logical(value)) {
        value_error(private$.fn, "$", method, ": value must be a tensor or numbers, got an R ",
                    class(value)[1])
      }
      torch_tensor(value, dtype = like$dtype, device = like$device)
    },
    # The parameters print() shows; those given, where there is a choice (probs or logits).
    .shown_params = function() names(self$.arg_constraints),
    print = function(...) {
      params <- self$.shown_params()
      shown <- vapply(params, function(name) {
        value <- tryCatch(self[[name]], error = function(e) NULL)
        if (!is_torch_tensor(value)) return(NA_character_)
        if (value$numel() == 1) {
          format(as.numeric(as_array(value$detach()$cpu())), digits = 4)
        } else {
          paste0("tensor of shape ", shape_string(value$shape))
        }
      }, "")
      shown <- shown[!is.na(shown)]
      cat(class(self)[1], " (", paste0(names(shown), ": ", shown, collapse = ", "), ")\n",
          sep = "")
      invisible(self)
    }
  ),
  active = list(
    batch_shape = function() private$.batch_shape,
    event_shape = function() private$.event_shape,
    arg_constraints = function() self$.arg_constraints,
    support = function() self$.support,
    mean = function() distr_not_implemented(private$.fn, "$mean"),
    variance = function() distr_not_implemented(private$.fn, "$variance"),
    stddev = function() self$variance$sqrt()
  ),
  private = list(
    .fn = "distribution",
    .batch_shape = integer(0),
    .event_shape = NULL
  )
)

# ---- helpers the distributions share --------------------------------------------------------

distr_not_implemented <- function(...) {
  rcuda_abort(c("rcuda_not_implemented_error", "not_implemented_error"),
              paste0(..., " is not implemented"))
}

distr_validate_flag <- function(validate_args, fn) {
  if (is.null(validate_args)) return(isTRUE(getOption("rcuda.distr_validate_args", TRUE)))
  if (!is.logical(validate_args) || length(validate_args) != 1 || is.na(validate_args)) {
    value_error(fn, ": validate_args must be TRUE, FALSE or NULL, got ",
                deparse(validate_args, nlines = 1)[1])
  }
  validate_args
}

# Note [Distribution shapes]: sample_shape as whole numbers.
distr_sample_shape <- function(sample_shape, fn) {
  if (is.list(sample_shape)) sample_shape <- unlist(sample_shape)
  if (is.null(sample_shape)) return(integer(0))
  if (!is.numeric(sample_shape) || anyNA(sample_shape) || any(sample_shape < 0) ||
      any(sample_shape != trunc(sample_shape))) {
    value_error(fn, ": sample_shape must be whole numbers >= 0, got ",
                deparse(sample_shape, nlines = 1)[1])
  }
  as.integer(sample_shape)
}

shape_string <- function(shape) paste0("(", paste(shape, collapse = ", "), ")")

shapes_broadcast <- function(a, b) {
  n <- min(length(a), length(b))
  if (n == 0) return(TRUE)
  x <- utils::tail(a, n)
  y <- utils::tail(b, n)
  all(x == y | x == 1 | y == 1)
}

# One parameter as a floating tensor: numbers become a tensor of `like`'s dtype and device (the
# default dtype on the CPU without one), integer and boolean tensors the default float dtype.
distr_param <- function(value, fn, arg, like = NULL) {
  if (is_torch_tensor(value)) {
    if (!is_float_tensor(value)) value <- value$to(dtype = torch_get_default_dtype())
    return(value)
  }
  if (!is.numeric(value) || !length(value)) {
    value_error(fn, ": ", arg, " must be a number or a tensor, got ",
                if (is.null(value)) "NULL" else paste("an R", class(value)[1]))
  }
  if (is.null(like)) return(torch_tensor(value, dtype = torch_get_default_dtype()))
  torch_tensor(value, dtype = like$dtype, device = like$device)
}

# torch.distributions' broadcast_all: the parameters (numbers or tensors) as tensors of one
# shape, numbers taking the first tensor's dtype and device. `values` is a named list.
distr_broadcast <- function(values, fn) {
  tensors <- Filter(is_torch_tensor, values)
  like <- if (length(tensors)) distr_param(tensors[[1]], fn, names(tensors)[1]) else NULL
  out <- Map(function(v, arg) distr_param(v, fn, arg, like), values, names(values))
  devices <- vapply(out, function(t) device_string(t$device), "")
  if (length(unique(devices)) > 1) {
    value_error(fn, ": ", paste(names(values), collapse = " and "), " must be on one device, got ",
                paste(devices, collapse = " and "))
  }
  dtypes <- unique(vapply(out, dtype_of, ""))
  if (length(dtypes) > 1) {
    out <- lapply(out, function(t) t$to(dtype = promote_float_dtypes(dtypes)))
  }
  shapes <- lapply(out, function(t) t$shape)
  for (i in seq_along(shapes)[-1]) {
    if (!shapes_broadcast(shapes[[1]], shapes[[i]])) {
      value_error(fn, ": the shapes of ", names(values)[1], " ", shape_string(shapes[[1]]),
                  " and ", names(values)[i], " ", shape_string(shapes[[i]]), " do not broadcast")
    }
  }
  if (length(out) == 1) return(out)
  res <- torch_broadcast_tensors(unname(out))
  names(res) <- names(values)
  res
}

promote_float_dtypes <- function(dtypes) {
  if ("float64" %in% dtypes) "float64" else if ("float32" %in% dtypes) "float32" else dtypes[1]
}

# The parameters of a distribution whose values are probabilities or log-odds (Bernoulli) or
# normalised probabilities and log-probabilities along the last dim (Categorical).
logits_to_probs <- function(logits, is_binary = FALSE) {
  if (is_binary) torch_sigmoid(logits) else nnf_softmax(logits, dim = -1)
}

clamp_probs <- function(probs) {
  eps <- torch_finfo(probs$dtype)$eps
  probs$clamp(min = eps, max = 1 - eps)
}

probs_to_logits <- function(probs, is_binary = FALSE) {
  clamped <- clamp_probs(probs)
  if (is_binary) torch_log(clamped) - torch_log1p(-clamped) else torch_log(clamped)
}

# Standard normal draws of `shape` from rcuda's generator on like's device (torch_manual_seed
# repeats them).
standard_normal <- function(shape, like) {
  torch_randn(shape, dtype = like$dtype, device = like$device)
}
