# Margin, embedding and ranking losses (torch for R's nnf_* and nn_*_loss): margin ranking,
# hinge embedding, soft margin, cosine embedding, triplet margin and the multi-class and
# multilabel margin losses, composed from tensor ops, so they record autograd and run on every
# device. Class targets are 1-based as in nn-loss.R. The loss_* helpers are shared with
# nn-loss-likelihood.R.

# ---- helpers ------------------------------------------------------------------------------------

# reduction has been checked by reduction_arg().
loss_reduce <- function(loss, reduction) {
  switch(reduction, mean = loss$mean(), sum = loss$sum(), none = loss)
}

loss_shape_text <- function(shape) paste0("[", paste(shape, collapse = ", "), "]")

# Named shapes must broadcast together; else an error naming fn and every argument's shape.
loss_check_broadcast <- function(fn, shapes) {
  n <- max(0L, lengths(shapes))
  padded <- lapply(shapes, function(s) c(rep(1L, n - length(s)), s))
  for (i in seq_len(n)) {
    sizes <- unique(vapply(padded, function(s) as.integer(s[i]), 0L))
    if (length(setdiff(sizes, 1L)) > 1) {
      value_error(fn, ": the shapes of ", paste0(names(shapes), " ", vapply(shapes, loss_shape_text, ""),
                                                 collapse = ", "), " do not broadcast together")
    }
  }
  invisible()
}

loss_integer_target <- function(fn, target) {
  dtype <- .Call(rc_meta, target)[[2]]
  if (is_floating_dtype(dtype) || dtype == "bool") {
    value_error(fn, ": target must be an integer tensor of 1-based classes, got dtype ", dtype)
  }
}

# [N, C] as the rows of a 0-d, 1-d ([C]) or 2-d ([N, C]) input, as ATen's margin losses take it.
loss_margin_rows <- function(fn, input) {
  nd <- input$dim()
  if (nd > 2 || (nd >= 1 && input$size(nd) == 0)) {
    value_error(fn, ": input must be a non-empty vector [C] or a matrix [N, C], got shape ",
                loss_shape_text(input$shape))
  }
  c(if (nd == 2) input$size(1) else 1L, if (nd == 0) 1L else input$size(nd))
}

# torch for R's nnf_pairwise_distance: eps is added to the difference, so that the norm's
# gradient stays finite where x1 == x2.
loss_pairwise_distance <- function(x1, x2, p = 2, eps = 1e-6) {
  d <- max(x1$dim(), x2$dim())
  torch_norm(x1 - x2 + eps, p = p, dim = if (d == 0) NULL else d)
}

# ---- pairwise and embedding losses -------------------------------------------------------------

#' @export
nnf_margin_ranking_loss <- function(input1, input2, target, margin = 0, reduction = "mean") {
  fn <- "nnf_margin_ranking_loss"
  reduction <- reduction_arg(fn, reduction)
  input1 <- extra_tensor(input1, fn, "input1")
  input2 <- extra_tensor(input2, fn, "input2")
  target <- extra_tensor(target, fn, "target")
  margin <- number_arg(margin, fn, "margin")
  loss_check_broadcast(fn, list(input1 = input1$shape, input2 = input2$shape, target = target$shape))
  loss_reduce(torch_clamp(-target * (input1 - input2) + margin, min = 0), reduction)
}

# As ATen: a target other than 1 or -1 adds both terms (the documented formula covers only those).
#' @export
nnf_hinge_embedding_loss <- function(input, target, margin = 1, reduction = "mean") {
  fn <- "nnf_hinge_embedding_loss"
  reduction <- reduction_arg(fn, reduction)
  input <- extra_tensor(input, fn, "input")
  target <- extra_tensor(target, fn, "target")
  margin <- number_arg(margin, fn, "margin")
  loss_check_broadcast(fn, list(input = input$shape, target = target$shape))
  below_margin <- torch_clamp(margin - input, min = 0)
  loss <- torch_where(target != 1, below_margin, 0) + torch_where(target != -1, input, 0)
  loss_reduce(loss, reduction)
}

# log(1 + exp(-y x)) as softplus, which does not overflow for large -y x.
#' @export
nnf_soft_margin_loss <- function(input, target, reduction = "mean") {
  fn <- "nnf_soft_margin_loss"
  reduction <- reduction_arg(fn, reduction)
  input <- extra_tensor(input, fn, "input")
  target <- extra_tensor(target, fn, "target")
  loss_check_broadcast(fn, list(input = input$shape, target = target$shape))
  loss_reduce(nnf_softplus(-input * target), reduction)
}

