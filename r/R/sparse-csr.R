# Sparse CSR tensors (docs/sparse.md), as torch for R's (PyTorch's torch.sparse_csr layout):
# torch_sparse_csr_tensor(), $to_sparse_csr(), $crow_indices(), $col_indices(), $values(),
# $to_dense(), $to_sparse() (COO) and the sparse-dense product.
#
# An rcuda_sparse_csr_tensor is a list of its parts: crow_indices [nrows + 1] and col_indices
# [nnz] (int64 tensors, 0-based in R as in torch for R, which hands them to LibTorch unchanged;
# COO indices are 1-based in both), values [nnz] (a dense tensor, which carries requires_grad
# and the gradient) and size. The engine has no CSR type: every computation converts to COO
# (csr_to_coo) with the same values tensor, so gradients reach the CSR values through the COO
# product and to_dense. Its class sits below rcuda_sparse_tensor, so torch_mm(), torch_matmul()
# and %*% send it to torch_sparse_mm(), and the conversions to R arrays, the operators and
# indexing refuse it as they refuse a COO tensor.
#
# Note [CSR invariants]: as PyTorch's checked invariants, crow_indices starts at 0, never
# decreases and ends at nnz, and the columns of each row are in [0, ncols), increasing and
# distinct. Every CSR tensor holds them (the constructor checks them; conversions make them from
# a coalesced COO tensor), so its COO form is coalesced as it stands. The index arithmetic runs
# on the host in R (the parts are copied there once per conversion), as the checks do.

csr_methods <- new.env(parent = emptyenv())
csr_fields <- new.env(parent = emptyenv())

new_csr_tensor <- function(parts) {
  asS4(structure(parts, class = c("rcuda_sparse_csr_tensor", "rcuda_sparse_tensor", "rcuda_tensor")))
}
is_sparse_csr_tensor <- function(x) inherits(x, "rcuda_sparse_csr_tensor")
csr_parts <- function(x) {
  list(crow_indices = .subset2(x, "crow_indices"), col_indices = .subset2(x, "col_indices"),
       values = .subset2(x, "values"), size = .subset2(x, "size"))
}
host_indices <- function(t) as.numeric(as_array(t$cpu()))

#' @export
torch_sparse_csr <- function() new_layout("sparse_csr")  # beside torch_sparse_coo() in creation.R

#' @export
`$.rcuda_sparse_csr_tensor` <- function(x, name) {
  parts_dollar(x, name, csr_methods, csr_fields, function(name) {  # sparse.R
    hint <- if (!is.null(sparse_methods[[name]]) || !is.null(sparse_fields[[name]])) {
      "; call $to_sparse() first for a COO tensor"
    } else if (is_dense_member(name)) {
      "; call $to_dense() first"
    }
    value_error("sparse CSR tensors have no method or field '", name, "'", hint)
  })
}

#' @export
`[[.rcuda_sparse_csr_tensor` <- function(x, i) {
  if (is.character(i)) return(`$.rcuda_sparse_csr_tensor`(x, i))
  value_error("sparse tensors cannot be indexed; call $to_dense() first")
}

#' @export
.DollarNames.rcuda_sparse_csr_tensor <- function(x, pattern = "") {
  grep(pattern, c(ls(csr_methods), ls(csr_fields)), value = TRUE)
}

#' @export
torch_sparse_csr_tensor <- function(crow_indices, col_indices, values, size = NULL, dtype = NULL,
                                    device = NULL, requires_grad = FALSE) {
  fn <- "torch_sparse_csr_tensor"
  crow <- csr_index_arg(crow_indices, fn, "crow_indices")
  col <- csr_index_arg(col_indices, fn, "col_indices")
  if (!is_torch_tensor(values)) values <- torch_tensor(values, dtype = dtype)
  if (is_sparse_tensor(values)) value_error(fn, ": values must be dense")
  if (values$ndim != 1) {
    shape_error(fn, ": values must be 1-D [nnz] (hybrid and batched CSR tensors are not supported), got shape [",
                paste(values$shape, collapse = ", "), "]")
  }
  if (!is.null(dtype)) values <- values$to(dtype = dtype)
  if (!is.null(device)) values <- values$to(device = device)
  if (length(crow) == 0) value_error(fn, ": crow_indices must have nrows + 1 entries, got none")
  if (is.null(size)) {
    size <- c(length(crow) - 1, if (length(col)) max(col) + 1 else 0)
  } else {
    size <- check_sparse_size(unlist(size), fn)
    if (length(size) != 2) value_error(fn, ": size must have 2 entries (rows, columns), got ", describe_value(size))
  }
  check_csr_indices(crow, col, size, fn)
  if (values$size(1) != length(col)) {
    shape_error(fn, ": values must have one entry per column index (", length(col), "), got ", values$size(1))
  }
  if (isTRUE(requires_grad)) values <- values$detach()$requires_grad_(TRUE)
  new_csr_tensor(list(crow_indices = torch_tensor(crow, dtype = torch_long(), device = values$device),
                      col_indices = torch_tensor(col, dtype = torch_long(), device = values$device),
                      values = values, size = size))
}

