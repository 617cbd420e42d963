# torch for R's einsum and the linalg_* functions that are compositions of matmul, reshape,
# permute and the reductions (so they run on every device and carry gradients where those do):
# torch_einsum, linalg_multi_dot, linalg_vector_norm, linalg_matrix_norm, linalg_norm,
# linalg_cross, linalg_matrix_power. The factorisations (solve, inv, qr, svd, ...) are in
# R/linalg-factor.R; the nuclear and 2-norms and negative powers use them.

# ---- einsum ----------------------------------------------------------------------------------

# The labels of one operand's subscript: letters, with "..." standing for `ellipsis` dims
# (named ".1", ".2", ... from the left, so that broadcast ellipses align on the right).
einsum_labels <- function(sub, ndim, fn) {
  if (!grepl("^[A-Za-z]*(\\.\\.\\.)?[A-Za-z]*$", sub)) {
    value_error(fn, ": subscript \"", sub, "\" must be letters with at most one \"...\"")
  }
  parts <- strsplit(sub, "...", fixed = TRUE)[[1]]
  if (!grepl("...", sub, fixed = TRUE)) {
    labels <- strsplit(sub, "")[[1]]
    if (length(labels) != ndim) {
      value_error(fn, ": subscript \"", sub, "\" has ", length(labels), " labels for an operand with ",
                  ndim, " dims")
    }
    return(labels)
  }
  left <- if (length(parts) >= 1) strsplit(parts[1], "")[[1]] else character()
  right <- if (length(parts) == 2) strsplit(parts[2], "")[[1]] else character()
  n_ellipsis <- ndim - length(left) - length(right)
  if (n_ellipsis < 0) {
    value_error(fn, ": subscript \"", sub, "\" has more labels than the operand's ", ndim, " dims")
  }
  c(left, if (n_ellipsis > 0) sprintf(".%04d", 1000L - n_ellipsis + seq_len(n_ellipsis)) else character(), right)
}

# Sums t (labels `labels`) over the labels not in `keep`; returns list(tensor, labels).
einsum_sum_out <- function(t, labels, keep) {
  drop <- which(!labels %in% keep)
  if (length(drop) == 0) return(list(t, labels))
  list(t$sum(dim = drop), labels[-drop])
}

# One operand with each label once: a repeated label takes the diagonal of its two dims.
einsum_diagonal <- function(t, labels) {
  repeat {
    dup <- which(duplicated(labels))
    if (length(dup) == 0) return(list(t, labels))
    q <- dup[1]
    p <- match(labels[q], labels)
    n <- t$shape[p]
    if (t$shape[q] != n) {
      value_error("torch_einsum: label ", labels[q], " repeats in one operand over sizes ", n,
                  " and ", t$shape[q])
    }
    shape <- rep(1L, t$dim())
    shape[c(p, q)] <- n
    mask <- torch_eye(n, dtype = t$dtype, device = t$device)$reshape(shape)
    t <- (t * mask)$sum(dim = q)
    labels <- labels[-q]
  }
}

# a (labels la) times b (labels lb), summed over the shared labels not in `keep`, as one batched
# matmul: [batch, a's own, shared] x [batch, shared, b's own]; returns list(tensor, labels).
einsum_pair <- function(a, la, b, lb, keep) {
  shared <- intersect(la, lb)
  batch <- intersect(shared, keep)
  inner <- setdiff(shared, keep)
  own_a <- setdiff(la, shared)
  own_b <- setdiff(lb, shared)
  size_of <- function(t, l, labels) t$shape[match(labels, l)]
  # Batch dims may broadcast (size 1 against n): expand both to the larger size.
  bs <- pmax(size_of(a, la, batch), size_of(b, lb, batch))
  ks <- size_of(a, la, inner)
  if (any(ks != size_of(b, lb, inner))) {
    value_error("torch_einsum: a contracted label has different sizes in two operands")
  }
  ma <- size_of(a, la, own_a)
  nb <- size_of(b, lb, own_b)
  a <- a$permute(match(c(batch, own_a, inner), la))
  b <- b$permute(match(c(batch, inner, own_b), lb))
  a <- a$expand(c(bs, ma, ks))$reshape(c(prod(bs), prod(ma), prod(ks)))
  b <- b$expand(c(bs, ks, nb))$reshape(c(prod(bs), prod(ks), prod(nb)))
  list(torch_matmul(a, b)$reshape(c(bs, ma, nb)), c(batch, own_a, own_b))
}

