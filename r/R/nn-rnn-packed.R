# Variable-length sequences for the recurrent layers, as torch for R's nn_utils_rnn_*:
# pad_sequence, pack_padded_sequence, pack_sequence, pad_packed_sequence, and nn_rnn / nn_lstm /
# nn_gru over a PackedSequence (Note [Packed sequences]).
#
# Note [Packed sequences]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A PackedSequence is PyTorch's layout: the batch sorted by decreasing length (sorted_indices,
# 1-based as torch for R gives them; NULL when the input was sorted already), then time step by
# time step the rows of the sequences still running: `data` [sum of lengths, *] and
# `batch_sizes` (int64, on the CPU) the number of rows at each step. Packing and unpacking are
# index_select, narrow and cat, so gradients flow through them.
# A recurrent layer given a PackedSequence runs the engine's fused RNN once per distinct
# length, on the sequences of that length cut to it: each sequence's last state is the one at
# its own end (the reverse direction of a bidirectional layer starts there too), its outputs
# past the end are zeros, and hx / h_n are in the caller's batch order. One call per distinct
# length rather than cuDNN's own packed mode: correct on both backends at the cost of a few
# launches for batches of many lengths.

# Each sequence (L_i x *) padded to the longest's length and stacked: T x B x *, or B x T x *
# with batch_first. Built from cat and stack, so gradients flow back to the sequences.
#' @export
nn_utils_rnn_pad_sequence <- function(sequences, batch_first = FALSE, padding_value = 0) {
  who <- "nn_utils_rnn_pad_sequence"
  if (!is.list(sequences) || length(sequences) == 0 ||
        !all(vapply(sequences, is_torch_tensor, logical(1)))) {
    value_error(who, ": sequences must be a non-empty list of tensors")
  }
  if (!is.logical(batch_first) || length(batch_first) != 1 || is.na(batch_first)) {
    value_error(who, ": batch_first must be TRUE or FALSE, got ", format(batch_first))
  }
  if (!is.numeric(padding_value) && !is.logical(padding_value) || length(padding_value) != 1) {
    value_error(who, ": padding_value must be a single number, got ",
                paste(format(padding_value), collapse = " "))
  }
  first <- sequences[[1]]
  if (first$dim() == 0) value_error(who, ": sequence 1 is a scalar; sequences need a length")
  trailing <- first$shape[-1]
  for (i in seq_along(sequences)) {
    s <- sequences[[i]]
    if (s$dim() == 0 || !identical(s$shape[-1], trailing)) {
      shape_error(who, ": sequence ", i, " has shape (", paste(s$shape, collapse = ", "),
                  "), sequence 1 (", paste(first$shape, collapse = ", "), "); all must ",
                  "share the trailing dimensions")
    }
  }
  longest <- max(vapply(sequences, function(s) s$size(1), numeric(1)))
  padded <- lapply(sequences, function(s) {
    s <- s$to(dtype = first$dtype)
    missing_rows <- longest - s$size(1)
    if (missing_rows == 0) return(s)
    pad <- torch_full(c(missing_rows, trailing), padding_value, dtype = first$dtype,
                      device = s$device)
    torch_cat(list(s, pad), dim = 1)
  })
  torch_stack(padded, dim = if (batch_first) 1 else 2)
}

new_packed_sequence <- function(data, batch_sizes, sorted_indices, unsorted_indices) {
  structure(list(data = data, batch_sizes = batch_sizes, sorted_indices = sorted_indices,
                 unsorted_indices = unsorted_indices), class = "PackedSequence")
}

# Registered for print() (NAMESPACE).
print.PackedSequence <- function(x, ...) {
  cat("<PackedSequence> ", length(as_array(x$batch_sizes)), " steps, batch ",
      as_array(x$batch_sizes)[1], ", data of shape [", paste(x$data$shape, collapse = ", "), "]\n",
      sep = "")
  invisible(x)
}

# Lengths as R integers, checked against the batch and the time steps.
packed_lengths <- function(fn, lengths, batch, steps) {
  if (is_torch_tensor(lengths)) lengths <- as_array(lengths$cpu())
  if (!is.numeric(lengths) || anyNA(lengths) || any(lengths != trunc(lengths))) {
    value_error(fn, ": lengths must be whole numbers, one per sequence")
  }
  lengths <- as.integer(lengths)
  if (length(lengths) != batch) {
    value_error(fn, ": got ", length(lengths), " lengths for a batch of ", batch, " sequences")
  }
  if (any(lengths < 1) || any(lengths > steps)) {
    value_error(fn, ": lengths must lie in 1..", steps, " (the padded length), got ",
                paste(range(lengths), collapse = " to "))
  }
  lengths
}

# x [T, B, *] in the caller's order, lengths, and the sorting permutation (1-based, or NULL for
# none) -> PackedSequence.
pack_in_order <- function(x, lengths, order) {
  sorted_x <- if (is.null(order)) x else x$index_select(2, torch_tensor(order, dtype = torch_long(), device = x$device))
  sorted_lengths <- if (is.null(order)) lengths else lengths[order]
  batch_sizes <- vapply(seq_len(max(sorted_lengths)), function(t) sum(sorted_lengths >= t), integer(1))
  rows <- lapply(seq_along(batch_sizes), function(t) sorted_x$select(1, t)$narrow(1, 1, batch_sizes[t]))
  index <- function(v) if (is.null(v)) NULL else torch_tensor(v, dtype = torch_long(), device = x$device)
  new_packed_sequence(torch_cat(rows, dim = 1), torch_tensor(batch_sizes, dtype = torch_long()),
                      index(order), index(if (is.null(order)) NULL else order(order)))
}

