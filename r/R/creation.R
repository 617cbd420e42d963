# Creating tensors, with torch for R's argument names: sizes as `...` (or one vector),
# dtype = NULL for the default (torch_get_default_dtype(), float32 unless changed; int64 for
# integer data), device = NULL for the default device (the CPU, or with_device()'s).
# requires_grad = TRUE makes the new tensor a leaf that requires grad (floating dtypes only).

# torch for R's resolve_size: torch_zeros(2, 3), torch_zeros(c(2, 3)), torch_zeros(size = c(2, 3)),
# torch_zeros(list(2, 3)).
resolve_size <- function(..., fn = "size") size_value(unlist(list(...), use.names = FALSE), fn)

# A size argument (a vector or a list of numbers) as whole numbers, or an error
# naming the function.
size_value <- function(size, fn, arg = "size") {
  if (is.list(size)) {
    if (!all(vapply(size, function(s) is.numeric(s) && length(s) == 1, logical(1)))) {
      value_error(fn, ": ", arg, " must be numbers, got a list holding ",
                  paste(unique(vapply(size, function(s) class(s)[1], "")), collapse = ", "))
    }
    size <- unlist(size, use.names = FALSE)
  }
  if (!is.numeric(size) || is.object(size)) value_error(fn, ": ", arg, " must be numbers, got ", class(size)[1])
  # (Negative sizes are the engine's shape errors.)
  if (anyNA(size) || any(size != trunc(size))) {
    value_error(fn, ": ", arg, " must be whole numbers, got ", deparse(size, nlines = 1)[1])
  }
  size
}

# `names =` of the creation functions: dim names checked against the size before anything is
# made, then set on the new tensor (Note [Named tensors] in named-tensors.R).

# Layouts, as torch for R's: tensors are strided; torch_sparse_coo() is named so that scripts
# can ask for it and hear why not.
new_layout <- function(name) structure(list(name = name), class = c("rcuda_layout", "torch_layout"))
#' @export
torch_strided <- function() new_layout("strided")
#' @export
torch_sparse_coo <- function() new_layout("sparse_coo")
#' @export
print.rcuda_layout <- function(x, ...) {
  cat("torch_", x$name, "\n", sep = "")
  invisible(x)
}

# A layout argument: NULL or torch_strided(); anything else is refused, naming the function.
check_layout <- function(layout, fn) {
  if (is.null(layout) || (inherits(layout, "rcuda_layout") && identical(layout$name, "strided"))) return(invisible())
  value_error(fn, ": layout must be NULL or torch_strided() (rcuda has only strided tensors), got ",
              if (inherits(layout, "rcuda_layout")) paste0("torch_", layout$name, "()") else describe(layout))
}

# The new tensor t, made to require grad when asked.
with_requires_grad <- function(t, requires_grad) {
  if (!identical(requires_grad, FALSE)) .Call(rc_set_requires_grad, t, requires_grad)
  t
}

#' @export
torch_tensor <- function(data, dtype = NULL, device = NULL, requires_grad = FALSE, pin_memory = FALSE) {
  if (is_torch_tensor(data)) {
    out <- .Call(rc_to, data, dtype_name(dtype), device_string(device))
    # A leaf of its own: a copy without the source's history (as torch.tensor(t)).
    if (!identical(requires_grad, FALSE)) out <- .Call(rc_copy, "clone", .Call(rc_detach, out))
    return(with_requires_grad(out, requires_grad))
  }
  if (inherits(data, "integer64")) {  # bit64's: Note [int64 through two halves]
    out <- tensor_from_integer64(data, creation_device(device))
    if (!is.null(dtype)) out <- out$to(dtype = dtype)
    return(with_requires_grad(out, requires_grad))
  }
  if (is.list(data)) value_error("torch_tensor: lists are not supported; use torch_stack() on tensors")
  if (is.factor(data)) data <- as.integer(data)
  # As torch for R: NULL is an empty bool tensor, and raw bytes are uint8.
  if (is.null(data)) data <- logical()
  if (is.raw(data)) {
    shape <- dim(data)
    data <- as.integer(data)
    dim(data) <- shape
    if (is.null(dtype)) dtype <- torch_uint8()
  }
  with_requires_grad(.Call(rc_from_r, data, dtype_name(dtype), creation_device(device)), requires_grad)
}

