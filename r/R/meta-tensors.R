# Meta tensors, as torch for R's device = "meta": a shape, a dtype and requires_grad, no data.
# torch_empty/zeros/ones/full/rand/randn make them when given device = "meta" or run inside
# with_device(device = "meta"); a dense tensor's $to(device = "meta") makes one of its shape.
#
# Note [Meta tensors]
# ~~~~~~~~~~~~~~~~~~~
# The engine has no meta device: a meta tensor lives here, in R, as sparse tensors do
# (sparse.R). An rcuda_meta_tensor is list(shape, dtype, requires_grad), dtype being the engine's
# name ("float32"). Its class ends in "rcuda_tensor", so is_torch_tensor() is TRUE; `$` reads its
# own tables below, and everything that would read values (a dense method, operators, indexing,
# as_array) is refused with a message saying that meta tensors hold no data, never reaching the
# engine with a list. The dtype and requires_grad rules are the dense tensors': each is checked
# on an empty CPU tensor made with the same arguments (meta_probe()), so a meta tensor accepts
# exactly what a dense one would.

meta_methods <- new.env(parent = emptyenv())
meta_fields <- new.env(parent = emptyenv())

new_meta_tensor <- function(shape, dtype, requires_grad) {
  parts <- list(shape = as.numeric(shape), dtype = dtype, requires_grad = isTRUE(requires_grad))
  asS4(structure(parts, class = c("rcuda_meta_tensor", "rcuda_tensor")))
}
is_meta_tensor <- function(x) inherits(x, "rcuda_meta_tensor")
meta_part <- function(x, name) .subset2(x, name)

# Whether a creation function's device (or, when NULL, the default device of with_device())
# is the meta device.
meta_requested <- function(device) {
  if (is.null(device)) device <- default_device_state$device  # with-device.R
  if (is.character(device) && length(device) == 1 && !is.na(device)) return(sub(":.*", "", device) == "meta")
  is_device(device) && device$type == "meta"
}

# A meta tensor of `size` for creation function `fn`: `make(size)` makes the dense tensor the
# same call would on the CPU; made at an empty size, it checks and settles the dtype and
# requires_grad (Note [Meta tensors]).
meta_creation <- function(size, names, fn, make) {
  if (any(size < 0)) value_error(fn, ": size must be non-negative, got ", deparse(size, nlines = 1)[1])
  if (!is.null(names)) value_error(fn, ": names are not supported on device \"meta\" (meta tensors hold no dim names)")
  probe <- make(rep(0, length(size)))
  new_meta_tensor(size, dtype_of(probe), probe$requires_grad)
}

meta_no_data_error <- function(what) {
  value_error("meta tensors hold no data: ", what, " is not available on them ",
              "(make the tensor on \"cpu\" or \"cuda\" instead)")
}

# PyTorch's words for a copy off the meta device.
meta_copy_error <- function(fn) value_error(fn, ": Cannot copy out of meta tensor; no data!")

#' @export
`$.rcuda_meta_tensor` <- function(x, name) {
  parts_dollar(x, name, meta_methods, meta_fields, function(name) {  # sparse.R
    if (is_dense_member(name)) meta_no_data_error(paste0("$", name))
    value_error("meta tensors have no method or field '", name, "'")
  })
}

#' @export
`[[.rcuda_meta_tensor` <- function(x, i) {
  if (is.character(i)) return(`$.rcuda_meta_tensor`(x, i))
  meta_no_data_error("indexing")
}

#' @export
`[.rcuda_meta_tensor` <- function(x, ...) meta_no_data_error("indexing")

#' @export
`[<-.rcuda_meta_tensor` <- function(x, ..., value) meta_no_data_error("assigning into a tensor")

#' @export
`$<-.rcuda_meta_tensor` <- function(x, name, value) meta_no_data_error(paste0("setting $", name))

#' @export
.DollarNames.rcuda_meta_tensor <- function(x, pattern = "") {
  grep(pattern, c(ls(meta_methods), ls(meta_fields)), value = TRUE)
}

# ---- fields and methods ---------------------------------------------------------------------

meta_fields$shape <- function(self) meta_part(self, "shape")
meta_fields$dtype <- function(self) new_dtype(meta_part(self, "dtype"))
meta_fields$device <- function(self) torch_device("meta")
meta_fields$requires_grad <- function(self) meta_part(self, "requires_grad")
meta_fields$is_cuda <- function(self) FALSE
meta_fields$ndim <- function(self) length(meta_part(self, "shape"))
meta_fields$layout <- function(self) torch_strided()