#' @export
torch_einsum <- function(equation, tensors) {
  fn <- "torch_einsum"
  if (!is.character(equation) || length(equation) != 1 || is.na(equation)) {
    value_error(fn, ": equation must be one string such as \"ij,jk->ik\"")
  }
  if (is_torch_tensor(tensors)) tensors <- list(tensors)
  if (!is.list(tensors) || length(tensors) == 0) value_error(fn, ": tensors must be a list of tensors")
  tensors <- lapply(seq_along(tensors), function(i) extra_tensor(tensors[[i]], fn, paste0("tensors[[", i, "]]")))
  eq <- gsub("[[:space:]]", "", equation)
  sides <- strsplit(eq, "->", fixed = TRUE)[[1]]
  if (length(sides) > 2 || grepl("->.*->", eq)) value_error(fn, ": equation \"", equation, "\" has more than one \"->\"")
  inputs <- strsplit(sides[1], ",", fixed = TRUE)[[1]]
  if (endsWith(sides[1], ",")) inputs <- c(inputs, "")
  if (length(inputs) != length(tensors)) {
    value_error(fn, ": equation \"", equation, "\" has ", length(inputs), " operands, tensors has ",
                length(tensors))
  }
  labels <- lapply(seq_along(inputs), function(i) einsum_labels(inputs[i], tensors[[i]]$dim(), fn))
  all <- unlist(labels)
  ellipsis <- sort(unique(all[startsWith(all, ".")]))
  if (length(sides) == 2 || endsWith(eq, "->")) {
    out_sub <- if (length(sides) == 2) sides[2] else ""
    n_out_ellipsis <- if (grepl("...", out_sub, fixed = TRUE)) length(ellipsis) else 0L
    out <- einsum_labels(out_sub, n_out_ellipsis + nchar(gsub("...", "", out_sub, fixed = TRUE)), fn)
    letters_out <- out[!startsWith(out, ".")]
    if (anyDuplicated(letters_out)) value_error(fn, ": the output repeats a label")
    unknown <- setdiff(letters_out, all)
    if (length(unknown)) value_error(fn, ": output label ", unknown[1], " is in no operand")
    if (length(ellipsis) > 0 && n_out_ellipsis == 0) {
      value_error(fn, ": the operands have \"...\" dims, so the output must have \"...\" too")
    }
  } else {
    # Implicit output: the ellipsis dims, then the labels seen once, in alphabetical order.
    counts <- table(all[!startsWith(all, ".")])
    out <- c(ellipsis, sort(names(counts)[counts == 1]))
  }
  # Each label's size must agree (1 broadcasts for ellipsis dims, as torch).
  sizes <- list()
  for (i in seq_along(tensors)) {
    for (j in seq_along(labels[[i]])) {
      l <- labels[[i]][j]
      s <- tensors[[i]]$shape[j]
      if (!is.null(sizes[[l]]) && sizes[[l]] != s && !(startsWith(l, ".") && (s == 1 || sizes[[l]] == 1))) {
        value_error(fn, ": label ", l, " has size ", sizes[[l]], " in one operand and ", s, " in another")
      }
      sizes[[l]] <- max(s, if (is.null(sizes[[l]])) 1 else sizes[[l]])
    }
  }
  ops <- lapply(seq_along(tensors), function(i) einsum_diagonal(tensors[[i]], labels[[i]]))
  # Labels an operand has alone and nobody needs are summed first.
  needed_by <- function(i) unique(c(out, unlist(lapply(ops[-i], `[[`, 2))))
  for (i in seq_along(ops)) ops[[i]] <- einsum_sum_out(ops[[i]][[1]], ops[[i]][[2]], needed_by(i))
  acc <- ops[[1]]
  if (length(ops) > 1) {
    for (i in 2:length(ops)) {
      rest <- if (i < length(ops)) unlist(lapply(ops[(i + 1):length(ops)], `[[`, 2)) else character()
      acc <- einsum_pair(acc[[1]], acc[[2]], ops[[i]][[1]], ops[[i]][[2]], unique(c(out, rest)))
    }
  }
  acc <- einsum_sum_out(acc[[1]], acc[[2]], out)
  result <- acc[[1]]
  # Broadcast ellipsis dims that ended as size 1 on one side keep their full size.
  if (length(out) == 0) return(result)
  result <- result$permute(match(out, acc[[2]]))
  full <- vapply(out, function(l) as.integer(sizes[[l]]), integer(1))
  if (!identical(as.integer(result$shape), unname(full))) result <- result$expand(unname(full))
  result
}

