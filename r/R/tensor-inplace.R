# In-place methods ($exp_(), $add_(other, alpha), $clamp_(min, max), ...) as torch for R's,
# and the layout accessors $stride() and $storage_offset().
#
# Note [In-place methods as copies]
# Each in-place method computes its out-of-place twin and writes the result into self with the
# engine's copy_, which bumps self's version and, when autograd records, makes CopyBackward
# self's grad_fn with the twin's graph behind it; so a non-leaf gets the twin's gradient, and
# an op that saved self before the write refuses to run backward, as in torch. What torch checks
# before an in-place op is checked here first, naming the method:
# - a leaf that requires grad cannot be written while grad mode is on;
# - the result type must be castable to self's dtype (no floating result into an integer or
#   bool tensor, no integer result into a bool one): self keeps its dtype;
# - the result must have self's shape (broadcasting may grow other, never self).
# While recording, the twin runs on a clone of self (and of a tensor other), because it may
# save its inputs for backward and self is about to change (x$mul_(x) saves self twice).
# The engine refuses recorded writes into a view (it has no CopySlices), so a view of a tensor
# that requires grad cannot be changed in place while grad mode is on; without grad, a view
# written in place writes its base, as in torch. $grad_fn reads CopyBackward, not the twin's.

# torch's can_cast for the result of an in-place op: nothing floating into an integer or bool
# tensor, nothing but bool into a bool tensor.
inplace_castable <- function(from, to) {
  if (is_floating_dtype(from)) return(is_floating_dtype(to))
  from == "bool" || to != "bool"
}

inplace_write <- function(fn, self, result, recording) {
  from <- .Call(rc_meta, result)[[2]]
  to <- .Call(rc_meta, self)[[2]]
  if (!inplace_castable(from, to)) {
    dtype_error(fn, ": result type ", dtype_labels[[from]], " can't be cast to self's dtype ",
                dtype_labels[[to]], " (an in-place op keeps self's dtype; use $",
                sub("_$", "", fn), "() or convert self first)")
  }
  shape <- .Call(rc_shape, result)
  if (!identical(shape, .Call(rc_shape, self))) {
    shape_error(fn, ": the result has shape [", paste(shape, collapse = ", "), "] but self has shape [",
                paste(.Call(rc_shape, self), collapse = ", "), "] (an in-place op cannot broadcast self)")
  }
  if (!recording) return(.Call(rc_assign, self, result))
  # The engine's refusals (a view while recording) name copy_; the user called fn.
  tryCatch(.Call(rc_assign, self, result), rcuda_error = function(e) {
    rcuda_abort(class(e), sub("^copy_:", paste0(fn, ":"), conditionMessage(e)))
  })
}

# Runs compute(self, ...) and writes its result into self (Note [In-place methods as copies]).
inplace <- function(fn, self, compute, ...) {
  args <- list(...)
  tensors <- vapply(args, is_torch_tensor, logical(1))
  recording <- .Call(rc_grad_mode, NULL) &&
    (.Call(rc_requires_grad, self) || any(vapply(args[tensors], function(t) .Call(rc_requires_grad, t), logical(1))))
  if (recording) {
    if (.Call(rc_requires_grad, self) && .Call(rc_is_leaf, self)) {
      value_error(fn, ": a leaf Variable that requires grad is being used in an in-place operation ",
                  "(wrap it in with_no_grad(), or use the out-of-place $", sub("_$", "", fn), "())")
    }
    self_value <- .Call(rc_copy, "clone", self)
    args[tensors] <- lapply(args[tensors], function(t) .Call(rc_copy, "clone", t))
  } else {
    self_value <- self
  }
  inplace_write(fn, self, do.call(compute, c(list(self_value), args)), recording)
  self
}

# $<op>_() for an op of rc_unary, and one for a function of self and more arguments.
make_unary_ <- function(op) {
  force(op)
  fn <- paste0(op, "_")
  function(self) inplace(fn, self, function(x) .Call(rc_unary, op, x))
}
make_binary_ <- function(op) {
  force(op)
  fn <- paste0(op, "_")
  function(self, other) inplace(fn, self, function(x, other) .Call(rc_binary, op, x, other), other)
}