#' @export
torch_scalar_tensor <- function(value, dtype = NULL, device = NULL, requires_grad = FALSE) {
  if (length(value) != 1) value_error("torch_scalar_tensor: value must have length 1")
  torch_tensor(value, dtype = dtype, device = device, requires_grad = requires_grad)$squeeze()
}

#' @export
as.gpu <- function(x) torch_tensor(x, device = "cuda")

# The tensor of torch_zeros(), torch_ones(), torch_empty() and torch_full() (`kind`), or the
# meta tensor of its shape on device "meta" (Note [Meta tensors] in meta-tensors.R).
filled <- function(kind, size, value, dtype, device, requires_grad, names, fn) {
  make <- function(size, device) {
    with_requires_grad(.Call(rc_full, kind, size, value, dtype_name(dtype), creation_device(device)), requires_grad)
  }
  if (meta_requested(device)) return(meta_creation(size, names, fn, function(size) make(size, "cpu")))
  with_names(make(size, device), names)
}

# The tensor of torch_randn() and torch_rand() (`kind`), or a meta tensor, as filled().
random <- function(kind, size, dtype, device, requires_grad, names, fn) {
  make <- function(size, device) {
    with_requires_grad(.Call(rc_random, kind, size, dtype_name(dtype), creation_device(device)), requires_grad)
  }
  if (meta_requested(device)) return(meta_creation(size, names, fn, function(size) make(size, "cpu")))
  with_names(make(size, device), names)
}

#' @export
torch_zeros <- function(..., names = NULL, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_zeros")
  size <- resolve_size(..., fn = "torch_zeros")
  names <- names_arg(names, length(size), "torch_zeros")
  filled("zeros", size, NULL, dtype, device, requires_grad, names, "torch_zeros")
}

#' @export
torch_ones <- function(..., names = NULL, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_ones")
  size <- resolve_size(..., fn = "torch_ones")
  names <- names_arg(names, length(size), "torch_ones")
  filled("ones", size, NULL, dtype, device, requires_grad, names, "torch_ones")
}

#' @export
torch_empty <- function(..., names = NULL, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_empty")
  size <- resolve_size(..., fn = "torch_empty")
  names <- names_arg(names, length(size), "torch_empty")
  filled("empty", size, NULL, dtype, device, requires_grad, names, "torch_empty")
}

#' @export
torch_full <- function(size, fill_value, names = NULL, dtype = NULL, layout = NULL, device = NULL,
                       requires_grad = FALSE) {
  check_layout(layout, "torch_full")
  size <- size_value(size, "torch_full")
  names <- names_arg(names, length(size), "torch_full")
  filled("full", size, fill_value, dtype, device, requires_grad, names, "torch_full")
}

#' @export
torch_randn <- function(..., names = NULL, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_randn")
  size <- resolve_size(..., fn = "torch_randn")
  names <- names_arg(names, length(size), "torch_randn")
  random("randn", size, dtype, device, requires_grad, names, "torch_randn")
}

#' @export
torch_rand <- function(..., names = NULL, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_rand")
  size <- resolve_size(..., fn = "torch_rand")
  names <- names_arg(names, length(size), "torch_rand")
  random("rand", size, dtype, device, requires_grad, names, "torch_rand")
}

#' @export
torch_randint <- function(low, high, size, generator = NULL, dtype = NULL, layout = NULL, device = NULL,
                          requires_grad = FALSE) {
  check_layout(layout, "torch_randint")
  if (missing(size)) value_error("torch_randint: size is required (torch_randint(low, high, size))")
  draw <- function() .Call(rc_randint, low, high, size_value(size, "torch_randint"), dtype_name(dtype), creation_device(device))
  with_requires_grad(with_generator(generator, "torch_randint", draw), requires_grad)
}

