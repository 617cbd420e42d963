# Named tensors, as torch for R's: dim names given at creation (`names =`), read with
# `$names` and `$has_names()`, changed with `$rename()` / `$rename_()`, and a `dim` given by
# name where a function takes one (torch_cat and the reductions).
#
# Note [Named tensors]: the names live on the R handle, as its attribute "rcuda_names" (a
# character vector with one element per dim, NA for an unnamed dim); the engine knows nothing
# of them. A handle is an external pointer, which R never copies, so every R reference to one
# handle sees the same names: `$rename_()` sets them in place, `$rename()` returns a new handle
# to the same tensor (a view, as torch's) with names of its own.
# What keeps names: the methods $clone(), $detach(), $to(), $cpu(), $cuda(), $contiguous() and
# the dtype conversions ($float(), $long(), ...), whose result has the input's dims, and
# torch_cat when all its tensors have the same names. Every other op returns an unnamed tensor
# (operators, Math functions, views that move or drop dims, reductions, indexing): PyTorch's
# per-op name rules are not copied. Operators drop names because reading the attribute of both
# operands costs about 0.4 us on the operator path (two attr() calls; `a + b` of one-element
# tensors takes about 3 us, Note [Operator dispatch] in s4.R); a named subclass with S4 methods
# of its own would keep them at no cost to unnamed tensors. torch_save() does not write names. A `dim` given as a name is resolved to its 1-based index by dim_index() (torch_cat,
# torch_sum and the reductions of reductions.R, torch_var_mean, torch_std_mean); torch_norm
# refuses it, as LibTorch does.

names_attr <- "rcuda_names"

# The names of tensor x, or NULL when it has none.
tensor_names <- function(x) attr(x, names_attr, exact = TRUE)

# A `names` argument for a tensor of ndim dims: NULL, or a character vector of length ndim
# (NA for an unnamed dim) without empty or repeated names; all NA is the same as NULL.
names_arg <- function(names, ndim, fn, arg = "names") {
  if (is.null(names)) return(NULL)
  if (is.logical(names) && all(is.na(names))) names <- as.character(names)
  if (!is.character(names) || is.object(names)) {
    value_error(fn, ": ", arg, " must be a character vector of dim names, got ", describe_value(names))
  }
  if (length(names) != ndim) {
    value_error(fn, ": ", arg, " must name each of the tensor's ", ndim, " dims, got ", length(names),
                " name", if (length(names) != 1) "s", " (", deparse(unname(names), nlines = 1)[1], ")")
  }
  given <- names[!is.na(names)]
  if (any(given == "")) value_error(fn, ": ", arg, " must not hold empty names, got ", deparse(unname(names), nlines = 1)[1])
  if (anyDuplicated(given)) {
    value_error(fn, ": ", arg, " must not repeat a name, got \"", given[anyDuplicated(given)], "\" twice in ",
                deparse(unname(names), nlines = 1)[1])
  }
  if (!length(given)) return(NULL)
  unname(names)
}

describe_value <- function(x) if (is.null(x)) "NULL" else deparse(x, nlines = 1)[1]

# Sets names (checked, or NULL to drop them) on the handle t itself and returns it.
with_names <- function(t, names) {
  if (is.null(names) && is.null(tensor_names(t))) return(t)
  attr(t, names_attr) <- names
  t
}

# The 1-based index of each dim named in `dim` (a character vector) among self's names; any
# other dim is returned as it is.
dim_index <- function(dim, self, fn, arg = "dim") {
  if (!is.character(dim)) return(dim)
  names <- if (is_torch_tensor(self)) tensor_names(self)
  if (is.null(names)) {
    value_error(fn, ": ", arg, " must be whole numbers (1-based; negative from the end) or names of a named ",
                "tensor's dims; got ", describe_value(dim), ", but the tensor has no names")
  }
  at <- match(dim, names)
  if (anyNA(at)) {
    value_error(fn, ": ", arg, " \"", dim[is.na(at)][1], "\" is not a dim name of the tensor, whose names are ",
                deparse(names, nlines = 1)[1])
  }
  at
}

# The names rename() gives: rename(W = "a") renames dim W; rename("a", "b") names every dim;
# rename(NULL) drops the names.
renamed <- function(self, args, fn) {
  if (length(args) == 1 && is.null(args[[1]])) return(NULL)
  if (!all(vapply(args, function(a) (is.character(a) || (length(a) == 1 && is.na(a))) && !is.object(a), logical(1)))) {
    value_error(fn, ": names must be strings, got ", paste(vapply(args, describe_value, ""), collapse = ", "))
  }
  keys <- names(args)
  if (is.null(keys) || all(keys == "")) {
    return(names_arg(as.character(unlist(args, use.names = FALSE)), self$ndim, fn))
  }
  if (any(keys == "")) value_error(fn, ": give every dim as old = \"new\", or all the new names unnamed, not a mix")
  old <- tensor_names(self)
  if (is.null(old)) {
    rcuda_abort("rcuda_value_error", paste0(fn, ": the tensor has no names, so dim ", keys[1], " cannot be renamed ",
                "(rename(\"a\", \"b\", ...) names every dim)"), also = "runtime_error")
  }
  at <- match(keys, old)
  if (anyNA(at)) {
    value_error(fn, ": \"", keys[is.na(at)][1], "\" is not a dim name of the tensor, whose names are ",
                deparse(old, nlines = 1)[1])
  }
  new <- old
  new[at] <- vapply(args, function(a) as.character(a)[1], "")
  names_arg(new, length(old), fn)
}

m <- tensor_methods
tensor_fields$names <- tensor_names
m$has_names <- function(self) !is.null(tensor_names(self))
m$rename <- function(self, ...) {
  names <- renamed(self, list(...), "rename")
  .Call(rc_marked_handle, self, names_attr, names)
}
m$rename_ <- function(self, ...) invisible(with_names(self, renamed(self, list(...), "rename_")))

# Methods whose result has self's dims keep self's names (Note [Named tensors]).
keeps_names <- function(method) {
  force(method)
  function(self, ...) {
    out <- method(self, ...)
    names <- tensor_names(self)
    if (is.null(names) || !is_torch_tensor(out)) return(out)
    with_names(out, names)
  }
}
for (name in c("clone", "detach", "to", "cpu", "cuda", "contiguous", "float", "double", "long", "int",
               "short", "char", "bool", "half")) {
  if (!is.null(m[[name]])) m[[name]] <- keeps_names(m[[name]])
}
rm(m, name)