# ---- linalg ----------------------------------------------------------------------------------

#' @export
linalg_multi_dot <- function(tensors) {
  fn <- "linalg_multi_dot"
  if (!is.list(tensors) || length(tensors) < 2) value_error(fn, ": tensors must be a list of at least two tensors")
  tensors <- lapply(seq_along(tensors), function(i) extra_tensor(tensors[[i]], fn, paste0("tensors[[", i, "]]")))
  n <- length(tensors)
  for (i in seq_len(n)) {
    d <- tensors[[i]]$dim()
    ok <- if (i == 1 || i == n) d %in% 1:2 else d == 2
    if (!ok) {
      value_error(fn, ": tensor ", i, " must be 2-d", if (i == 1 || i == n) " (or 1-d)" else "",
                  ", got ", d, " dims")
    }
  }
  # Left to right; torch picks the cheapest order, which gives the same values up to rounding.
  Reduce(torch_matmul, tensors)
}

#' @export
linalg_vector_norm <- function(x, ord = 2, dim = NULL, keepdim = FALSE, dtype = NULL) {
  fn <- "linalg_vector_norm"
  x <- extra_tensor(x, fn, "x")
  if (!is.numeric(ord) || length(ord) != 1 || is.na(ord)) value_error(fn, ": ord must be a number")
  if (!is.null(dtype)) x <- x$to(dtype = dtype)
  if (!is_float_tensor(x)) value_error(fn, ": x must be a floating tensor (or give dtype)")
  a <- x$abs()
  if (is.null(dim)) {
    dims <- seq_len(x$dim())
  } else {
    dims <- product_dims(dim, max(x$dim(), 1L), fn, "dim")
  }
  reduce <- function(t, f) if (length(dims) == 0) t else f(t, dims)
  if (ord == Inf) return(reduce(a, function(t, d) torch_amax(t, dim = d, keepdim = keepdim)))
  if (ord == -Inf) return(reduce(a, function(t, d) torch_amin(t, dim = d, keepdim = keepdim)))
  if (ord == 0) return(reduce((a != 0)$to(dtype = x$dtype), function(t, d) t$sum(dim = d, keepdim = keepdim)))
  if (ord == 1) return(reduce(a, function(t, d) t$sum(dim = d, keepdim = keepdim)))
  if (ord == 2) return(reduce(a * a, function(t, d) t$sum(dim = d, keepdim = keepdim))$sqrt())
  reduce(a^ord, function(t, d) t$sum(dim = d, keepdim = keepdim))^(1 / ord)
}

