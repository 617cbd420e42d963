# torch.distributed's functions for R: the default process group of a job that mpirun, Slurm's
# srun or `rcuda launch` started, and collectives over it (the engine's rcuda::dist, over MPI for
# CPU tensors and NCCL for CUDA tensors; r/src/dist.cpp).
#
# Ranks count from 0, as the launcher's (OMPI_COMM_WORLD_RANK, SLURM_PROCID, RANK) and torch's,
# not from 1 as R's indices: a rank names a process, and every launcher, log line and error
# message of the job spells it that way.
#
# Note [Collectives in place]
# The engine's collectives write into contiguous tensors. A tensor that is a view with gaps (a
# column of a matrix, a transpose) goes through a contiguous copy, which is written back once the
# collective has finished, so that dist_all_reduce(x[, 1]) changes x as it says. The write-back
# runs under with_no_grad(), as the collectives are no autograd ops (torch's are not either):
# gradients do not flow through them.

#' @export
dist_init_process_group <- function(backend = NULL, timeout = 600) {
  fn <- "dist_init_process_group"
  if (is.null(backend)) backend <- if (cuda_is_available()) "nccl" else "mpi"
  if (!is.character(backend) || length(backend) != 1 || !backend %in% c("nccl", "mpi")) {
    value_error(fn, ": backend must be \"nccl\" (CUDA tensors) or \"mpi\" (CPU tensors), got ",
                deparse(backend, nlines = 1)[1])
  }
  seconds <- timeout_seconds(timeout, fn)
  if (dist_is_initialized()) {
    value_error(fn, ": the default process group is already initialized (", dist_get_backend(),
                ", rank ", dist_get_rank(), " of ", dist_get_world_size(),
                "); call dist_destroy_process_group() first")
  }
  .Call(rc_dist_init, backend, seconds * 1000)
  invisible(NULL)
}

# A timeout in seconds, from a number of seconds or a difftime.
timeout_seconds <- function(timeout, fn) {
  if (inherits(timeout, "difftime")) timeout <- as.numeric(timeout, units = "secs")
  if (!is.numeric(timeout) || length(timeout) != 1 || is.na(timeout) || timeout <= 0 ||
        !is.finite(timeout)) {
    value_error(fn, ": timeout must be a positive number of seconds (or a difftime), got ",
                deparse(timeout, nlines = 1)[1])
  }
  as.numeric(timeout)
}

#' @export
dist_is_initialized <- function() !is.null(.Call(rc_dist_state))

# The default group's list(rank, world_size, backend), or an error naming `fn`.
dist_state <- function(fn) {
  state <- .Call(rc_dist_state)
  if (is.null(state)) {
    value_error(fn, ": the default process group has not been initialized; call ",
                "dist_init_process_group() first")
  }
  state
}

#' @export
dist_get_rank <- function() dist_state("dist_get_rank")$rank

#' @export
dist_get_world_size <- function() dist_state("dist_get_world_size")$world_size

#' @export
dist_get_backend <- function() dist_state("dist_get_backend")$backend

# Where the launcher put this process (its environment variables; a lone process is rank 0 of 1),
# before or without a process group: the rank of this process on its node picks its GPU.
#' @export
dist_get_local_rank <- function() .Call(rc_dist_launch_info)$local_rank

#' @export
dist_destroy_process_group <- function() {
  .Call(rc_dist_destroy)
  invisible(NULL)
}

reduce_ops <- c("sum", "avg", "max", "min")

#' @export
dist_all_reduce <- function(tensor, op = "sum", async_op = FALSE) {
  fn <- "dist_all_reduce"
  dist_state(fn)
  check_collective_tensor(tensor, fn, "tensor")
  if (!is.character(op) || length(op) != 1 || !tolower(op) %in% reduce_ops) {
    value_error(fn, ": op must be one of \"", paste(reduce_ops, collapse = "\", \""), "\", got ",
                deparse(op, nlines = 1)[1])
  }
  target <- contiguous_target(tensor)
  work <- .Call(rc_dist_collective, "all_reduce", list(target), tolower(op), 0L)
  finish_collective(work, async_op, fn, tensor, function() collective_write_back(tensor, target))
}

#' @export
dist_broadcast <- function(tensor, src = 0, async_op = FALSE) {
  fn <- "dist_broadcast"
  state <- dist_state(fn)
  check_collective_tensor(tensor, fn, "tensor")
  check_rank(src, state, fn, "src")
  target <- contiguous_target(tensor)
  work <- .Call(rc_dist_collective, "broadcast", list(target), NULL, as.integer(src))
  finish_collective(work, async_op, fn, tensor, function() collective_write_back(tensor, target))
}