#' @export
nnf_cosine_embedding_loss <- function(input1, input2, target, margin = 0,
                                      reduction = c("mean", "sum", "none")) {
  fn <- "nnf_cosine_embedding_loss"
  reduction <- reduction_arg(fn, reduction)
  input1 <- extra_tensor(input1, fn, "input1")
  input2 <- extra_tensor(input2, fn, "input2")
  target <- extra_tensor(target, fn, "target")
  margin <- number_arg(margin, fn, "margin")
  if (target$dim() > 1) {
    value_error(fn, ": target must be 0-d or 1-d (one label per pair), got shape ", loss_shape_text(target$shape))
  }
  d <- target$dim() + 1
  if (input1$dim() != d || input2$dim() != d) {
    value_error(fn, ": a ", d - 1, "-d target needs ", d, "-d input1 and input2, got shapes ",
                loss_shape_text(input1$shape), " and ", loss_shape_text(input2$shape))
  }
  loss_check_broadcast(fn, list(input1 = input1$shape, input2 = input2$shape))
  loss_check_broadcast(fn, list(`input1's rows` = input1$shape[-d], `input2's rows` = input2$shape[-d],
                           target = target$shape))
  # ATen's epsilon: it keeps a zero vector's cosine at 0 rather than NaN.
  squared_norm1 <- (input1 * input1)$sum(dim = d) + 1e-12
  squared_norm2 <- (input2 * input2)$sum(dim = d) + 1e-12
  cosine <- (input1 * input2)$sum(dim = d) / (squared_norm1 * squared_norm2)$sqrt()
  loss <- torch_where(target == 1, 1 - cosine, 0) +
    torch_where(target == -1, torch_clamp(cosine - margin, min = 0), 0)
  loss_reduce(loss, reduction)
}

# ---- triplet losses ------------------------------------------------------------------------------

#' @export
nnf_triplet_margin_loss <- function(anchor, positive, negative, margin = 1, p = 2,
                                    eps = 1e-6, swap = FALSE, reduction = "mean") {
  fn <- "nnf_triplet_margin_loss"
  reduction <- reduction_arg(fn, reduction)
  p <- number_arg(p, fn, "p")
  eps <- number_arg(eps, fn, "eps")
  distance <- function(x1, x2) loss_pairwise_distance(x1, x2, p, eps)
  loss_triplet(fn, anchor, positive, negative, distance, margin, swap, reduction, same_dims = TRUE)
}

# distance_function: any function of two tensors giving one distance per row (a module too);
# NULL is torch for R's nnf_pairwise_distance (p = 2, eps = 1e-6).
#' @export
nnf_triplet_margin_with_distance_loss <- function(anchor, positive, negative,
                                                  distance_function = NULL,
                                                  margin = 1.0, swap = FALSE,
                                                  reduction = "mean") {
  fn <- "nnf_triplet_margin_with_distance_loss"
  reduction <- reduction_arg(fn, reduction)
  if (is.null(distance_function)) distance_function <- loss_pairwise_distance
  if (!is.function(distance_function)) {
    value_error(fn, ": distance_function must be a function of two tensors or NULL, got ",
                describe(distance_function))
  }
  loss_triplet(fn, anchor, positive, negative, distance_function, margin, swap, reduction,
               same_dims = FALSE)
}

loss_triplet <- function(fn, anchor, positive, negative, distance, margin, swap, reduction, same_dims) {
  anchor <- extra_tensor(anchor, fn, "anchor")
  positive <- extra_tensor(positive, fn, "positive")
  negative <- extra_tensor(negative, fn, "negative")
  margin <- number_arg(margin, fn, "margin")
  swap <- extra_flag(swap, fn, "swap")
  dims <- c(anchor$dim(), positive$dim(), negative$dim())
  if (same_dims && length(unique(dims)) > 1) {
    value_error(fn, ": anchor, positive and negative must have the same number of dims, got shapes ",
                loss_shape_text(anchor$shape), ", ", loss_shape_text(positive$shape), " and ",
                loss_shape_text(negative$shape))
  }
  loss_check_broadcast(fn, list(anchor = anchor$shape, positive = positive$shape, negative = negative$shape))
  positive_distance <- distance(anchor, positive)
  negative_distance <- distance(anchor, negative)
  # The swap (Balntas et al., 2016): the negative's distance to the nearer of anchor and positive.
  if (swap) negative_distance <- torch_minimum(negative_distance, distance(positive, negative))
  loss_reduce(torch_clamp(positive_distance - negative_distance + margin, min = 0), reduction)
}

# ---- multi-class margin losses -------------------------------------------------------------------

