# One rank of the multi-rank cases of test-distributed.R, started by mpirun. RCUDA_DIST_CASE
# names the case; each rank writes what it computed to $RCUDA_DIST_OUT/rank<r>.rds, which the
# test compares with references computed in its own process. The data come from set.seed(), the
# same on every rank; each rank takes its rows by its rank (models.R, shared with the test).
suppressPackageStartupMessages(library(rcuda))
out_dir <- Sys.getenv("RCUDA_DIST_OUT")
case <- Sys.getenv("RCUDA_DIST_CASE")
here <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "models.R"))

torch_set_default_dtype(torch_float64())
dist_init_process_group("mpi", timeout = as.numeric(Sys.getenv("RCUDA_DIST_TIMEOUT", "60")))
rank <- dist_get_rank()
world_size <- dist_get_world_size()
save_result <- function(value) saveRDS(value, file.path(out_dir, sprintf("rank%d.rds", rank)))

# Every rank starts from other weights: the wrapper must send rank 0's.
ddp_train <- function(model_fn, data, steps, ...) {
  model <- model_fn(seed = 10 + rank)
  ddp <- nn_distributed_data_parallel(model, ...)
  opt <- optim_sgd(ddp$parameters, lr = 0.1, momentum = 0.9)
  for (s in seq_len(steps)) {
    b <- rank_rows(data, s, rank, world_size)
    opt$zero_grad()
    loss <- data$loss(ddp(b$x), b$y)
    loss$backward()
    opt$step()
  }
  list(parameters = arrays(model$parameters), buffers = arrays(model$buffers))
}

result <- switch(case,
  collectives = {
    x <- rank_tensor(rank, c(3, 4))
    reduced <- lapply(c("sum", "avg", "max", "min"), function(op) {
      as_array(dist_all_reduce(x$clone(), op))
    })
    int_sum <- as_array(dist_all_reduce(torch_tensor(c(1L, 2L, 3L) * (rank + 1L))))
    float_sum <- as_array(dist_all_reduce(x$to(dtype = torch_float32())))
    m <- rank_tensor(rank, c(3, 4))
    column <- m$select(2, 2)  # a view with gaps: written back into m
    dist_all_reduce(column, "sum")
    async <- dist_all_reduce(x$clone(), "max", async_op = TRUE)
    async_value <- as_array(async$wait())
    b <- dist_broadcast(rank_tensor(rank, 5), src = world_size - 1)
    gathered <- lapply(dist_all_gather(rank_tensor(rank, c(2, 2))), as_array)
    into <- lapply(seq_len(world_size), function(i) torch_zeros(3))
    dist_all_gather(into, rank_tensor(rank, 3))
    dist_barrier()
    list(reduced = reduced, int_sum = int_sum, float_sum = float_sum, matrix = as_array(m),
         async = async_value, async_done = async$is_completed(), broadcast = as_array(b),
         gathered = gathered, into = lapply(into, as_array), rank = rank,
         world_size = world_size, backend = dist_get_backend())
  },
  mlp = ddp_train(mlp, regression_data(world_size), steps = 4),
  cnn_bn = ddp_train(cnn_bn, image_data(world_size), steps = 3),
  no_sync = {
    data <- regression_data(world_size, micro = 2)
    model <- mlp(seed = 10 + rank)
    ddp <- nn_distributed_data_parallel(model)
    opt <- optim_sgd(ddp$parameters, lr = 0.1)
    accumulate <- function(s, form) {
      first <- rank_rows(data, s, rank, world_size, micro = 1)
      second <- rank_rows(data, s, rank, world_size, micro = 2)
      backward_of <- function(b) data$loss(ddp(b$x), b$y)$backward()
      if (form == "with") with_no_sync(ddp, backward_of(first))
      if (form == "method") ddp$no_sync(backward_of(first))
      if (form == "local") (function() {
        local_no_sync(ddp)
        backward_of(first)
      })()
      backward_of(second)
    }
    for (s in 1:3) {
      opt$zero_grad()
      accumulate(s, c("with", "method", "local")[s])
      opt$step()
    }
    list(parameters = arrays(model$parameters))
  },
  unused_error = {
    model <- with_unused(seed = 10 + rank)
    ddp <- nn_distributed_data_parallel(model)
    data <- regression_data(world_size)
    b <- rank_rows(data, 1, rank, world_size)
    caught <- tryCatch({
      data$loss(ddp(b$x), b$y)$backward()
      NULL
    }, error = function(e) list(class = class(e), message = conditionMessage(e)))
    list(error = caught)
  },
  unused_ok = ddp_train(with_unused, regression_data(world_size), steps = 3,
                        find_unused_parameters = TRUE),
  fit_lists = {
    data <- regression_data(world_size)
    model <- mlp(seed = 10 + rank)
    opt <- optim_sgd(model$parameters, lr = 0.1)
    checkpoint <- file.path(out_dir, sprintf("checkpoint-rank%d", rank), "model.safetensors")
    printed <- capture.output(history <- fit(
      model, fit_batches(data, 1:4), data$loss, opt, epochs = 2, valid_dl = fit_batches(data, 5:6),
      metrics = list(metric_mae()), callbacks = list(callback_model_checkpoint(checkpoint)),
      verbose = TRUE))
    list(parameters = arrays(model$parameters), history = as.data.frame(history),
         printed = printed)
  },
  fit_loader = {
    data <- regression_data(world_size)
    ds <- tensor_dataset(torch_tensor(data$x), torch_tensor(data$y))
    model <- mlp(seed = 10 + rank)
    opt <- optim_sgd(model$parameters, lr = 0.05)
    dl <- dataloader(ds, batch_size = 3, shuffle = TRUE, generator = 7)
    history <- fit(model, dl, data$loss, opt, epochs = 2, verbose = FALSE)
    list(parameters = arrays(model$parameters), history = as.data.frame(history))
  },
  dead = {
    data <- regression_data(world_size)
    ddp <- nn_distributed_data_parallel(mlp(seed = 1))
    opt <- optim_sgd(ddp$parameters, lr = 0.1)
    dying <- world_size - 1
    started <- NA
    caught <- tryCatch({
      for (s in 1:4) {
        b <- rank_rows(data, s, rank, world_size)
        opt$zero_grad()
        loss <- data$loss(ddp(b$x), b$y)
        if (s == 3) {
          if (rank == dying) tools::pskill(Sys.getpid(), tools::SIGKILL)
          started <- Sys.time()
        }
        loss$backward()
        opt$step()
      }
      NULL
    }, error = function(e) list(class = class(e), message = conditionMessage(e)))
    save_result(list(error = caught, seconds = as.numeric(Sys.time() - started, units = "secs")))
    # The group is unusable now; leave at once rather than meet a dead peer at MPI's finalize.
    quit(save = "no", status = if (is.null(caught)) 0 else 3, runLast = FALSE)
  },
  stop("unknown case ", case)
)
save_result(result)
dist_destroy_process_group()
