# fit() on every rank of a process group (R/distributed.R, docs/distributed.md).
#
# Note [fit on several ranks]
# When dist_init_process_group() has run, fit() trains data-parallel, the same call on every
# rank:
#  - the model: a module that is not already an nn_distributed_data_parallel is wrapped in one
#    for the call (rank 0's weights go to every rank; the wrapper's reducer, with its hooks, is
#    released when fit() returns). Callbacks still see the module given, so checkpoints keep its
#    state dict's keys.
#  - the data: a list of batches is split by rows, rank r taking the r-th of world_size nearly
#    equal slices of each batch, so that N ranks take the steps one process takes on the whole
#    batches (exactly, when the batch sizes are multiples of N); a dataloader() that cuts its
#    batches by itself (in order or shuffled) is made again over a distributed_sampler() of its
#    dataset, shuffled as it was, with the loader's generator seed (else 0) as the sampler's
#    seed and the epoch (from 0) set before each epoch, batch_size samples per rank and step, as
#    PyTorch's (the sampler repeats a few samples to even the shares, so a validation loader's
#    records may count those twice, as PyTorch's do). A loader with a sampler of its own, of an
#    iterable dataset or of another class is taken as this rank's share already (a
#    distributed_sampler() in it gets its epochs set).
#  - the records: each phase's loss and metrics are averaged over the ranks, weighted by their
#    samples, with one all_reduce (dist_average), so every rank holds the same history and early
#    stopping stops every rank at the same epoch; samples_per_s counts every rank's samples.
#  - output: only rank 0 prints and writes checkpoints.

# NULL without a process group, else what fit() needs: the rank, the module that trains, the
# sharded loaders, set_epoch(epoch) and release().
fit_distributed <- function(model, train_dl, valid_dl) {
  if (!dist_is_initialized()) return(NULL)
  rank <- dist_get_rank()
  world_size <- dist_get_world_size()
  made <- !is_distributed_data_parallel(model)
  forward_model <- if (made) nn_distributed_data_parallel(model) else model
  train <- shard_loader(train_dl, rank, world_size, "train_dl")
  valid <- if (!is.null(valid_dl)) shard_loader(valid_dl, rank, world_size, "valid_dl")
  samplers <- Filter(Negate(is.null), list(train$sampler, valid$sampler))
  list(
    rank = rank,
    model = forward_model,
    train_dl = train$dl,
    valid_dl = valid$dl,
    set_epoch = function(epoch) for (s in samplers) s$set_epoch(epoch - 1),
    release = function() if (made) ddp_release(forward_model)
  )
}

# list(dl = this rank's loader, sampler = its distributed_sampler or NULL).
shard_loader <- function(dl, rank, world_size, what) {
  if (is.list(dl) && !is.object(dl)) {
    return(list(dl = lapply(dl, shard_batch, rank = rank, world_size = world_size, what = what)))
  }
  if (!is_dataloader(dl)) return(list(dl = dl))
  if (inherits(dl$sampler, "distributed_sampler")) return(list(dl = dl, sampler = dl$sampler))
  if (!is.null(dl$sampler) || !is.null(dl$batch_sampler) || dl$.iterable) return(list(dl = dl))
  seed <- if (is.numeric(dl$generator)) dl$generator else if (is_torch_generator(dl$generator)) {
    generator_seed(dl$generator)
  } else {
    0
  }
  sampler <- distributed_sampler(dl$dataset, num_replicas = world_size, rank = rank,
                                 shuffle = dl$shuffle, seed = seed)
  sharded <- dataloader(dl$dataset, batch_size = dl$batch_size %||% 1, sampler = sampler,
                        collate_fn = dl$collate_fn, pin_memory = dl$pin_memory,
                        drop_last = dl$drop_last)
  list(dl = sharded, sampler = sampler)
}

# Rank's rows of one batch: the tensors (at any depth of the batch's lists) whose first dim is
# the batch's sample count, sliced; other values kept.
shard_batch <- function(batch, rank, world_size, what) {
  parts <- split_batch(batch)
  n <- batch_size(parts[[1L]], parts[[2L]])
  if (n < world_size) {
    value_error("fit: a batch of ", what, " holds ", n, " samples, fewer than the ", world_size,
                " ranks it is split over; make the batches larger")
  }
  first <- floor(rank * n / world_size)
  count <- floor((rank + 1) * n / world_size) - first
  slice <- function(x) {
    if (is_torch_tensor(x)) {
      shape <- .Call(rc_shape, x)
      if (length(shape) && shape[[1]] == n) return(x$narrow(1, first + 1, count))
      return(x)
    }
    if (is.list(x) && !is.object(x)) return(lapply(x, slice))
    x
  }
  slice(batch)
}
