# distributed_sampler(): each rank's share of a dataset's indices, as PyTorch's
# torch.utils.data.DistributedSampler. Every rank orders the n indices the same way (1..n, or one
# permutation drawn from (seed, epoch)), pads the order to a multiple of the world size by
# repeating its head (or, with drop_last, cuts it to one), and takes every world_size-th index
# from position rank + 1. The shares are then disjoint (but for the padding) and of one length,
# so every rank runs as many batches, which data-parallel training needs: a rank with one batch
# more would wait for gradients no other rank sends.
#
# The permutation of epoch e is the one dataloader(shuffle = TRUE, generator = seed) draws in
# its (e + 1)-th epoch (Note [Shuffling order] in R/data-loader.R): a function of (seed, e)
# alone, the same on every rank whatever each rank's random state.

#' @export
distributed_sampler <- function(dataset, num_replicas = NULL, rank = NULL, shuffle = TRUE,
                                seed = 0, drop_last = FALSE) {
  fn <- "distributed_sampler"
  n <- sampler_size(dataset, fn)
  if (is.null(num_replicas) || is.null(rank)) {
    if (!dist_is_initialized()) {
      value_error(fn, ": num_replicas and rank come from the default process group, which is not ",
                  "initialized; call dist_init_process_group() first, or give both")
    }
    if (is.null(num_replicas)) num_replicas <- dist_get_world_size()
    if (is.null(rank)) rank <- dist_get_rank()
  }
  num_replicas <- whole_number_arg(num_replicas, fn, "num_replicas", min = 1)
  rank <- whole_number_arg(rank, fn, "rank", min = 0)
  if (rank >= num_replicas) {
    value_error(fn, ": rank must be in [0, num_replicas - 1] = [0, ", num_replicas - 1,
                "], got ", rank)
  }
  extra_flag(shuffle, fn, "shuffle")
  extra_flag(drop_last, fn, "drop_last")
  seed <- whole_number_arg(seed, fn, "seed", min = 0)
  # PyTorch's sizes: without drop_last every index is used and the last round is padded;
  # with it, the indices past the last whole round are left out.
  per_rank <- if (drop_last && n %% num_replicas != 0) {
    ceiling((n - num_replicas) / num_replicas)
  } else {
    ceiling(n / num_replicas)
  }
  s <- new_sampler("distributed_sampler", as.integer(per_rank), NULL, dataset = dataset,
                   num_replicas = num_replicas, rank = rank, shuffle = shuffle, seed = seed,
                   drop_last = drop_last, epoch = 0)
  s$set_epoch <- function(epoch) {
    s$epoch <- whole_number_arg(epoch, "distributed_sampler$set_epoch", "epoch", min = 0)
    invisible(s)
  }
  s$.iter <- function() values_iterator(distributed_share(s, n, per_rank))
  s
}

# This rank's indices for the sampler's current epoch.
distributed_share <- function(s, n, per_rank) {
  order <- if (s$shuffle) .Call(rc_randperm, n, c(s$seed, s$epoch)) else seq_len(n)
  total <- per_rank * s$num_replicas
  if (total > n) {
    order <- c(order, rep_len(order, total - n))  # the head repeated, as often as it takes
  } else {
    order <- order[seq_len(total)]
  }
  order[seq.int(s$rank + 1, by = s$num_replicas, length.out = per_rank)]
}

#' @export
print.distributed_sampler <- function(x, ...) {
  cat("<distributed_sampler> rank ", x$rank, " of ", x$num_replicas, ": ", length(x),
      " of ", sampler_size(x$dataset, "distributed_sampler"), " indices",
      if (x$shuffle) paste0(", shuffled (seed ", x$seed, ", epoch ", x$epoch, ")"),
      if (x$drop_last) ", drop_last", "\n", sep = "")
  invisible(x)
}

whole_number_arg <- function(x, fn, arg, min) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || x < min || x != trunc(x) || !is.finite(x)) {
    value_error(fn, ": ", arg, " must be a whole number of at least ", min, ", got ",
                deparse(x, nlines = 1)[1])
  }
  as.numeric(x)
}