# An index argument as an R vector of whole numbers: an R vector or a 1-D integer tensor.
csr_index_arg <- function(x, fn, arg) {
  if (is_sparse_tensor(x)) value_error(fn, ": ", arg, " must be dense")
  if (is_torch_tensor(x)) {
    if (is_float_tensor(x) || x$dtype == torch_bool()) {
      dtype_error(fn, ": ", arg, " must be an integer tensor (torch_long()), got ", x$dtype$name)
    }
    if (x$ndim != 1) shape_error(fn, ": ", arg, " must be 1-D, got ", x$ndim, " dims")
    return(host_indices(x))
  }
  if (!is.numeric(x) || length(dim(x)) > 1 || anyNA(x) || any(x != trunc(x))) {
    value_error(fn, ": ", arg, " must be a vector of whole numbers or a 1-D integer tensor, got ", describe_value(x))
  }
  as.numeric(x)
}

# Note [CSR invariants], each with a message naming the first entry that breaks it.
check_csr_indices <- function(crow, col, size, fn) {
  nrows <- size[[1]]
  ncols <- size[[2]]
  nnz <- length(col)
  if (length(crow) != nrows + 1) {
    shape_error(fn, ": crow_indices must have nrows + 1 = ", nrows + 1, " entries, got ", length(crow))
  }
  if (crow[[1]] != 0) {
    value_error(fn, ": crow_indices must start at 0 (CSR indices count from 0, as torch for R's), got ", crow[[1]])
  }
  down <- which(diff(crow) < 0)
  if (length(down)) {
    value_error(fn, ": crow_indices must not decrease, but entry ", down[1] + 1, " is ", crow[down[1] + 1],
                " after ", crow[down[1]])
  }
  if (crow[[length(crow)]] != nnz) {
    value_error(fn, ": crow_indices must end at nnz = length(col_indices) = ", nnz, ", got ", crow[[length(crow)]])
  }
  out <- which(col < 0 | col >= ncols)
  if (length(out)) {
    index_error(fn, ": col_indices must be in [0, ", ncols, ") (0-based), but entry ", out[1], " is ", col[out[1]])
  }
  row <- rep(seq_len(nrows), diff(crow))
  bad <- which(diff(row) == 0 & diff(col) <= 0)
  if (length(bad)) {
    value_error(fn, ": the col_indices of each row must increase (sorted, no repeats), but entries ", bad[1],
                " and ", bad[1] + 1, ", both in row ", row[bad[1]], ", are ", col[bad[1]], " then ", col[bad[1] + 1])
  }
}

# ---- conversions ----------------------------------------------------------------------------

# The COO tensor with the same entries and the same values tensor; coalesced by Note [CSR invariants].
csr_to_coo <- function(x) {
  parts <- csr_parts(x)
  row <- rep(seq_len(parts$size[[1]]) - 1, diff(host_indices(parts$crow_indices)))
  row <- torch_tensor(row, dtype = torch_long(), device = parts$col_indices$device)
  new_sparse_tensor(list(indices = torch_stack(list(row, parts$col_indices), 1), values = parts$values,
                         size = parts$size, coalesced = TRUE))
}

# A 2-D COO tensor with no dense dims, coalesced (row-major, no repeats), as CSR.
coo_to_csr <- function(x, fn) {
  size <- sparse_part(x, "size")
  if (length(size) != 2 || sparse_part(x, "values")$ndim != 1) {
    value_error(fn, ": only 2-D sparse tensors with no dense dims convert to CSR, got size [",
                paste(size, collapse = ", "), "] with ", sparse_part(x, "values")$ndim - 1, " dense dims")
  }
  x <- sparse_methods$coalesce(x)
  indices <- sparse_part(x, "indices")
  per_row <- tabulate(host_indices(indices[1, ]) + 1, nbins = size[[1]])
  new_csr_tensor(list(crow_indices = torch_tensor(c(0, cumsum(per_row)), dtype = torch_long(), device = indices$device),
                      col_indices = indices[2, ]$contiguous(), values = sparse_part(x, "values"), size = size))
}