# torch.distributed.all_gather(tensor_list, tensor): tensor_list[[r + 1]] takes rank r's tensor.
# dist_all_gather(x) (no list) returns a new list.
#' @export
dist_all_gather <- function(tensor_list, tensor, async_op = FALSE) {
  fn <- "dist_all_gather"
  state <- dist_state(fn)
  if (missing(tensor)) {
    tensor <- tensor_list
    tensor_list <- NULL
  }
  check_collective_tensor(tensor, fn, "tensor")
  shape <- as.integer(tensor$shape)
  if (!is.null(tensor_list)) {
    if (!is.list(tensor_list) || length(tensor_list) != state$world_size) {
      value_error(fn, ": tensor_list must be a list of world_size = ", state$world_size,
                  " tensors, got ", describe(tensor_list), " of length ", length(tensor_list))
    }
    for (i in seq_along(tensor_list)) {
      t <- tensor_list[[i]]
      if (!is_torch_tensor(t) || !identical(as.integer(t$shape), shape)) {
        shape_error(fn, ": tensor_list[[", i, "]] must be a tensor of tensor's shape [",
                    paste(shape, collapse = ", "), "], got ",
                    if (is_torch_tensor(t)) paste0("shape [", paste(t$shape, collapse = ", "), "]")
                    else describe(t))
      }
    }
  }
  # The engine stacks every rank's [n, ...] along dim 1: one [1, shape] per rank here.
  input <- tensor$detach()$contiguous()$reshape(c(1L, shape))
  out <- torch_empty(c(state$world_size, shape), dtype = tensor$dtype, device = tensor$device)
  work <- .Call(rc_dist_collective, "all_gather", list(out, input), NULL, 0L)
  gathered <- function() {
    parts <- lapply(seq_len(state$world_size), function(r) out$select(1, r))
    if (is.null(tensor_list)) return(parts)
    with_no_grad(for (r in seq_along(parts)) tensor_list[[r]]$copy_(parts[[r]]))
    tensor_list
  }
  if (async_op) return(new_dist_work(work, fn, gathered))
  .Call(rc_dist_work, work, "wait")
  result <- gathered()
  if (is.null(tensor_list)) result else invisible(result)
}

#' @export
dist_barrier <- function(async_op = FALSE) {
  fn <- "dist_barrier"
  dist_state(fn)
  work <- .Call(rc_dist_collective, "barrier", list(), NULL, 0L)
  if (async_op) return(new_dist_work(work, fn, function() invisible(NULL)))
  .Call(rc_dist_work, work, "wait")
  invisible(NULL)
}

check_collective_tensor <- function(tensor, fn, arg) {
  if (!is_torch_tensor(tensor)) value_error(fn, ": ", arg, " must be a tensor, got ", describe(tensor))
}

check_rank <- function(rank, state, fn, arg) {
  if (!is.numeric(rank) || length(rank) != 1 || is.na(rank) || rank != trunc(rank) || rank < 0 ||
        rank >= state$world_size) {
    value_error(fn, ": ", arg, " must be a rank in [0, ", state$world_size - 1, "] (ranks count ",
                "from 0), got ", deparse(rank, nlines = 1)[1])
  }
}

# Note [Collectives in place]: the tensor itself when contiguous, else a contiguous copy.
contiguous_target <- function(tensor) {
  if (.Call(rc_is_contiguous, tensor, FALSE)) tensor else tensor$detach()$contiguous()
}

collective_write_back <- function(tensor, target) {
  if (!identical(.Call(rc_tensor_ids, list(tensor)), .Call(rc_tensor_ids, list(target)))) {
    with_no_grad(tensor$copy_(target))
  }
  tensor
}

# Waits (async_op = FALSE: the tensor, invisibly) or returns the handle whose $wait() finishes.
finish_collective <- function(work, async_op, fn, tensor, done) {
  if (!isFALSE(async_op) && !isTRUE(async_op)) {
    value_error(fn, ": async_op must be TRUE or FALSE, got ", deparse(async_op, nlines = 1)[1])
  }
  if (async_op) return(new_dist_work(work, fn, done))
  .Call(rc_dist_work, work, "wait")
  invisible(done())
}

# torch's Work: $wait() blocks until the result may be read (CPU tensors) or orders the current
# CUDA stream after the collective (NCCL), then returns the result; $is_completed() asks without
# blocking.
new_dist_work <- function(work, fn, done) {
  result <- NULL
  finished <- FALSE
  structure(list(
    wait = function() {
      if (!finished) {
        .Call(rc_dist_work, work, "wait")
        result <<- done()
        finished <<- TRUE
      }
      invisible(result)
    },
    is_completed = function() finished || .Call(rc_dist_work, work, "completed"),
    op = fn
  ), class = "rcuda_dist_work")
}

#' @export
print.rcuda_dist_work <- function(x, ...) {
  cat("<", x$op, " work> ", if (x$is_completed()) "completed" else "pending", "\n", sep = "")
  invisible(x)
}

# ---- fit() on every rank ----------------------------------------------------------------------

# Means over every rank's samples: values (a named list of numbers, each a mean over this rank's
# `samples`) weighted by each rank's sample count, with one all_reduce of their sums. NA stays NA.
# Returns list(values =, samples =), samples summed over the ranks.
dist_average <- function(values, samples) {
  # NCCL reduces CUDA tensors on the GPU of this rank (its local rank), MPI CPU tensors.
  device <- if (dist_get_backend() == "nccl") paste0("cuda:", dist_get_local_rank()) else "cpu"
  numbers <- unlist(values, use.names = FALSE)
  sums <- torch_tensor(c(samples, numbers * samples), dtype = torch_float64(), device = device)
  dist_all_reduce(sums, "sum")
  sums <- as.numeric(as_array(sums$cpu()))
  total <- sums[[1]]
  averaged <- as.list(sums[-1] / total)
  names(averaged) <- names(values)
  list(values = averaged, samples = total)
}
