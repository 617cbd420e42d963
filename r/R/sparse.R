# Sparse COO tensors (docs/sparse.md), as torch for R's: torch_sparse_coo_tensor() with 1-based
# indices, $to_sparse(), $to_dense(), $coalesce(), $indices(), $values(), $is_sparse(), and the
# sparse-dense product (torch_sparse_mm, torch_mm, torch_matmul, $mm, $matmul). CSR tensors are
# in sparse-csr.R; the dense and COO tensors' $to_sparse_csr() and $is_sparse_csr() are here.
#
# An rcuda_sparse_tensor is a list of its parts: indices (an int64 tensor, 0-based as the
# engine's; $indices() adds 1), values (a dense tensor, which carries requires_grad and the
# gradient), size and coalesced. Its class ends in "rcuda_tensor", so is_torch_tensor() is TRUE;
# `$` reads its own tables below and refuses a dense method with a message naming it.

sparse_methods <- new.env(parent = emptyenv())
sparse_fields <- new.env(parent = emptyenv())

new_sparse_tensor <- function(parts) {
  asS4(structure(parts, class = c("rcuda_sparse_tensor", "rcuda_tensor")))
}
sparse_part <- function(x, name) .subset2(x, name)
sparse_parts <- function(x) {
  list(indices = .subset2(x, "indices"), values = .subset2(x, "values"), size = .subset2(x, "size"),
       coalesced = .subset2(x, "coalesced"))
}
is_sparse_tensor <- function(x) inherits(x, "rcuda_sparse_tensor")

# The `$` of a tensor held as R parts (sparse COO, CSR, meta): a method of its table bound to x,
# or a field's value; `not_found(name)` says why neither table has the name.
parts_dollar <- function(x, name, methods, fields, not_found) {
  method <- methods[[name]]
  if (!is.null(method)) return(function(...) method(x, ...))
  field <- fields[[name]]
  if (!is.null(field)) return(field(x))
  not_found(name)
}
is_dense_member <- function(name) !is.null(tensor_methods[[name]]) || !is.null(tensor_fields[[name]])

#' @export
`$.rcuda_sparse_tensor` <- function(x, name) {
  parts_dollar(x, name, sparse_methods, sparse_fields, function(name) {
    value_error("sparse tensors have no method or field '", name, "'",
                if (is_dense_member(name)) "; call $to_dense() first")
  })
}

#' @export
`[[.rcuda_sparse_tensor` <- function(x, i) {
  if (is.character(i)) return(`$.rcuda_sparse_tensor`(x, i))
  value_error("sparse tensors cannot be indexed; call $to_dense() first")
}

#' @export
`[.rcuda_sparse_tensor` <- function(x, ...) value_error("sparse tensors cannot be indexed; call $to_dense() first")

#' @export
.DollarNames.rcuda_sparse_tensor <- function(x, pattern = "") {
  grep(pattern, c(ls(sparse_methods), ls(sparse_fields)), value = TRUE)
}

#' @export
torch_sparse_coo_tensor <- function(indices, values, size = NULL, dtype = NULL, device = NULL,
                                    requires_grad = FALSE) {
  fn <- "torch_sparse_coo_tensor"
  if (!is_torch_tensor(indices)) {
    if (!is.numeric(indices)) value_error(fn, ": indices must be an integer matrix or tensor, got ", describe(indices))
    if (is.null(dim(indices))) indices <- matrix(indices, nrow = 1)
    indices <- torch_tensor(indices, dtype = torch_long())
  }
  if (is_sparse_tensor(indices)) value_error(fn, ": indices must be dense")
  if (!is_torch_tensor(values)) values <- torch_tensor(values, dtype = dtype)
  if (is_sparse_tensor(values)) value_error(fn, ": values must be dense")
  if (!is.null(dtype)) values <- values$to(dtype = dtype)
  if (!is.null(device)) {
    indices <- indices$to(device = device)
    values <- values$to(device = device)
  }
  if (!is.null(size)) size <- check_sparse_size(unlist(size), fn)
  if (isTRUE(requires_grad)) values <- values$detach()$requires_grad_(TRUE)
  new_sparse_tensor(.Call(rc_sparse_coo_tensor, indices, values, size))
}

check_sparse_size <- function(size, fn) {
  if (!is.numeric(size) || anyNA(size) || any(size < 0) || any(size != trunc(size))) {
    value_error(fn, ": size must be a vector of non-negative whole numbers, got ", describe(size))
  }
  size
}

#' @export
torch_sparse_mm <- function(sparse, dense) {
  if (!is_sparse_tensor(sparse)) {
    value_error("torch_sparse_mm: sparse must be a sparse tensor (torch_sparse_coo_tensor(), $to_sparse() or $to_sparse_csr()), got ",
                if (is_torch_tensor(sparse)) "a dense tensor" else describe(sparse))
  }
  if (is_sparse_csr_tensor(sparse)) sparse <- csr_to_coo(sparse)  # sparse-csr.R
  if (is_sparse_tensor(dense)) value_error("torch_sparse_mm: dense must be a dense tensor; sparse-sparse products are not supported")
  if (!is_torch_tensor(dense)) {
    dense <- torch_tensor(dense, dtype = sparse_fields$dtype(sparse), device = sparse_fields$device(sparse))
  }
  .Call(rc_sparse_mm, sparse, dense)
}

