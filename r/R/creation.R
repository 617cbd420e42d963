# Creating tensors, with torch for R's argument names: sizes as `...` (or one vector),
# dtype = NULL for the default (float32; int64 for integer data), device = NULL for the CPU.
# requires_grad = TRUE makes the new tensor a leaf that requires grad (floating dtypes only).

# torch for R's resolve_size: torch_zeros(2, 3), torch_zeros(c(2, 3)), torch_zeros(size = c(2, 3)).
resolve_size <- function(...) {
  size <- list(...)
  if (length(size) == 1 && (is.null(names(size)) || names(size) %in% c("", "size"))) {
    size <- size[[1]]
  }
  size <- unlist(size, use.names = FALSE)
  if (!is.numeric(size)) value_error("size must be numbers, got ", class(size)[1])
  size
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
  if (is.list(data)) value_error("torch_tensor: lists are not supported; use torch_stack() on tensors")
  if (is.factor(data)) data <- as.integer(data)
  with_requires_grad(.Call(rc_from_r, data, dtype_name(dtype), device_string(device)), requires_grad)
}

#' @export
torch_scalar_tensor <- function(value, dtype = NULL, device = NULL, requires_grad = FALSE) {
  if (length(value) != 1) value_error("torch_scalar_tensor: value must have length 1")
  torch_tensor(value, dtype = dtype, device = device, requires_grad = requires_grad)$squeeze()
}

#' @export
as.gpu <- function(x) torch_tensor(x, device = "cuda")

filled <- function(kind, size, value, dtype, device, requires_grad) {
  with_requires_grad(.Call(rc_full, kind, size, value, dtype_name(dtype), device_string(device)), requires_grad)
}

#' @export
torch_zeros <- function(..., names = NULL, dtype = NULL, device = NULL, requires_grad = FALSE) {
  filled("zeros", resolve_size(...), NULL, dtype, device, requires_grad)
}

#' @export
torch_ones <- function(..., names = NULL, dtype = NULL, device = NULL, requires_grad = FALSE) {
  filled("ones", resolve_size(...), NULL, dtype, device, requires_grad)
}

#' @export
torch_empty <- function(..., names = NULL, dtype = NULL, device = NULL, requires_grad = FALSE) {
  filled("empty", resolve_size(...), NULL, dtype, device, requires_grad)
}

#' @export
torch_full <- function(size, fill_value, names = NULL, dtype = NULL, device = NULL, requires_grad = FALSE) {
  filled("full", size, fill_value, dtype, device, requires_grad)
}

#' @export
torch_randn <- function(..., names = NULL, dtype = NULL, device = NULL, requires_grad = FALSE) {
  with_requires_grad(.Call(rc_random, "randn", resolve_size(...), dtype_name(dtype), device_string(device)), requires_grad)
}

#' @export
torch_rand <- function(..., names = NULL, dtype = NULL, device = NULL, requires_grad = FALSE) {
  with_requires_grad(.Call(rc_random, "rand", resolve_size(...), dtype_name(dtype), device_string(device)), requires_grad)
}

#' @export
torch_randint <- function(low, high, size, generator = NULL, dtype = NULL, device = NULL,
                          requires_grad = FALSE) {
  with_requires_grad(.Call(rc_randint, low, high, size, dtype_name(dtype), device_string(device)), requires_grad)
}

# torch for R's end is inclusive: it nudges `end` by a float epsilon in the direction of
# `step`, so that an end that lies on the grid is included. Integer start and end with a
# whole step (the default 1) give int64, so torch_arange(1L, 5L) counts in integers.
#' @export
torch_arange <- function(start, end, step = 1, dtype = NULL, device = NULL, requires_grad = FALSE) {
  if (step == 0) value_error("torch_arange: step must be nonzero")
  all_integer <- is.integer(start) && is.integer(end) && step == round(step)
  eps <- if (!is.null(dtype) && dtype_name(dtype) == "float64") .Machine$double.eps else 1.1920929e-07
  end <- if (all_integer || (!is.null(dtype) && !is_floating_dtype(dtype_name(dtype)))) {
    # Whole-number ends: one past the last value is exact and keeps integer dtypes.
    end + sign(step) * if (is.integer(end)) 1L else 1
  } else {
    end + sign(step) * eps
  }
  if (all_integer) {
    end <- as.integer(end)
    step <- as.integer(step)
  }
  with_requires_grad(.Call(rc_arange, start, end, step, dtype_name(dtype), device_string(device)), requires_grad)
}

#' @export
torch_linspace <- function(start, end, steps = 100, dtype = NULL, device = NULL, requires_grad = FALSE) {
  with_requires_grad(.Call(rc_linspace, start, end, steps, dtype_name(dtype), device_string(device)), requires_grad)
}

#' @export
torch_eye <- function(n, m = n, dtype = NULL, device = NULL, requires_grad = FALSE) {
  with_requires_grad(.Call(rc_eye, n, m, dtype_name(dtype), device_string(device)), requires_grad)
}

# The *_like functions keep the input's dtype and device unless told otherwise.
like <- function(input, dtype, device) {
  list(dtype = if (is.null(dtype)) input$dtype else dtype,
       device = if (is.null(device)) input$device else device)
}

#' @export
torch_zeros_like <- function(input, dtype = NULL, device = NULL, requires_grad = FALSE) {
  o <- like(input, dtype, device)
  torch_zeros(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_ones_like <- function(input, dtype = NULL, device = NULL, requires_grad = FALSE) {
  o <- like(input, dtype, device)
  torch_ones(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_empty_like <- function(input, dtype = NULL, device = NULL, requires_grad = FALSE) {
  o <- like(input, dtype, device)
  torch_empty(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_full_like <- function(input, fill_value, dtype = NULL, device = NULL, requires_grad = FALSE) {
  o <- like(input, dtype, device)
  torch_full(input$shape, fill_value, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_rand_like <- function(input, dtype = NULL, device = NULL, requires_grad = FALSE) {
  o <- like(input, dtype, device)
  torch_rand(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_randn_like <- function(input, dtype = NULL, device = NULL, requires_grad = FALSE) {
  o <- like(input, dtype, device)
  torch_randn(input$shape, dtype = o$dtype, device = o$device, requires_grad = requires_grad)
}

#' @export
torch_manual_seed <- function(seed) {
  invisible(.Call(rc_manual_seed, seed))
}
