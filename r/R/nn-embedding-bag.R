# nnf_embedding_bag() and nn_embedding_bag(), as torch for R's: each bag's rows of the weight
# reduced by sum, mean or max, composed in R from the engine's embedding (whose backward is a
# scatter-add) and reductions over a padded [bags, longest bag] layout, so they record autograd
# and run on every device with no kernel of their own.
#
# Bags: a 2-D input [B, N] is B bags of N indices; a 1-D input takes `offsets`, the 0-based
# start of each bag in it (torch for R passes them on unshifted; the first must be 0), and with
# include_last_offset = TRUE the last offset is the input's end instead of a bag's start.
# Entries equal to padding_idx are left out of their bag (of its count for "mean" too); an
# empty bag gives zeros. per_sample_weights scale the rows before the sum (mode "sum" only,
# as PyTorch).

#' @export
nnf_embedding_bag <- function(input, weight, offsets = NULL, max_norm = NULL, norm_type = 2,
                              scale_grad_by_freq = FALSE, mode = "mean", sparse = FALSE,
                              per_sample_weights = NULL, include_last_offset = FALSE,
                              padding_idx = NULL) {
  fn <- "nnf_embedding_bag"
  input <- extra_tensor(input, fn, "input")
  weight <- extra_tensor(weight, fn, "weight")
  if (!is.character(mode) || length(mode) != 1 || !mode %in% c("sum", "mean", "max")) {
    value_error(fn, ": mode must be \"sum\", \"mean\" or \"max\", got ", deparse(mode, nlines = 1)[1])
  }
  if (!is.null(max_norm)) value_error(fn, ": max_norm is not supported by rcuda yet")
  if (isTRUE(scale_grad_by_freq)) value_error(fn, ": scale_grad_by_freq = TRUE is not supported by rcuda yet")
  if (isTRUE(sparse)) value_error(fn, ": sparse = TRUE is not supported (rcuda has no sparse tensors)")
  if (!is.null(per_sample_weights) && mode != "sum") {
    value_error(fn, ": per_sample_weights are only supported for mode = \"sum\", got mode = \"", mode, "\"")
  }
  include_last_offset <- extra_flag(include_last_offset, fn, "include_last_offset")
  if (input$dim() == 2) {
    if (!is.null(offsets)) value_error(fn, ": if input is 2D, then offsets has to be NULL")
    indices <- input
    valid <- NULL
    weights <- per_sample_weights
  } else if (input$dim() == 1) {
    if (is.null(offsets)) value_error(fn, ": a 1D input needs offsets (each bag's 0-based start)")
    bags <- bag_layout(fn, input$numel(), offsets, include_last_offset)
    where <- torch_tensor(bags$positions, dtype = torch_long(), device = input$device)
    indices <- input$index_select(1, where)$reshape(bags$shape)
    valid <- torch_tensor(bags$valid, device = input$device)$reshape(bags$shape)
    weights <- if (is.null(per_sample_weights)) NULL else per_sample_weights$index_select(1, where)$reshape(bags$shape)
  } else {
    value_error(fn, ": input must be 1D (with offsets) or 2D, got ", input$dim(), "D")
  }
  if (!is.null(weights) && !identical(as.numeric(weights$shape), as.numeric(indices$shape))) {
    value_error(fn, ": per_sample_weights must have input's shape")
  }
  rows <- nnf_embedding(indices, weight, padding_idx)  # [B, L, D]
  keep <- valid
  if (!is.null(padding_idx)) {
    pad <- if (padding_idx < 0) weight$size(1) + padding_idx + 1 else padding_idx
    not_pad <- indices != pad
    keep <- if (is.null(keep)) not_pad else keep & not_pad
  }
  if (!is.null(weights)) rows <- rows * weights$unsqueeze(-1)
  if (mode == "max") {
    if (is.null(keep)) return(rows$amax(dim = 2))
    out <- rows$masked_fill(keep$logical_not()$unsqueeze(-1), -Inf)$amax(dim = 2)
    return(out$masked_fill(keep$any(dim = 2)$logical_not()$unsqueeze(-1), 0))
  }
  if (is.null(keep)) return(if (mode == "sum") rows$sum(dim = 2) else rows$mean(dim = 2))
  share <- keep$to(dtype = rows$dtype)$unsqueeze(-1)
  total <- (rows * share)$sum(dim = 2)
  if (mode == "sum") total else total / share$sum(dim = 2)$clamp(min = 1)
}

# Each bag's positions in a 1-D input as a [B, longest] layout (0-based starts from offsets),
# the unused slots pointing at position 1 and marked invalid.
bag_layout <- function(fn, n, offsets, include_last_offset) {
  offsets <- if (is_torch_tensor(offsets)) as.numeric(as_array(offsets$cpu())) else as.numeric(offsets)
  if (!length(offsets) || anyNA(offsets) || any(offsets != trunc(offsets))) {
    value_error(fn, ": offsets must be whole numbers, one per bag")
  }
  if (offsets[1] != 0) value_error(fn, ": offsets must start at 0 (bags start there), got ", offsets[1])
  if (any(diff(offsets) < 0) || any(offsets > n)) {
    value_error(fn, ": offsets must be non-decreasing and at most the input's length ", n)
  }
  starts <- if (include_last_offset) offsets[-length(offsets)] else offsets
  ends <- if (include_last_offset) offsets[-1] else c(offsets[-1], n)
  lengths <- ends - starts
  longest <- max(c(lengths, 1))
  slot <- seq_len(longest) - 1
  valid <- outer(lengths, slot, ">")
  positions <- outer(starts, slot, "+") + 1
  positions[!valid] <- 1
  if (n == 0) positions[] <- 1  # no entries at all: every bag empty (and no position read)
  list(positions = as.vector(t(positions)), valid = as.vector(t(valid)),
       shape = c(length(starts), longest))
}

#' @export
nn_embedding_bag <- nn_module(
  "nn_embedding_bag",
  inherit = nn_embedding,
  initialize = function(num_embeddings, embedding_dim, max_norm = NULL, norm_type = 2,
                        scale_grad_by_freq = FALSE, mode = "mean", sparse = FALSE,
                        include_last_offset = FALSE, padding_idx = NULL, .weight = NULL) {
    super$initialize(num_embeddings, embedding_dim, padding_idx = padding_idx,
                     max_norm = max_norm, norm_type = norm_type,
                     scale_grad_by_freq = scale_grad_by_freq, sparse = sparse, .weight = .weight)
    self$mode <- mode
    self$include_last_offset <- include_last_offset
  },
  forward = function(input, offsets = NULL, per_sample_weights = NULL) {
    nnf_embedding_bag(input, self$weight, offsets, self$max_norm, self$norm_type,
                      self$scale_grad_by_freq, self$mode, self$sparse, per_sample_weights,
                      self$include_last_offset, self$padding_idx)
  }
)