m <- tensor_methods
# torch has no Tensor$silu_(): its in-place silu is nnf_silu(inplace = TRUE).
for (op in setdiff(unary_ops, "silu")) m[[paste0(op, "_")]] <- make_unary_(op)
# torch has no Tensor$maximum_() or $minimum_().
for (op in setdiff(binary_ops, c("maximum", "minimum"))) m[[paste0(op, "_")]] <- make_binary_(op)
rm(op)

m$add_ <- function(self, other, alpha = 1L) inplace("add_", self, torch_add, other, alpha = alpha)
m$sub_ <- function(self, other, alpha = 1L) inplace("sub_", self, torch_sub, other, alpha = alpha)
m$pow_ <- function(self, exponent) inplace("pow_", self, torch_pow, exponent)
m$clamp_ <- function(self, min = NULL, max = NULL) inplace("clamp_", self, torch_clamp, min = min, max = max)
m$log2_ <- function(self) inplace("log2_", self, torch_log2)
m$log10_ <- function(self) inplace("log10_", self, torch_log10)
m$trunc_ <- function(self) inplace("trunc_", self, torch_trunc)
m$logit_ <- function(self, eps = NULL) inplace("logit_", self, torch_logit, eps = eps)
m$nan_to_num_ <- function(self, nan = 0, posinf = NULL, neginf = NULL) {
  inplace("nan_to_num_", self, torch_nan_to_num, nan = nan, posinf = posinf, neginf = neginf)
}
m$xlogy_ <- function(self, other) inplace("xlogy_", self, torch_xlogy, other)
m$tril_ <- function(self, diagonal = 0L) inplace("tril_", self, torch_tril, diagonal = diagonal)
m$triu_ <- function(self, diagonal = 0L) inplace("triu_", self, torch_triu, diagonal = diagonal)
m$cumsum_ <- function(self, dim) inplace("cumsum_", self, torch_cumsum, dim = dim)
m$masked_fill_ <- function(self, mask, value) {
  inplace("masked_fill_", self, function(x, mask, value) .Call(rc_masked_fill, x, mask, value), mask, value)
}

# Note [In-place views]
# $t_(), $transpose_(), $swapdims_(), $swapaxes_(), $squeeze_() and $unsqueeze_() change a
# tensor's shape and strides in place, as torch for R's: the R object, and so every variable
# holding it, then refers to the view of the same storage (rc_rebind); other views of the
# storage keep their shapes. Where autograd records (a non-leaf), the view records as the
# out-of-place method does, so gradients reach the tensor's history through it. A leaf that
# requires grad (a parameter) is refused in either grad mode: optimizers and modules hold that
# leaf itself, and a new one in its place would silently stop its training (torch changes the
# leaf's own metadata; rcuda's leaves cannot change shape).
inplace_view <- function(fn, self, view) {
  if (.Call(rc_requires_grad, self) && .Call(rc_is_leaf, self)) {
    value_error(fn, ": a leaf that requires grad cannot change its shape in place; use the ",
                "out-of-place $", sub("_$", "", fn), "()")
  }
  .Call(rc_rebind, self, view(self))
}

m$t_ <- function(self) inplace_view("t_", self, torch_t)
m$transpose_ <- function(self, dim0, dim1) {
  inplace_view("transpose_", self, function(x) torch_transpose(x, dim0, dim1))
}
m$swapdims_ <- function(self, dim0, dim1) {
  inplace_view("swapdims_", self, function(x) torch_transpose(x, dim0, dim1))
}
m$swapaxes_ <- function(self, axis0, axis1) {
  inplace_view("swapaxes_", self, function(x) torch_transpose(x, axis0, axis1))
}
m$squeeze_ <- function(self, dim = NULL) inplace_view("squeeze_", self, function(x) torch_squeeze(x, dim))
m$unsqueeze_ <- function(self, dim) inplace_view("unsqueeze_", self, function(x) torch_unsqueeze(x, dim))

# ---- layout -------------------------------------------------------------------------------

# Strides in elements, one per dim, or the one of dim (1-based; negative from the end).
m$stride <- function(self, dim = NULL) {
  strides <- as.numeric(.Call(rc_strides, self))  # numbers, as torch for R gives them
  if (is.null(dim)) return(strides)
  strides[[extra_dim(dim, length(strides), "stride", "dim")]]
}
# Where self's first element sits in its storage, in elements (0 for a tensor that starts it).
m$storage_offset <- function(self) .Call(rc_storage_offset, self)

m$byte <- dtype_conversion("uint8")
rm(m)