# target: one 1-based class per row of input.
#' @export
nnf_multi_margin_loss <- function(input, target, p = 1, margin = 1, weight = NULL,
                                  reduction = "mean") {
  fn <- "nnf_multi_margin_loss"
  reduction <- reduction_arg(fn, reduction)
  input <- extra_tensor(input, fn, "input")
  target <- extra_tensor(target, fn, "target")
  if (!identical(p, 1) && !identical(p, 2) && !identical(p, 1L) && !identical(p, 2L)) {
    value_error(fn, ": p must be 1 or 2, got ", deparse(p, nlines = 1)[1])
  }
  margin <- number_arg(margin, fn, "margin")
  rows <- loss_margin_rows(fn, input)
  n <- rows[1]
  classes <- rows[2]
  if (target$dim() > 1 || target$numel() != n) {
    value_error(fn, ": target must hold one class per row of input (", n, "), got shape ",
                loss_shape_text(target$shape))
  }
  loss_integer_target(fn, target)
  if (target$numel() > 0) {
    low <- target$min()$item()
    high <- target$max()$item()
    if (low < 1 || high > classes) {
      value_error(fn, ": target must hold 1-based classes in 1..", classes, ", got ",
                  if (low < 1) low else high)
    }
  }
  x <- input$reshape(c(n, classes))
  y <- target$to(dtype = torch_long())$reshape(c(n, 1))   # any integer dtype; gather takes int64
  hinge <- torch_clamp(margin - x$gather(2, y) + x, min = 0)
  if (p == 2) hinge <- hinge * hinge
  # The target's own class is no competitor.
  own_class <- torch_arange(1, classes, dtype = torch_long(), device = x$device)$unsqueeze(1) == y
  hinge <- torch_where(own_class, 0, hinge)
  if (!is.null(weight)) {
    weight <- extra_tensor(weight, fn, "weight")
    if (weight$dim() > 1 || weight$numel() != classes) {
      value_error(fn, ": weight must hold one number per class (", classes, "), got shape ",
                  loss_shape_text(weight$shape))
    }
    hinge <- hinge * weight$reshape(classes)$gather(1, y$reshape(n))$unsqueeze(2)
  }
  loss <- hinge$sum(dim = 2) / classes
  if (target$dim() == 0) loss <- loss$reshape(integer(0))
  loss_reduce(loss, reduction)
}

# target: input's shape; each row lists 1-based classes, and its first negative value (torch for
# R's examples use -1) ends the list. A 0 is an error, as in torch for R.
#' @export
nnf_multilabel_margin_loss <- function(input, target, reduction = "mean") {
  fn <- "nnf_multilabel_margin_loss"
  reduction <- reduction_arg(fn, reduction)
  input <- extra_tensor(input, fn, "input")
  target <- extra_tensor(target, fn, "target")
  rows <- loss_margin_rows(fn, input)
  n <- rows[1]
  classes <- rows[2]
  if (!identical(target$shape, input$shape)) {
    value_error(fn, ": target must have input's shape ", loss_shape_text(input$shape), ", got ",
                loss_shape_text(target$shape))
  }
  loss_integer_target(fn, target)
  if (target$numel() > 0) {
    if ((target == 0)$any()$item()) {
      value_error(fn, ": target holds a 0; classes are 1-based, and a negative value (-1) ends a row's classes")
    }
    high <- target$max()$item()
    if (high > classes) value_error(fn, ": target must hold 1-based classes in 1..", classes, ", got ", high)
  }
  x <- input$reshape(c(n, classes))
  y <- target$to(dtype = torch_long())$reshape(c(n, classes))
  listed <- (y < 0)$cumsum(2) == 0           # the slots before a row's first negative value
  slot_class <- torch_where(listed, y, torch_ones_like(y))  # unlisted slots: any valid class
  listed <- listed$to(dtype = x$dtype)
  is_target <- torch_zeros_like(x)$scatter_add(2, slot_class, listed) > 0
  # hinge[n, slot, d] = max(0, 1 - x[n, class of slot] + x[n, d]), over listed slots and non-target d.
  hinge <- torch_clamp(1 - x$gather(2, slot_class)$unsqueeze(3) + x$unsqueeze(2), min = 0)
  hinge <- hinge * listed$unsqueeze(3) * torch_where(is_target, 0, 1)$to(dtype = x$dtype)$unsqueeze(2)
  loss <- hinge$sum(dim = c(2, 3)) / classes
  if (input$dim() <= 1) loss <- loss$reshape(integer(0))
  loss_reduce(loss, reduction)
}