meta_methods$size <- function(self, dim = NULL) size_of_shape(meta_part(self, "shape"), dim)  # views.R
meta_methods$dim <- function(self) length(meta_part(self, "shape"))
meta_methods$numel <- function(self) prod(meta_part(self, "shape"))
meta_methods$is_meta <- function(self) TRUE
# (The dense rule decides which dtypes may require grad: Note [Meta tensors].)
meta_methods$requires_grad_ <- function(self, requires_grad = TRUE) {
  probe <- torch_empty(0, dtype = meta_part(self, "dtype"), device = "cpu")$requires_grad_(requires_grad)
  new_meta_tensor(meta_part(self, "shape"), meta_part(self, "dtype"), probe$requires_grad)
}
meta_methods$detach <- function(self) new_meta_tensor(meta_part(self, "shape"), meta_part(self, "dtype"), FALSE)
# A device may come first, as for dense tensors (x$to("meta")); any device but meta is refused.
meta_methods$to <- function(self, dtype = NULL, device = NULL, ...) {
  if ((is.character(dtype) && length(dtype) == 1 && device_spec(dtype)) || is_device(dtype)) {
    device <- dtype
    dtype <- NULL
  }
  if (!is.null(device) && !meta_requested(device)) meta_copy_error("to")
  if (is.null(dtype)) return(self)
  dtype <- dtype_of(torch_empty(0, device = "cpu")$to(dtype = dtype))
  new_meta_tensor(meta_part(self, "shape"), dtype, meta_part(self, "requires_grad"))
}
meta_methods$cpu <- function(self, ...) meta_copy_error("cpu")
meta_methods$cuda <- function(self, ...) meta_copy_error("cuda")

# ---- base R generics ------------------------------------------------------------------------

#' @export
dim.rcuda_meta_tensor <- function(x) meta_part(x, "shape")

#' @export
length.rcuda_meta_tensor <- function(x) prod(meta_part(x, "shape"))

#' @export
print.rcuda_meta_tensor <- function(x, ...) {
  cat(format(x, ...), sep = "\n")
  invisible(x)
}

# As torch for R: "torch_tensor", then [ META FloatType{10,10} ] in the dtype words dense
# tensors print (dtype_labels, dtype.R), then the autograd footer of a leaf.
#' @export
format.rcuda_meta_tensor <- function(x, ...) {
  c("torch_tensor",
    paste0("[ META ", dtype_labels[[meta_part(x, "dtype")]], "Type{",
           paste(meta_part(x, "shape"), collapse = ","), "} ]",
           if (meta_part(x, "requires_grad")) "[ requires_grad = TRUE ]"))
}

#' @export
str.rcuda_meta_tensor <- function(object, ...) {
  cat(dtype_labels[[meta_part(object, "dtype")]], " [", paste0("1:", meta_part(object, "shape"), collapse = ", "),
      "] (meta)\n", sep = "")
  invisible()
}

#' @export
as_array.rcuda_meta_tensor <- function(x, ...) meta_no_data_error("as_array()")
#' @export
as.array.rcuda_meta_tensor <- function(x, ...) meta_no_data_error("as.array()")
#' @export
as.matrix.rcuda_meta_tensor <- function(x, ...) meta_no_data_error("as.matrix()")
#' @export
as.vector.rcuda_meta_tensor <- function(x, mode = "any") meta_no_data_error("as.vector()")
#' @export
as.double.rcuda_meta_tensor <- function(x, ...) meta_no_data_error("as.numeric()")
#' @export
as.integer.rcuda_meta_tensor <- function(x, ...) meta_no_data_error("as.integer()")
#' @export
as.logical.rcuda_meta_tensor <- function(x, ...) meta_no_data_error("as.logical()")
#' @export
mean.rcuda_meta_tensor <- function(x, ...) meta_no_data_error("mean()")
#' @export
Ops.rcuda_meta_tensor <- function(e1, e2) meta_no_data_error(paste0("the operator `", .Generic, "`"))
#' @export
Math.rcuda_meta_tensor <- function(x, ...) meta_no_data_error(paste0(.Generic, "()"))
#' @export
Summary.rcuda_meta_tensor <- function(..., na.rm = FALSE) meta_no_data_error(paste0(.Generic, "()"))

# S4, as dense and sparse tensors (Note [Operator dispatch] in s4.R): autoprint calls show(),
# and the operators must refuse before the dense methods hand a list to the engine.
methods::setOldClass(c("rcuda_meta_tensor", "rcuda_tensor"))
methods::setMethod("show", "rcuda_meta_tensor", function(object) print.rcuda_meta_tensor(object))
meta_operator_error <- function(e1, e2) meta_no_data_error(paste0("the operator `", .Generic, "`"))
meta_sides <- list(c("rcuda_meta_tensor", "ANY"), c("ANY", "rcuda_meta_tensor"),
                   c("rcuda_meta_tensor", "rcuda_meta_tensor"), c("rcuda_meta_tensor", "rcuda_tensor"),
                   c("rcuda_tensor", "rcuda_meta_tensor"))
for (sig in meta_sides) {
  for (group in c("Arith", "Compare", "Logic")) methods::setMethod(group, sig, meta_operator_error)
  methods::setMethod("%*%", sig, function(x, y) meta_no_data_error("the operator `%*%`"))
}
methods::setMethod("Arith", c("rcuda_meta_tensor", "missing"), meta_operator_error)  # -x, +x
rm(group, sig)