# ---- methods of sparse tensors ----------------------------------------------------------------

sparse_methods$to_dense <- function(self, dtype = NULL) {
  out <- .Call(rc_sparse_to_dense, self)
  if (is.null(dtype)) out else out$to(dtype = dtype)
}
sparse_methods$to_sparse <- function(self, sparse_dim = NULL) self
sparse_methods$coalesce <- function(self) {
  if (isTRUE(sparse_part(self, "coalesced"))) return(self)
  new_sparse_tensor(.Call(rc_sparse_coalesce, self))
}
sparse_methods$is_coalesced <- function(self) isTRUE(sparse_part(self, "coalesced"))
sparse_methods$is_sparse <- function(self) TRUE
sparse_methods$is_sparse_csr <- function(self) FALSE
sparse_methods$to_sparse_csr <- function(self, dense_dim = NULL) {
  check_csr_dense_dim(dense_dim)
  coo_to_csr(self, "to_sparse_csr")  # sparse-csr.R
}
# As torch: the parts of an uncoalesced tensor are not read (its entries may repeat).
sparse_methods$indices <- function(self) {
  if (!sparse_methods$is_coalesced(self)) {
    value_error("Cannot get indices on an uncoalesced tensor, please call $coalesce() first")
  }
  sparse_part(self, "indices") + 1L
}
sparse_methods$values <- function(self) {
  if (!sparse_methods$is_coalesced(self)) {
    value_error("Cannot get values on an uncoalesced tensor, please call $coalesce() first")
  }
  sparse_part(self, "values")
}
sparse_methods$`_indices` <- function(self) sparse_part(self, "indices") + 1L
sparse_methods$`_values` <- function(self) sparse_part(self, "values")
sparse_methods$`_nnz` <- function(self) sparse_fields$nnz(self)
sparse_methods$sparse_dim <- function(self) sparse_part(self, "indices")$size(1)
sparse_methods$dense_dim <- function(self) length(sparse_part(self, "size")) - sparse_methods$sparse_dim(self)
sparse_methods$size <- function(self, dim = NULL) size_of_shape(sparse_part(self, "size"), dim)  # views.R
sparse_methods$dim <- function(self) length(sparse_part(self, "size"))
sparse_methods$numel <- function(self) prod(sparse_part(self, "size"))
sparse_methods$mm <- function(self, mat2) torch_sparse_mm(self, mat2)
sparse_methods$matmul <- function(self, other) torch_sparse_mm(self, other)
sparse_methods$to <- function(self, dtype = NULL, device = NULL, ...) {
  parts <- sparse_parts(self)
  if (!is.null(device)) parts$indices <- parts$indices$to(device = device)
  parts$values <- parts$values$to(dtype = dtype, device = device, ...)
  new_sparse_tensor(parts)
}
# (through self$to, so that the CSR layout's own `to` serves it too: sparse-csr.R)
sparse_methods$cuda <- function(self, device = NULL, ...) {
  self$to(device = if (is.null(device)) "cuda" else device)
}
sparse_methods$cpu <- function(self, ...) self$to(device = "cpu")
sparse_methods$requires_grad_ <- function(self, requires_grad = TRUE) {
  sparse_part(self, "values")$requires_grad_(requires_grad)
  invisible(self)
}
sparse_methods$detach <- function(self) {
  parts <- sparse_parts(self)
  parts$values <- parts$values$detach()
  new_sparse_tensor(parts)
}

sparse_fields$shape <- function(self) sparse_part(self, "size")
sparse_fields$dtype <- function(self) sparse_part(self, "values")$dtype
sparse_fields$device <- function(self) sparse_part(self, "values")$device
sparse_fields$is_cuda <- function(self) sparse_part(self, "values")$is_cuda
sparse_fields$ndim <- function(self) length(sparse_part(self, "size"))
sparse_fields$nnz <- function(self) sparse_part(self, "indices")$size(2)
sparse_fields$requires_grad <- function(self) sparse_part(self, "values")$requires_grad
sparse_fields$layout <- function(self) torch_sparse_coo()
sparse_fields$ptr <- function(self) self

# Dense tensors: the conversion and the queries that tell the layouts apart.
tensor_methods$to_sparse <- function(self, sparse_dim = NULL) {
  if (!is.null(sparse_dim) && (!is.numeric(sparse_dim) || length(sparse_dim) != 1)) {
    value_error("to_sparse: sparse_dim must be NULL or one number, got ", describe(sparse_dim))
  }
  new_sparse_tensor(.Call(rc_to_sparse, self, sparse_dim))
}
tensor_methods$to_dense <- function(self, dtype = NULL) if (is.null(dtype)) self else self$to(dtype = dtype)
tensor_methods$is_sparse <- function(self) FALSE
tensor_methods$to_sparse_csr <- function(self, dense_dim = NULL) dense_to_csr(self, dense_dim)  # sparse-csr.R
tensor_methods$is_sparse_csr <- function(self) FALSE