# Classes are input's last dim; target holds 0/1 (or probabilities) of input's shape. torch for
# R 0.17 sums over the second-to-last dim, against its own documentation (output [N] for
# reduction = "none"); both agree for "mean".
#' @export
nnf_multilabel_soft_margin_loss <- function(input, target, weight = NULL, reduction = "mean") {
  fn <- "nnf_multilabel_soft_margin_loss"
  reduction <- reduction_arg(fn, reduction)
  input <- extra_tensor(input, fn, "input")
  target <- extra_tensor(target, fn, "target")
  if (input$dim() < 1) value_error(fn, ": input must have a class dim (its last), got a 0-d tensor")
  loss_check_broadcast(fn, list(input = input$shape, target = target$shape))
  # -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), with log sigmoid(x) = -softplus(-x).
  loss <- target * nnf_softplus(-input) + (1 - target) * nnf_softplus(input)
  if (!is.null(weight)) {
    weight <- extra_tensor(weight, fn, "weight")
    loss_check_broadcast(fn, list(input = input$shape, weight = weight$shape))
    loss <- loss * weight
  }
  loss_reduce(loss$sum(dim = -1) / input$size(-1), reduction)
}

# ---- modules ------------------------------------------------------------------------------------

#' @export
nn_margin_ranking_loss <- nn_module(
  "nn_margin_ranking_loss",
  inherit = nn_loss,
  initialize = function(margin = 0, reduction = "mean") {
    super$initialize(reduction)
    self$margin <- margin
  },
  forward = function(input1, input2, target) {
    nnf_margin_ranking_loss(input1, input2, target, self$margin, self$reduction)
  }
)

#' @export
nn_hinge_embedding_loss <- nn_module(
  "nn_hinge_embedding_loss",
  inherit = nn_loss,
  initialize = function(margin = 1.0, reduction = "mean") {
    super$initialize(reduction)
    self$margin <- margin
  },
  forward = function(input, target) nnf_hinge_embedding_loss(input, target, self$margin, self$reduction)
)

#' @export
nn_soft_margin_loss <- nn_module(
  "nn_soft_margin_loss",
  inherit = nn_loss,
  forward = function(input, target) nnf_soft_margin_loss(input, target, self$reduction)
)

#' @export
nn_cosine_embedding_loss <- nn_module(
  "nn_cosine_embedding_loss",
  inherit = nn_loss,
  initialize = function(margin = 0, reduction = "mean") {
    super$initialize(reduction)
    self$margin <- margin
  },
  forward = function(input1, input2, target) {
    nnf_cosine_embedding_loss(input1, input2, target, self$margin, self$reduction)
  }
)

#' @export
nn_triplet_margin_loss <- nn_module(
  "nn_triplet_margin_loss",
  inherit = nn_loss,
  initialize = function(margin = 1, p = 2, eps = 1e-6, swap = FALSE, reduction = "mean") {
    super$initialize(reduction)
    self$margin <- margin
    self$p <- p
    self$eps <- eps
    self$swap <- swap
  },
  forward = function(anchor, positive, negative) {
    nnf_triplet_margin_loss(anchor, positive, negative, self$margin, self$p, self$eps, self$swap,
                            self$reduction)
  }
)

#' @export
nn_triplet_margin_with_distance_loss <- nn_module(
  "nn_triplet_margin_with_distance_loss",
  inherit = nn_loss,
  initialize = function(distance_function = NULL, margin = 1, swap = FALSE, reduction = "mean") {
    super$initialize(reduction)
    # NULL: nnf_triplet_margin_with_distance_loss's default, the pairwise distance.
    self$distance_function <- distance_function
    self$margin <- margin
    self$swap <- swap
  },
  forward = function(anchor, positive, negative) {
    nnf_triplet_margin_with_distance_loss(anchor, positive, negative, self$distance_function,
                                          self$margin, self$swap, self$reduction)
  }
)

#' @export
nn_multi_margin_loss <- nn_module(
  "nn_multi_margin_loss",
  inherit = nn_weighted_loss,
  initialize = function(p = 1, margin = 1, weight = NULL, reduction = "mean") {
    super$initialize(weight, reduction)
    self$p <- p
    self$margin <- margin
  },
  forward = function(input, target) {
    nnf_multi_margin_loss(input, target, self$p, self$margin, self$weight, self$reduction)
  }
)

#' @export
nn_multilabel_margin_loss <- nn_module(
  "nn_multilabel_margin_loss",
  inherit = nn_loss,
  forward = function(input, target) nnf_multilabel_margin_loss(input, target, self$reduction)
)

#' @export
nn_multilabel_soft_margin_loss <- nn_module(
  "nn_multilabel_soft_margin_loss",
  inherit = nn_weighted_loss,
  forward = function(input, target) {
    nnf_multilabel_soft_margin_loss(input, target, self$weight, self$reduction)
  }
)
