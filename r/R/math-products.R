# torch for R's fused products (addmm, baddbmm, addbmm, addmv, addr) and vector products (mv,
# dot, vdot, inner), composed from matmul and the elementwise ops so that they record autograd
# and run on any device. Dims are 1-based, negative from the end, as everywhere in the package.

# ---- helpers ------------------------------------------------------------------------------

# x times a number; a whole number keeps an integer tensor integer, as torch's integer scalars do.
scaled <- function(x, s) {
  if (s == 1) return(x)
  if (!is_float_tensor(x) && s == trunc(s)) s <- as.integer(s)
  x * s
}

# beta * self + alpha * product, torch's addmm family. With beta 0 self is ignored (its NaN and
# infinities do not spread, as in torch), but it must still broadcast to the product's shape.
add_scaled_product <- function(self, product, beta, alpha, fn) {
  beta <- number_arg(beta, fn, "beta")
  alpha <- number_arg(alpha, fn, "alpha")
  shape <- as.integer(product$shape)
  tryCatch(self$expand(shape), rcuda_error = function(e) {
    shape_error(fn, ": self of shape [", paste(self$shape, collapse = ", "),
                "] does not broadcast to the product's shape [", paste(shape, collapse = ", "), "]")
  })
  product <- scaled(product, alpha)
  if (beta == 0) return(product)
  scaled(self, beta) + product
}

# The ndim check of a matrix-product argument.
math_ndim <- function(x, ndim, fn, arg) {
  if (x$ndim != ndim) shape_error(fn, ": ", arg, " must be ", ndim, "-d, got ", x$ndim, "-d")
  x
}

# out_dtype: torch computes the product in that dtype (float16 inputs accumulated in float32).
with_out_dtype <- function(tensors, out_dtype) {
  if (is.null(out_dtype)) return(tensors)
  lapply(tensors, function(t) t$to(dtype = out_dtype))
}

# ---- products -----------------------------------------------------------------------------

#' @export
torch_addmm <- function(self, mat1, mat2, out_dtype, beta = 1L, alpha = 1L) {
  fn <- "torch_addmm"
  t <- list(extra_tensor(self, fn), math_ndim(extra_tensor(mat1, fn, "mat1"), 2, fn, "mat1"),
            math_ndim(extra_tensor(mat2, fn, "mat2"), 2, fn, "mat2"))
  t <- with_out_dtype(t, if (missing(out_dtype)) NULL else out_dtype)
  add_scaled_product(t[[1]], torch_mm(t[[2]], t[[3]]), beta, alpha, fn)
}

#' @export
torch_baddbmm <- function(self, batch1, batch2, out_dtype, beta = 1L, alpha = 1L) {
  fn <- "torch_baddbmm"
  t <- list(extra_tensor(self, fn), math_ndim(extra_tensor(batch1, fn, "batch1"), 3, fn, "batch1"),
            math_ndim(extra_tensor(batch2, fn, "batch2"), 3, fn, "batch2"))
  t <- with_out_dtype(t, if (missing(out_dtype)) NULL else out_dtype)
  add_scaled_product(t[[1]], torch_bmm(t[[2]], t[[3]]), beta, alpha, fn)
}

# The batch of products summed: one [n, p] matrix.
#' @export
torch_addbmm <- function(self, batch1, batch2, beta = 1L, alpha = 1L) {
  fn <- "torch_addbmm"
  batch1 <- math_ndim(extra_tensor(batch1, fn, "batch1"), 3, fn, "batch1")
  batch2 <- math_ndim(extra_tensor(batch2, fn, "batch2"), 3, fn, "batch2")
  add_scaled_product(extra_tensor(self, fn), torch_sum(torch_bmm(batch1, batch2), dim = 1L), beta, alpha, fn)
}

#' @export
torch_mv <- function(self, vec) {
  self <- math_ndim(extra_tensor(self, "torch_mv"), 2, "torch_mv", "self")
  vec <- math_ndim(extra_tensor(vec, "torch_mv", "vec"), 1, "torch_mv", "vec")
  if (self$shape[2] != vec$shape[1]) {
    shape_error("torch_mv: self has ", self$shape[2], " columns but vec has ", vec$shape[1], " elements")
  }
  torch_matmul(self, vec)
}

#' @export
torch_addmv <- function(self, mat, vec, beta = 1L, alpha = 1L) {
  add_scaled_product(extra_tensor(self, "torch_addmv"), torch_mv(mat, vec), beta, alpha, "torch_addmv")
}

#' @export
torch_addr <- function(self, vec1, vec2, beta = 1L, alpha = 1L) {
  fn <- "torch_addr"
  vec1 <- math_ndim(extra_tensor(vec1, fn, "vec1"), 1, fn, "vec1")
  vec2 <- math_ndim(extra_tensor(vec2, fn, "vec2"), 1, fn, "vec2")
  add_scaled_product(extra_tensor(self, fn), torch_outer(vec1, vec2), beta, alpha, fn)
}

# torch's dot and vdot take two 1-d tensors of one dtype and length (rcuda has no complex
# dtypes, so vdot's conjugate is the identity).
dot_product <- function(self, other, fn, arg) {
  self <- math_ndim(extra_tensor(self, fn), 1, fn, "self")
  other <- math_ndim(extra_tensor(other, fn, arg), 1, fn, arg)
  if (self$dtype != other$dtype) {
    dtype_error(fn, ": self and ", arg, " must have the same dtype, got ", self$dtype$name, " and ", other$dtype$name)
  }
  if (self$shape != other$shape) {
    shape_error(fn, ": self and ", arg, " must have the same length, got ", self$shape, " and ", other$shape)
  }
  torch_sum(self * other)
}

#' @export
torch_dot <- function(self, tensor) dot_product(self, tensor, "torch_dot", "tensor")

#' @export
torch_vdot <- function(self, other) dot_product(self, other, "torch_vdot", "other")

# Sums over the last dim of both: shape self$shape[-last] followed by other$shape[-last].
#' @export
torch_inner <- function(self, other) {
  self <- extra_tensor(self, "torch_inner")
  other <- extra_tensor(other, "torch_inner", "other")
  if (self$ndim == 0 || other$ndim == 0) return(self * other)
  a <- as.integer(self$shape)
  b <- as.integer(other$shape)
  k <- a[length(a)]
  if (k != b[length(b)]) {
    shape_error("torch_inner: the last dims of self and other must match, got ", k, " and ", b[length(b)])
  }
  rows <- self$reshape(c(-1L, k))
  cols <- other$reshape(c(-1L, k))
  torch_sum(rows$unsqueeze(2) * cols$unsqueeze(1), dim = 3L)$reshape(c(a[-length(a)], b[-length(b)]))
}

# ---- methods ------------------------------------------------------------------------------

m <- tensor_methods
for (name in c("addmm", "addbmm", "baddbmm", "addmv", "addr", "mv", "dot", "vdot", "inner")) {
  m[[name]] <- get(paste0("torch_", name))
}
rm(name)

# In-place forms (Note [In-place methods as copies] in tensor-inplace.R).
m$addmm_ <- function(self, mat1, mat2, beta = 1L, alpha = 1L) {
  inplace("addmm_", self, torch_addmm, mat1, mat2, beta = beta, alpha = alpha)
}
rm(m)
