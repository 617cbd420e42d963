# nn_distributed_data_parallel(): PyTorch's DistributedDataParallel over the engine's
# dist::DataParallel (r/src/dist.cpp). Each rank runs the wrapped module on its share of the
# batch; the gradients are averaged over the ranks while backward runs, bucket by bucket, in the
# engine (post-accumulate hooks on the parameters and an end-of-backward callback: no R code runs
# during backward). After loss$backward() every parameter's $grad is the mean of the ranks'
# gradients, so the optimizer steps alike everywhere and the replicas stay equal.
#
# Construction broadcasts rank 0's parameters and buffers to every rank, and each forward first
# sends rank 0's buffers (batch norm's running statistics) when broadcast_buffers, as PyTorch's.
# The wrapped module is registered as the submodule `module`, so state dict keys read
# "module.fc1.weight", as PyTorch's; save `ddp$module$state_dict()` for a plain model's keys.

#' @export
nn_distributed_data_parallel <- nn_module(
  "nn_distributed_data_parallel",
  initialize = function(module, find_unused_parameters = FALSE, broadcast_buffers = TRUE,
                        bucket_cap_mb = 25) {
    fn <- "nn_distributed_data_parallel"
    if (!is_nn_module(module)) value_error(fn, ": module must be an nn_module, got ", describe(module))
    extra_flag(find_unused_parameters, fn, "find_unused_parameters")
    extra_flag(broadcast_buffers, fn, "broadcast_buffers")
    bucket_cap_mb <- number_arg(bucket_cap_mb, fn, "bucket_cap_mb", "a positive number of MiB")
    if (bucket_cap_mb <= 0) {
      value_error(fn, ": bucket_cap_mb must be a positive number of MiB, got ", bucket_cap_mb)
    }
    dist_state(fn)
    self$module <- module
    self$reducer <- .Call(rc_ddp_new, module$named_parameters(), module$named_buffers(),
                          list(bucket_bytes = bucket_cap_mb * 2^20,
                               find_unused_parameters = find_unused_parameters,
                               broadcast_buffers = broadcast_buffers))
  },
  forward = function(...) {
    .Call(rc_ddp_call, self$reducer, "before_forward")
    self$module(...)
  },
  # ddp$no_sync({ ... }): as with_no_sync(ddp, { ... }).
  no_sync = function(code) {
    token <- .Call(rc_ddp_no_sync, self$reducer, NULL)
    on.exit(.Call(rc_ddp_no_sync, NULL, token))
    force(code)
  },
  # The buckets, as lists of parameter names, in the order they are reduced.
  buckets = function() .Call(rc_ddp_call, self$reducer, "buckets")
)

is_distributed_data_parallel <- function(x) inherits(x, "nn_distributed_data_parallel")

check_ddp <- function(ddp, fn) {
  if (!is_distributed_data_parallel(ddp)) {
    value_error(fn, ": ddp must be an nn_distributed_data_parallel module, got ", describe(ddp))
  }
}

# Note [no_sync as with_ and local_]
# PyTorch's `with ddp.no_sync():` reads in R as with_no_sync(ddp, { ... }), or as local_no_sync(ddp)
# inside a function (until it returns), as withr's and autocast's pairs: backward passes in it
# accumulate gradients without communicating, and the first backward after it reduces the
# accumulated sum. Regions end in the reverse order they began (on.exit(after = FALSE)), which
# the engine's guard, restoring the state it found, relies on.

#' @export
with_no_sync <- function(ddp, code) {
  check_ddp(ddp, "with_no_sync")
  token <- .Call(rc_ddp_no_sync, ddp$reducer, NULL)
  on.exit(.Call(rc_ddp_no_sync, NULL, token))
  force(code)
}

#' @export
local_no_sync <- function(ddp, .env = parent.frame()) {
  check_ddp(ddp, "local_no_sync")
  token <- .Call(rc_ddp_no_sync, ddp$reducer, NULL)
  end <- call(".Call", rc_ddp_no_sync, NULL, token)
  do.call(base::on.exit, list(end, add = TRUE, after = FALSE), envir = .env)
  invisible(ddp)
}

# Drops the engine's reducer now (its hooks on the parameters go with it) rather than when R
# collects the module: fit() does this for the wrapper it makes (R/fit.R).
ddp_release <- function(ddp) {
  .Call(rc_ddp_call, ddp$reducer, "free")
  invisible(NULL)
}