#' @export
linalg_matrix_norm <- function(A, ord = "fro", dim = c(-2, -1), keepdim = FALSE, dtype = NULL) {
  fn <- "linalg_matrix_norm"
  A <- extra_tensor(A, fn, "A")
  if (A$dim() < 2) value_error(fn, ": A must have at least 2 dims, got ", A$dim())
  d <- product_dims(dim, A$dim(), fn, "dim")
  if (length(d) != 2) value_error(fn, ": dim must name two dims")
  if (!is.null(dtype)) A <- A$to(dtype = dtype)
  a <- A$abs()
  if (identical(ord, "fro")) return(linalg_vector_norm(A, 2, dim = d, keepdim = keepdim))
  if (identical(ord, "nuc") || (is.numeric(ord) && length(ord) == 1 && abs(ord) == 2)) {
    # Singular-value norms: the sum ("nuc"), the largest (2) or the smallest (-2), over the two
    # dims moved last (linalg_svdvals in R/linalg-factor.R, differentiable).
    others <- setdiff(seq_len(A$dim()), d)
    s <- linalg_svdvals(A$permute(c(others, d)))
    out <- if (identical(ord, "nuc")) s$sum(dim = -1) else if (ord > 0) torch_amax(s, dim = -1) else torch_amin(s, dim = -1)
    if (keepdim) {
      for (k in sort(d)) out <- out$unsqueeze(k)
    }
    return(out)
  }
  if (!is.numeric(ord) || length(ord) != 1 || !(abs(ord) %in% c(1, Inf))) {
    value_error(fn, ": ord must be \"fro\", 1, -1, Inf or -Inf, got ", deparse(ord))
  }
  # 1: the largest column sum of |A|; Inf: the largest row sum (negative: the smallest).
  sum_dim <- if (abs(ord) == 1) d[1] else d[2]
  other <- if (abs(ord) == 1) d[2] else d[1]
  sums <- a$sum(dim = sum_dim, keepdim = TRUE)
  pick <- if (ord > 0) torch_amax else torch_amin
  out <- pick(sums, dim = other, keepdim = TRUE)
  if (keepdim) out else out$squeeze(max(d))$squeeze(min(d))
}

#' @export
linalg_norm <- function(A, ord = NULL, dim = NULL, keepdim = FALSE, dtype = NULL) {
  A <- extra_tensor(A, "linalg_norm", "A")
  if (is.null(ord)) {
    if (!is.null(dim) && length(dim) == 2) return(linalg_matrix_norm(A, "fro", dim, keepdim, dtype))
    return(linalg_vector_norm(A, 2, dim, keepdim, dtype))
  }
  if ((!is.null(dim) && length(dim) == 2) || (is.null(dim) && A$dim() == 2)) {
    return(linalg_matrix_norm(A, ord, if (is.null(dim)) c(-2, -1) else dim, keepdim, dtype))
  }
  if (is.character(ord)) value_error("linalg_norm: ord \"", ord, "\" is a matrix norm: give a 2-d A or two dims")
  linalg_vector_norm(A, ord, dim, keepdim, dtype)
}

#' @export
linalg_cross <- function(input, other, dim = -1) torch_cross(input, other, dim = dim)

#' @export
linalg_matrix_power <- function(A, n) {
  fn <- "linalg_matrix_power"
  A <- extra_tensor(A, fn, "A")
  n <- extra_whole(n, fn, "n")
  s <- A$shape
  if (length(s) < 2 || s[length(s)] != s[length(s) - 1]) {
    value_error(fn, ": A must be a (batch of) square matrices, got shape ", paste(s, collapse = "x"))
  }
  if (n < 0) {
    A <- linalg_inv(A)
    n <- -n
  }
  if (n == 0) {
    k <- s[length(s)]
    return(torch_eye(k, dtype = A$dtype, device = A$device)$expand(s)$clone())
  }
  # Repeated squaring: about log2(n) products.
  result <- NULL
  base <- A
  repeat {
    if (n %% 2 == 1) result <- if (is.null(result)) base else torch_matmul(result, base)
    n <- n %/% 2
    if (n == 0) break
    base <- torch_matmul(base, base)
  }
  result
}
