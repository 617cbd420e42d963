# autograd_function(): new differentiable operations written in R, as torch for R's. The
# forward runs with grad mode off on the caller's arguments; its outputs get one node of the
# backward graph whose gradient is the user's backward (Note [Autograd functions from R] in
# src/custom_function.cpp).
#
#   custom_pow <- autograd_function(
#     forward = function(ctx, x) { ctx$save_for_backward(x = x); x^2 },
#     backward = function(ctx, grad_output) list(x = 2 * ctx$saved_variables$x * grad_output)
#   )
#
# As torch for R: the function returned takes forward's arguments after ctx; backward receives
# ctx and one gradient per output (one list of them when it takes a single gradient argument and
# forward returned several), and returns a list of gradients named by forward's arguments
# (missing or NULL for those that need none); ctx$needs_input_grad says which do.

#' @export
autograd_function <- function(forward, backward) {
  if (!is.function(forward) || !is.function(backward)) {
    value_error("autograd_function: forward and backward must be functions")
  }
  if (length(formals(forward)) == 0 || length(formals(backward)) == 0) {
    value_error("autograd_function: forward and backward take the context (ctx) as their first argument")
  }
  force(forward)
  force(backward)
  arg_names <- names(formals(forward))[-1]
  if ("..." %in% arg_names) {
    value_error("autograd_function: forward's arguments must be named (it has `...`)")
  }
  f <- function() {
    apply_autograd_function(forward, backward, mget(arg_names, envir = environment()))
  }
  formals(f) <- formals(forward)[-1]
  f
}

apply_autograd_function <- function(forward, backward, args) {
  needs <- vapply(args, function(a) {
    is_torch_tensor(a) && !is_undefined_tensor(a) && isTRUE(a$requires_grad)
  }, NA)
  ctx <- new_autograd_context(as.list(needs))
  out <- with_no_grad(do.call(forward, c(list(ctx), args)))
  returns_list <- is.list(out) && !is_torch_tensor(out)
  outs <- if (returns_list) out else list(out)
  if (!autograd_is_grad_enabled() || !any(needs)) return(out)
  if (!length(outs) || !all(vapply(outs, is_torch_tensor, NA))) {
    value_error("autograd_function: forward must return a tensor or a list of tensors")
  }
  marked <- ctx$.non_differentiable
  differentiable <- !(.Call(rc_tensor_ids, unname(outs)) %in% marked)
  run_backward <- function(grads) {
    res <- do.call(backward, c(list(ctx), backward_arguments(backward, grads)))
    gradients_for_inputs(res, names(needs)[needs])
  }
  recorded <- .Call(rc_autograd_function_record, unname(args[needs]), unname(outs), run_backward,
                    differentiable)
  if (!returns_list) return(recorded[[1]])
  names(recorded) <- names(out)
  recorded
}

# torch for R's destructuring of the output gradients: one argument per gradient, except that
# the last argument takes the gradients left over as a list (all of them when backward has one).
backward_arguments <- function(backward, grads) {
  n_args <- length(formals(backward)) - 1
  if (length(grads) <= n_args || n_args == 0) return(grads)
  c(grads[seq_len(n_args - 1)], list(grads[n_args:length(grads)]))
}

gradients_for_inputs <- function(res, wanted) {
  if (!is.list(res) || (length(res) && is.null(names(res)))) {
    value_error("autograd_function: backward must return a list of gradients named by forward's ",
                "arguments (", paste(wanted, collapse = ", "), "), got ",
                if (is.list(res)) "an unnamed list" else paste("an R", class(res)[1]))
  }
  lapply(wanted, function(n) {
    g <- res[[n]]
    if (!is.null(g) && !is_torch_tensor(g)) {
      value_error("autograd_function: backward's gradient for '", n, "' must be a tensor or NULL, ",
                  "got an R ", class(g)[1])
    }
    g
  })
}

# The ctx of forward and backward: what forward saves for backward, which arguments need a
# gradient, and which outputs have none.
new_autograd_context <- function(needs_input_grad) {
  ctx <- new.env(parent = emptyenv())
  ctx$needs_input_grad <- needs_input_grad
  ctx$saved_variables <- list()
  ctx$.non_differentiable <- character()
  ctx$save_for_backward <- function(...) {
    ctx$saved_variables <- list(...)
    invisible(NULL)
  }
  ctx$mark_non_differentiable <- function(...) {
    tensors <- list(...)
    if (!all(vapply(tensors, is_torch_tensor, NA))) {
      value_error("mark_non_differentiable: expected the tensors forward returns")
    }
    ctx$.non_differentiable <- c(ctx$.non_differentiable, .Call(rc_tensor_ids, unname(tensors)))
    invisible(NULL)
  }
  ctx$mark_dirty <- function(...) {
    value_error("mark_dirty: in-place changes of an autograd_function's inputs are not supported ",
                "by rcuda; return a new tensor instead")
  }
  class(ctx) <- "autograd_context"
  ctx
}

#' @export
print.autograd_context <- function(x, ...) {
  cat("<autograd_context> saved: ", length(x$saved_variables), " variable(s)\n", sep = "")
  invisible(x)
}