# torch for R's end is inclusive: it nudges `end` by a float epsilon in the direction of
# `step`, so that an end that lies on the grid is included. Integer start and end with a
# whole step (the default 1) give int64, so torch_arange(1L, 5L) counts in integers.
#' @export
torch_arange <- function(start, end, step = 1, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_arange")
  # One-element tensors stand for their numbers, as torch for R takes them.
  number <- function(v) if (is_torch_tensor(v)) v$item() else v
  # torch_arange(n) counts from 1, as torch for R's.
  if (missing(end)) {
    end <- start
    start <- 1L
  }
  start <- number(start)
  end <- number(end)
  step <- number(step)
  for (arg in c("start", "end", "step")) {
    v <- get(arg)
    if (!is.numeric(v) || length(v) != 1 || is.na(v)) {
      value_error("torch_arange: expected a number for ", arg, ", got ", deparse(v, nlines = 1)[1])
    }
  }
  if (step == 0) value_error("torch_arange: step must be nonzero")
  all_integer <- is.integer(start) && is.integer(end) && step == round(step)
  float_dtype <- if (is.null(dtype)) torch_get_default_dtype()$name else dtype_name(dtype)
  end <- if (all_integer || (!is.null(dtype) && !is_floating_dtype(dtype_name(dtype)))) {
    # Whole-number ends: one past the last value is exact and keeps integer dtypes.
    end + sign(step) * if (is.integer(end)) 1L else 1
  } else {
    # The end is included: the next number after it in the dtype's precision (torch for R's
    # nextafter), a step of the size of the end and of the span (the count is computed from
    # end - start), since a fixed epsilon vanishes beside a large one.
    bits <- if (float_dtype == "float64") 52 else 23
    end + sign(step) * unit_in_last_place(max(abs(end), abs(end - start)), bits)
  }
  if (all_integer) {
    end <- as.integer(end)
    step <- as.integer(step)
  }
  with_requires_grad(.Call(rc_arange, start, end, step, dtype_name(dtype), creation_device(device)), requires_grad)
}

# The gap between x and the next number of a float with `mantissa_bits` (52: float64, 23: float32).
unit_in_last_place <- function(x, mantissa_bits) {
  2^(floor(log2(max(abs(x), 2^-126))) - mantissa_bits)
}

#' @export
torch_linspace <- function(start, end, steps = 100, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_linspace")
  if (!is.numeric(steps) || length(steps) != 1 || is.na(steps) || steps < 0 || steps != trunc(steps)) {
    value_error("torch_linspace: steps must be a whole number of at least 0, got ", deparse(steps, nlines = 1)[1])
  }
  with_requires_grad(.Call(rc_linspace, start, end, steps, dtype_name(dtype), creation_device(device)), requires_grad)
}

# torch for R's deprecated torch_range(): as torch_arange() but with `end` included, in the
# default floating dtype; the count is floor((end - start) / step) + 1, as PyTorch's.
#' @export
torch_range <- function(start, end, step = 1, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_range")
  fn <- "torch_range"
  start <- number_arg(start, fn, "start")
  end <- number_arg(end, fn, "end")
  step <- number_arg(step, fn, "step")
  if (step == 0) value_error(fn, ": step must be nonzero")
  if ((end - start) / step < 0) {
    value_error(fn, ": end (", end, ") lies on the wrong side of start (", start, ") for step ", step)
  }
  warning("torch_range is deprecated in favor of torch_arange, whose end is excluded", call. = FALSE)
  n <- floor((end - start) / step) + 1
  torch_linspace(start, start + (n - 1) * step, n, dtype = dtype, device = device,
                 requires_grad = requires_grad)
}

#' @export
torch_eye <- function(n, m = n, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_eye")
  with_requires_grad(.Call(rc_eye, n, m, dtype_name(dtype), creation_device(device)), requires_grad)
}

# The *_like functions keep the input's dtype and device unless told otherwise.
like <- function(input, dtype, device) {
  if (!is_torch_tensor(input)) value_error("*_like: input must be a tensor, got ", class(input)[1])
  list(dtype = if (is.null(dtype)) input$dtype else dtype,
       device = if (is.null(device)) input$device else device)
}

#' @export
torch_zeros_like <- function(input, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_zeros_like")
  input <- as_tensor_arg(input)
  o <- like(input, dtype, device)
  torch_zeros(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_ones_like <- function(input, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_ones_like")
  input <- as_tensor_arg(input)
  o <- like(input, dtype, device)
  torch_ones(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_empty_like <- function(input, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_empty_like")
  input <- as_tensor_arg(input)
  o <- like(input, dtype, device)
  torch_empty(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_full_like <- function(input, fill_value, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_full_like")
  input <- as_tensor_arg(input)
  o <- like(input, dtype, device)
  torch_full(input$shape, fill_value, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_rand_like <- function(input, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_rand_like")
  input <- as_tensor_arg(input)
  o <- like(input, dtype, device)
  torch_rand(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_randn_like <- function(input, dtype = NULL, layout = NULL, device = NULL, requires_grad = FALSE) {
  check_layout(layout, "torch_randn_like")
  input <- as_tensor_arg(input)
  o <- like(input, dtype, device)
  torch_randn(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_manual_seed <- function(seed) {
  invisible(.Call(rc_manual_seed, seed))
}