# ---- base R generics -----------------------------------------------------------------------

#' @export
dim.rcuda_sparse_tensor <- function(x) sparse_part(x, "size")

#' @export
length.rcuda_sparse_tensor <- function(x) prod(sparse_part(x, "size"))

# Conversions to R refuse, as torch for R's (in its words): an R array of a large sparse tensor
# is all zeros, which the caller asks for by name with $to_dense().
sparse_conversion_error <- function(fn) {
  value_error(fn, ": Sparse tensors are not supported for as_array conversion. Use ", fn,
              "(x$to_dense()) to convert a dense copy of the tensor")
}

#' @export
as.array.rcuda_sparse_tensor <- function(x, ...) sparse_conversion_error("as.array")

#' @export
as.matrix.rcuda_sparse_tensor <- function(x, ...) sparse_conversion_error("as.matrix")

#' @export
as_array.rcuda_sparse_tensor <- function(x, ...) sparse_conversion_error("as_array")

# head() and tail(): the first or last n rows (along dim 1) as a sparse tensor, as torch for R's
# (its index_select keeps the layout); the entries in those rows keep their order, so a
# coalesced tensor gives a coalesced one.
sparse_head_tail <- function(x, n, fn, from_end) {
  size <- sparse_part(x, "size")
  if (!length(size)) value_error(fn, "(): a 0-dim tensor has no rows")
  n <- convenience_number(n, fn, "n", function(v) v == trunc(v), "a whole number")
  rows <- size[[1]]
  keep <- if (n >= 0) min(n, rows) else max(rows + n, 0)
  first <- if (from_end) rows - keep else 0  # 0-based, as the parts' indices
  parts <- sparse_parts(x)
  row <- as.numeric(as_array(parts$indices[1, ]$cpu()))
  at <- which(row >= first & row < first + keep)
  shift <- torch_zeros(parts$indices$size(1), 1, dtype = torch_long(), device = parts$indices$device)
  shift[1, 1] <- first
  parts$indices <- torch_index_select(parts$indices, 2, at) - shift
  parts$values <- torch_index_select(parts$values, 1, at)
  parts$size[[1]] <- keep
  new_sparse_tensor(parts)
}

#' @export
head.rcuda_sparse_tensor <- function(x, n = 6L, ...) sparse_head_tail(x, n, "head", from_end = FALSE)

#' @export
tail.rcuda_sparse_tensor <- function(x, n = 6L, ...) sparse_head_tail(x, n, "tail", from_end = TRUE)

#' @export
Ops.rcuda_sparse_tensor <- function(e1, e2) {
  value_error("sparse tensors support no operator `", .Generic, "`; use torch_sparse_mm() or call $to_dense() first")
}

#' @export
print.rcuda_sparse_tensor <- function(x, ...) {
  cat(format(x, ...), sep = "\n")
  invisible(x)
}

#' @export
format.rcuda_sparse_tensor <- function(x, ...) {
  values <- sparse_part(x, "values")
  c("torch_tensor",
    sparse_header(values, sparse_part(x, "size"), "Sparse"),
    paste0("indices", if (!sparse_methods$is_coalesced(x)) " (uncoalesced)", ":"),
    utils::tail(format(sparse_part(x, "indices") + 1L), -1),
    "values:",
    utils::tail(format(values$detach()), -1))
}

# The type line of a sparse tensor, as LibTorch's: [ SparseCPUFloatType{3,4} ] (COO) or
# [ SparseCsrCUDADoubleType{2,2} requires_grad ] (CSR).
sparse_header <- function(values, size, layout) {
  device <- if (values$is_cuda) "CUDA" else "CPU"
  type <- sub("^\\[ (CUDA|CPU)", "", sub("\\{.*$", "", utils::tail(format(values$detach()), 1)))
  grad <- if (values$requires_grad) " requires_grad" else ""
  paste0("[ ", layout, device, type, "{", paste(size, collapse = ","), "}", grad, " ]")
}

# S4, as dense tensors (Note [Operator dispatch] in s4.R): R 4.2 dispatches %*% only on S4
# objects, and autoprint of one calls show().
methods::setOldClass(c("rcuda_sparse_tensor", "rcuda_tensor"))
methods::setMethod("show", "rcuda_sparse_tensor", function(object) print.rcuda_sparse_tensor(object))
# Operators refuse sparse operands by name (the dense tensors' methods would unwrap a list).
sparse_operator_error <- function(e1, e2) {
  value_error("sparse tensors support no operator `", .Generic, "`; use torch_sparse_mm() or call $to_dense() first")
}
for (group in c("Arith", "Compare", "Logic")) {
  for (sig in list(c("rcuda_sparse_tensor", "ANY"), c("ANY", "rcuda_sparse_tensor"),
                   c("rcuda_sparse_tensor", "rcuda_sparse_tensor"), c("rcuda_sparse_tensor", "rcuda_tensor"),
                   c("rcuda_tensor", "rcuda_sparse_tensor"))) {
    methods::setMethod(group, sig, sparse_operator_error)
  }
}
rm(group, sig)