# $to_sparse_csr() of a dense tensor (sparse.R): only the 2-D layout, with no dense dims.
dense_to_csr <- function(x, dense_dim) {
  check_csr_dense_dim(dense_dim)
  if (x$ndim != 2) {
    value_error("to_sparse_csr: only 2-D tensors convert to CSR (batched CSR tensors are not supported), got ",
                x$ndim, " dims")
  }
  coo_to_csr(x$to_sparse(), "to_sparse_csr")
}
check_csr_dense_dim <- function(dense_dim) {
  if (!is.null(dense_dim) && !identical(as.numeric(dense_dim), 0)) {
    value_error("to_sparse_csr: dense_dim must be NULL or 0 (hybrid CSR tensors are not supported), got ",
                describe_value(dense_dim))
  }
}

# ---- methods of CSR tensors -----------------------------------------------------------------

csr_methods$to_dense <- function(self, dtype = NULL) sparse_methods$to_dense(csr_to_coo(self), dtype)
csr_methods$to_sparse <- function(self, sparse_dim = NULL) {
  if (!is.null(sparse_dim) && !identical(as.numeric(sparse_dim), 2)) {
    value_error("to_sparse: a CSR tensor converts to COO with sparse_dim NULL or 2, got ", describe_value(sparse_dim))
  }
  csr_to_coo(self)
}
csr_methods$to_sparse_csr <- function(self, dense_dim = NULL) {
  check_csr_dense_dim(dense_dim)
  self
}
csr_methods$is_sparse <- function(self) FALSE  # as PyTorch's: TRUE for the COO layout only
csr_methods$is_sparse_csr <- function(self) TRUE
csr_methods$crow_indices <- function(self) sparse_part(self, "crow_indices")
csr_methods$col_indices <- function(self) sparse_part(self, "col_indices")
csr_methods$values <- function(self) sparse_part(self, "values")
csr_methods$`_nnz` <- function(self) csr_fields$nnz(self)
csr_methods$size <- function(self, dim = NULL) sparse_methods$size(self, dim)
csr_methods$dim <- function(self) 2L
csr_methods$numel <- function(self) prod(sparse_part(self, "size"))
csr_methods$mm <- function(self, mat2) torch_sparse_mm(self, mat2)
csr_methods$matmul <- function(self, other) torch_sparse_mm(self, other)
csr_methods$to <- function(self, dtype = NULL, device = NULL, ...) {
  parts <- csr_parts(self)
  if (!is.null(device)) {
    parts$crow_indices <- parts$crow_indices$to(device = device)
    parts$col_indices <- parts$col_indices$to(device = device)
  }
  parts$values <- parts$values$to(dtype = dtype, device = device, ...)
  new_csr_tensor(parts)
}
# What reads only the values and the size is the COO layout's (sparse.R).
for (name in c("cuda", "cpu", "requires_grad_")) csr_methods[[name]] <- sparse_methods[[name]]
csr_methods$detach <- function(self) {
  parts <- csr_parts(self)
  parts$values <- parts$values$detach()
  new_csr_tensor(parts)
}

for (name in c("shape", "dtype", "device", "is_cuda")) csr_fields[[name]] <- sparse_fields[[name]]
rm(name)
csr_fields$ndim <- function(self) 2L
csr_fields$nnz <- function(self) sparse_part(self, "col_indices")$size(1)
csr_fields$requires_grad <- function(self) sparse_part(self, "values")$requires_grad
csr_fields$layout <- function(self) torch_sparse_csr()
csr_fields$ptr <- function(self) self

# ---- base R generics ------------------------------------------------------------------------
# dim(), length(), the conversions to R (refused), the operators (refused) and `[` are the COO
# class's (sparse.R), which read only the size.

#' @export
head.rcuda_sparse_csr_tensor <- function(x, n = 6L, ...) coo_to_csr(utils::head(csr_to_coo(x), n), "head")

#' @export
tail.rcuda_sparse_csr_tensor <- function(x, n = 6L, ...) coo_to_csr(utils::tail(csr_to_coo(x), n), "tail")

# (print() is the COO layout's, whose format() call reaches the method below)
#' @export
format.rcuda_sparse_csr_tensor <- function(x, ...) {
  values <- sparse_part(x, "values")
  c("torch_tensor",
    sparse_header(values, sparse_part(x, "size"), "SparseCsr"),
    "crow_indices:", utils::tail(format(sparse_part(x, "crow_indices")), -1),
    "col_indices:", utils::tail(format(sparse_part(x, "col_indices")), -1),
    "values:", utils::tail(format(values$detach()), -1))
}

methods::setOldClass(c("rcuda_sparse_csr_tensor", "rcuda_sparse_tensor", "rcuda_tensor"))
methods::setMethod("show", "rcuda_sparse_csr_tensor", function(object) print.rcuda_sparse_csr_tensor(object))