#' @export
nn_utils_rnn_pack_padded_sequence <- function(input, lengths, batch_first = FALSE, enforce_sorted = TRUE) {
  fn <- "nn_utils_rnn_pack_padded_sequence"
  input <- extra_tensor(input, fn, "input")
  batch_first <- extra_flag(batch_first, fn, "batch_first")
  enforce_sorted <- extra_flag(enforce_sorted, fn, "enforce_sorted")
  if (input$dim() < 2) value_error(fn, ": input must have a time and a batch dim, got ", input$dim(), " dims")
  x <- if (batch_first) input$transpose(1, 2) else input
  lengths <- packed_lengths(fn, lengths, x$size(2), x$size(1))
  order <- NULL
  if (enforce_sorted) {
    if (is.unsorted(rev(lengths))) {
      value_error(fn, ": lengths must be sorted in decreasing order when enforce_sorted = TRUE ",
                  "(got ", paste(lengths, collapse = ", "), "); pass enforce_sorted = FALSE to sort them")
    }
  } else {
    order <- order(-lengths)
  }
  pack_in_order(x, lengths, order)
}

#' @export
nn_utils_rnn_pack_sequence <- function(sequences, enforce_sorted = TRUE) {
  fn <- "nn_utils_rnn_pack_sequence"
  if (!is.list(sequences) || !length(sequences) || !all(vapply(sequences, is_torch_tensor, logical(1)))) {
    value_error(fn, ": sequences must be a non-empty list of tensors")
  }
  lengths <- vapply(sequences, function(s) if (s$dim() == 0) NA_real_ else s$size(1), numeric(1))
  if (anyNA(lengths)) value_error(fn, ": every sequence needs a length (no 0-d tensors)")
  nn_utils_rnn_pack_padded_sequence(nn_utils_rnn_pad_sequence(sequences), lengths,
                                    enforce_sorted = enforce_sorted)
}

#' @export
nn_utils_rnn_pad_packed_sequence <- function(sequence, batch_first = FALSE, padding_value = 0,
                                             total_length = NULL) {
  fn <- "nn_utils_rnn_pad_packed_sequence"
  if (!inherits(sequence, "PackedSequence")) {
    value_error(fn, ": sequence must be a PackedSequence, got ", describe(sequence))
  }
  batch_first <- extra_flag(batch_first, fn, "batch_first")
  padding_value <- number_arg(padding_value, fn, "padding_value")
  sizes <- as.integer(as_array(sequence$batch_sizes))
  steps <- length(sizes)
  if (!is.null(total_length)) {
    total_length <- number_arg(total_length, fn, "total_length")
    if (total_length < steps) {
      value_error(fn, ": total_length (", total_length, ") is less than the longest sequence (", steps, ")")
    }
    steps <- total_length
  }
  data <- sequence$data
  batch <- sizes[1]
  trailing <- data$shape[-1]
  filler <- function(rows) torch_full(c(rows, trailing), padding_value, dtype = data$dtype, device = data$device)
  offsets <- c(0L, cumsum(sizes))
  slabs <- lapply(seq_len(steps), function(t) {
    if (t > length(sizes)) return(filler(batch))
    rows <- data$narrow(1, offsets[t] + 1, sizes[t])
    if (sizes[t] == batch) rows else torch_cat(list(rows, filler(batch - sizes[t])), dim = 1)
  })
  padded <- torch_stack(slabs, dim = 1)  # [T, B, *], sorted order
  lengths <- vapply(seq_len(batch), function(b) sum(sizes >= b), integer(1))
  if (!is.null(sequence$unsorted_indices)) {
    unsorted <- as.integer(as_array(sequence$unsorted_indices$cpu()))
    padded <- padded$index_select(2, sequence$unsorted_indices)
    lengths <- lengths[unsorted]
  }
  if (batch_first) padded <- padded$transpose(1, 2)
  list(padded, torch_tensor(lengths, dtype = torch_long()))
}

# Note [Packed sequences]: a recurrent module's forward over a PackedSequence.
rnn_packed_forward <- function(self, packed, hx) {
  unpacked <- nn_utils_rnn_pad_packed_sequence(packed)
  x <- unpacked[[1]]
  lengths <- as.integer(as_array(unpacked[[2]]))
  lstm <- self$mode == "LSTM"
  h0 <- if (lstm && !is.null(hx)) hx[[1]] else hx
  c0 <- if (lstm && !is.null(hx)) hx[[2]] else NULL
  steps <- x$size(1)
  groups <- lapply(sort(unique(lengths), decreasing = TRUE), function(len) which(lengths == len))
  runs <- lapply(groups, function(members) {
    idx <- torch_tensor(members, dtype = torch_long(), device = x$device)
    len <- lengths[members[1]]
    pick <- function(state) if (is.null(state)) NULL else state$index_select(2, idx)
    result <- .Call(rc_nn_rnn, self$mode, x$narrow(1, 1, len)$index_select(2, idx), pick(h0),
                    pick(c0), self$flat_weights(), self$num_layers, self$dropout, self$training,
                    self$bidirectional, FALSE)
    out <- result[[1]]
    if (len < steps) {
      out <- torch_cat(list(out, torch_zeros(c(steps - len, out$shape[-1]), dtype = out$dtype,
                                             device = out$device)), dim = 1)
    }
    list(out = out, h = result[[2]], c = if (lstm) result[[3]] else NULL)
  })
  back <- torch_tensor(order(unlist(groups)), dtype = torch_long(), device = x$device)
  join <- function(part) torch_cat(lapply(runs, `[[`, part), dim = 2)$index_select(2, back)
  order <- if (is.null(packed$sorted_indices)) NULL else as.integer(as_array(packed$sorted_indices$cpu()))
  output <- pack_in_order(join("out"), lengths, order)
  list(output, if (lstm) list(join("h"), join("c")) else join("h"))
}
