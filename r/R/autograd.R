# Autograd from R, with torch for R's names: the requires_grad flag, $backward(), $grad,
# $grad_fn, hooks, grad mode and autograd_grad(). Each is one call into the engine, which records
# the graph as ops run (docs/autograd.md); R keeps no graph of its own.

# ---- fields and methods of tensors ------------------------------------------------------------

tensor_fields$requires_grad <- function(self) .Call(rc_requires_grad, self)
# An undefined tensor before any gradient arrived (Note [Undefined tensors] in rcuda_r.h).
tensor_fields$grad <- function(self) .Call(rc_grad, self)
# NULL for a leaf; else the node that made the tensor, printing as e.g. MulBackward.
tensor_fields$grad_fn <- function(self) .Call(rc_grad_fn, self)
tensor_fields$is_leaf <- function(self) .Call(rc_is_leaf, self)
tensor_fields$retains_grad <- function(self) .Call(rc_retains_grad, self)

m <- tensor_methods
m$requires_grad_ <- function(self, requires_grad = TRUE) {
  invisible(.Call(rc_set_requires_grad, self, requires_grad))
}
# create_graph = TRUE records the backward pass, so that $grad can be differentiated again
# (Note [Gradients of gradients] in docs/autograd.md).
m$backward <- function(self, gradient = NULL, retain_graph = create_graph, create_graph = FALSE,
                       inputs = NULL, ...) {
  if (!is.null(inputs)) value_error("backward: inputs = is not supported; use autograd_grad(outputs, inputs)")
  invisible(.Call(rc_backward, self, gradient, retain_graph, create_graph))
}
# A detached or cloned parameter or buffer stays one, as torch for R's (mlverse/torch#1136).
m$detach <- function(self) keep_markers(self, .Call(rc_detach, self))
# torch for R's $data() (PyTorch's .data): the same values, outside the graph; writing into it
# writes the tensor, unseen by autograd (nn init code does this).
m$data <- function(self) .Call(rc_detach, self)
m$detach_ <- function(self) invisible(.Call(rc_detach_, self))
m$retain_grad <- function(self) invisible(.Call(rc_retain_grad, self))
m$register_hook <- function(self, hook) {
  new_hook_handle(.Call(rc_register_hook, self, hook))
}
m$set_grad_ <- function(self, new_grad) invisible(.Call(rc_set_grad, self, new_grad))
m$zero_ <- function(self) invisible(.Call(rc_assign, self, 0))
rm(m)

# x$requires_grad <- TRUE and x$grad <- NULL (or a tensor), as torch for R's active fields.
#' @export
`$<-.rcuda_tensor` <- function(x, name, value) {
  switch(name,
    requires_grad = .Call(rc_set_requires_grad, x, value),
    grad = .Call(rc_set_grad, x, value),
    # A complex tensor's parts are views: assigning writes the values into x, as torch for R's.
    real = ,
    imag = .Call(rc_assign, complex_call(name, x),
                 if (is.numeric(value) && length(value) == 1) value else as_tensor_arg(value)),
    value_error("rcuda_tensor: field '", name, "' cannot be assigned (only requires_grad, grad, real and imag can)")
  )
  x
}

# x[["requires_grad"]] <- FALSE, as torch for R allows (its fields are reached by [[ too).
#' @export
`[[<-.rcuda_tensor` <- function(x, i, value) {
  if (!is.character(i) || length(i) != 1) {
    value_error("rcuda_tensor: [[<- takes a field name (requires_grad, grad, real or imag), got ", deparse(i)[1])
  }
  `$<-.rcuda_tensor`(x, i, value)
}

# Tensors on the R side of an undefined engine tensor (a $grad not computed yet).
#' @export
is_undefined_tensor <- function(x) is_torch_tensor(x) && .Call(rc_is_undefined, x)

# ---- grad_fn nodes ------------------------------------------------------------------------------

#' @export
print.rcuda_grad_fn <- function(x, ...) {
  cat(.Call(rc_grad_fn_name, x), "\n", sep = "")
  invisible(x)
}

#' @export
`$.rcuda_grad_fn` <- function(x, name) {
  switch(name,
    name = function() .Call(rc_grad_fn_name, x),
    next_functions = .Call(rc_grad_fn_next, x),
    value_error("grad_fn has no method or field '", name, "' (it has name() and next_functions)")
  )
}

# ---- hooks --------------------------------------------------------------------------------------

new_hook_handle <- function(handle) {
  force(handle)  # the .Call that registers the hook
  structure(list(remove = function() invisible(.Call(rc_remove_hook, handle))), class = "rcuda_hook")
}

#' @export
print.rcuda_hook <- function(x, ...) {
  cat("<torch_hook>\n")
  invisible(x)
}

# ---- grad mode ----------------------------------------------------------------------------------

#' @export
with_no_grad <- function(code) {
  previous <- .Call(rc_grad_mode, FALSE)
  on.exit(.Call(rc_grad_mode, previous))
  force(code)
}

#' @export
with_enable_grad <- function(code) {
  previous <- .Call(rc_grad_mode, TRUE)
  on.exit(.Call(rc_grad_mode, previous))
  force(code)
}

# Grad mode switched until the frame .env returns (as withr's local_ functions).
local_grad_mode <- function(enabled, .env) {
  previous <- .Call(rc_grad_mode, enabled)
  restore <- call(".Call", rc_grad_mode, previous)
  do.call(base::on.exit, list(restore, add = TRUE, after = FALSE), envir = .env)
  invisible(previous)
}

#' @export
local_no_grad <- function(.env = parent.frame()) local_grad_mode(FALSE, .env)

#' @export
local_enable_grad <- function(.env = parent.frame()) local_grad_mode(TRUE, .env)

#' @export
autograd_set_grad_mode <- function(enabled) invisible(.Call(rc_grad_mode, enabled))

#' @export
autograd_is_grad_enabled <- function() .Call(rc_grad_mode, NULL)

# ---- functions ----------------------------------------------------------------------------------

#' @export
autograd_backward <- function(tensors, grad_tensors = NULL, retain_graph = create_graph,
                              create_graph = FALSE) {
  invisible(.Call(rc_backward, tensors, grad_tensors, retain_graph, create_graph))
}

# A list with the gradient of sum(outputs * grad_outputs) for each input; $grad is left alone.
# With create_graph = TRUE the gradients have a history of their own (a gradient penalty, a
# Hessian-vector product).
#' @export
autograd_grad <- function(outputs, inputs, grad_outputs = NULL, retain_graph = create_graph,
                          create_graph = FALSE, allow_unused = FALSE) {
  .Call(rc_autograd_grad, outputs, inputs, grad_outputs, retain_graph, allow_unused, create_graph)
}

# The nn_parameter / nn_buffer marker a tensor handle carries, as c(marker, value) (the value
# as text), or character() for none. torch_save() of a module writes it (R/save.R).
handle_marker <- function(x) {
  for (marker in c("nn_parameter", "nn_buffer")) {
    value <- attr(x, marker, exact = TRUE)
    if (!is.null(value)) return(c(marker, as.character(value)))
  }
  character()
}

# The marker of `from` set on `to` (a new handle).
keep_markers <- function(from, to) {
  marker <- handle_marker(from)
  if (!length(marker)) return(to)
  .Call(rc_marked_handle, to, marker[1], attr(from, marker[1], exact = TRUE))
}
