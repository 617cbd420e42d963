# Data-parallel training: distributed_sampler() against its definition (PyTorch's
# DistributedSampler), in this process; then collectives, nn_distributed_data_parallel()
# training, no_sync, the unused-parameter error, a dead rank and fit() on 2 and 3 ranks, each run
# by `mpirun --oversubscribe -np N` on dist/worker.R and compared here with single-process
# references on the concatenated batches, in float64.

source(test_path("dist", "models.R"), local = TRUE)

# ---- distributed_sampler ------------------------------------------------------------------------

# PyTorch's DistributedSampler.__iter__, written out from its definition: `order` padded by
# repeating its head (or cut), then every world_size-th index from position rank + 1.
sampler_definition <- function(order, world_size, rank, drop_last) {
  n <- length(order)
  per_rank <- if (drop_last && n %% world_size != 0) {
    ceiling((n - world_size) / world_size)
  } else {
    ceiling(n / world_size)
  }
  total <- per_rank * world_size
  if (!drop_last) {
    padding <- total - n
    order <- if (padding <= n) c(order, order[seq_len(padding)]) else
      c(order, rep(order, ceiling(padding / n))[seq_len(padding)])
  } else {
    order <- order[seq_len(total)]
  }
  if (per_rank == 0) return(integer(0))
  order[seq(rank + 1, total, by = world_size)]
}

share_of <- function(s) as.integer(unlist(rcuda:::sampler_values(s)))

# The order dataloader(shuffle = TRUE, generator = seed) draws in its (epoch + 1)-th epoch.
loader_order <- function(n, seed, epoch) {
  dl <- dataloader(tensor_dataset(torch_arange(1, n)), batch_size = n, shuffle = TRUE,
                   generator = seed)
  for (e in 0:epoch) batch <- dataloader_next(dataloader_make_iter(dl))
  as.integer(as_array(batch[[1]]))
}

test_that("distributed_sampler gives each rank its share, as PyTorch's definition", {
  for (n in c(1, 2, 5, 10, 12, 13)) for (world_size in 1:4) for (drop_last in c(FALSE, TRUE)) {
    shares <- lapply(seq_len(world_size) - 1, function(rank) {
      s <- distributed_sampler(n, num_replicas = world_size, rank = rank, shuffle = FALSE,
                               drop_last = drop_last)
      got <- share_of(s)
      expect_identical(got, as.integer(sampler_definition(seq_len(n), world_size, rank, drop_last)),
                       info = paste(n, world_size, rank, drop_last))
      expect_identical(length(s), length(got))
      got
    })
    expect_true(length(unique(lengths(shares))) == 1)  # every rank runs as many batches
    if (!drop_last) expect_setequal(unlist(shares), seq_len(n))
    if (drop_last) expect_false(anyDuplicated(unlist(shares)) > 0)
  }
})

test_that("distributed_sampler shuffles by seed and epoch, alike on every rank", {
  ds <- tensor_dataset(torch_randn(11, 2))
  for (world_size in c(2, 3)) for (drop_last in c(FALSE, TRUE)) for (epoch in c(0, 1, 4)) {
    order <- loader_order(11, seed = 5, epoch = epoch)
    for (rank in seq_len(world_size) - 1) {
      s <- distributed_sampler(ds, num_replicas = world_size, rank = rank, seed = 5,
                               drop_last = drop_last)
      s$set_epoch(epoch)
      expect_identical(share_of(s), as.integer(sampler_definition(order, world_size, rank, drop_last)),
                       info = paste(world_size, drop_last, epoch, rank))
      expect_identical(share_of(s), share_of(s))  # an epoch's order is fixed
    }
  }
  expect_setequal(loader_order(11, 5, 0), 1:11)
  s <- distributed_sampler(ds, num_replicas = 2, rank = 0, seed = 5)
  first <- share_of(s)
  expect_false(identical(share_of(s$set_epoch(1)), first))
  torch_manual_seed(99)  # the global stream plays no part
  expect_identical(share_of(s$set_epoch(0)), first)
  dl <- dataloader(ds, batch_size = 2, sampler = s)
  expect_identical(length(dl), 3L)
})

test_that("distributed_sampler checks its arguments", {
  ds <- tensor_dataset(torch_randn(4, 1))
  expect_error(distributed_sampler(ds), "dist_init_process_group", class = "rcuda_value_error")
  expect_error(distributed_sampler(ds, num_replicas = 2, rank = 2), "= \\[0, 1\\], got 2",
               class = "rcuda_value_error")
  expect_error(distributed_sampler(ds, num_replicas = 0, rank = 0), "num_replicas",
               class = "rcuda_value_error")
  expect_error(distributed_sampler(ds, 2, 0, seed = -1), "seed", class = "rcuda_value_error")
  s <- distributed_sampler(ds, 2, 1)
  expect_error(s$set_epoch(1.5), "epoch", class = "rcuda_value_error")
  expect_output(print(s), "rank 1 of 2: 2 of 4 indices, shuffled")
})

test_that("dist_* functions need a process group, and say so", {
  expect_false(dist_is_initialized())
  expect_error(dist_get_rank(), "dist_init_process_group\\(\\) first", class = "rcuda_value_error")
  expect_error(dist_all_reduce(torch_ones(2)), "dist_all_reduce: the default process group",
               class = "rcuda_value_error")
  expect_error(nn_distributed_data_parallel(nn_linear(2, 1)), "nn_distributed_data_parallel",
               class = "rcuda_value_error")
  expect_error(dist_init_process_group("gloo"), "backend", class = "rcuda_value_error")
  expect_error(dist_init_process_group("mpi", timeout = 0), "timeout", class = "rcuda_value_error")
  expect_identical(dist_get_local_rank(), 0L)
})

# ---- several ranks under mpirun ------------------------------------------------------------------

mpirun <- Sys.which("mpirun")

# Runs dist/worker.R's `case` on np ranks; list(status, log, results (by rank, NULL where a rank
# wrote none), seconds, dir).
run_ranks <- function(case, np, timeout = 120, extra = character(), env = character()) {
  if (!nzchar(mpirun)) skip("mpirun is not installed (Debian: apt-get install openmpi-bin)")
  dir <- tempfile(paste0("dist-", case, "-"))
  dir.create(dir)
  log <- file.path(dir, "mpirun.log")
  libs <- unique(c(dirname(system.file(package = "rcuda")), .libPaths()))
  vars <- c(R_LIBS = paste(libs, collapse = ":"), RCUDA_DIST_CASE = case, RCUDA_DIST_OUT = dir, env)
  if (identical(unname(Sys.info()[["effective_user"]]), "root")) {
    vars <- c(vars, OMPI_ALLOW_RUN_AS_ROOT = "1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = "1")
  }
  args <- c("--oversubscribe", "-np", np, extra, as.vector(rbind("-x", names(vars))),
            file.path(R.home("bin"), "Rscript"), test_path("dist", "worker.R"))
  started <- Sys.time()
  status <- system2(mpirun, shQuote(args), env = paste0(names(vars), "=", shQuote(vars)),
                    stdout = log, stderr = log, timeout = timeout)
  results <- lapply(seq_len(np) - 1, function(rank) {
    f <- file.path(dir, sprintf("rank%d.rds", rank))
    if (file.exists(f)) readRDS(f)
  })
  list(status = status, log = paste(readLines(log, warn = FALSE), collapse = "\n"),
       results = results, seconds = as.numeric(Sys.time() - started, units = "secs"), dir = dir)
}

expect_ranks_ok <- function(run) {
  expect_identical(run$status, 0L, info = run$log)
  expect_false(any(vapply(run$results, is.null, logical(1))), info = run$log)
}

max_difference <- function(a, b) max(abs(unlist(a) - unlist(b)))

expect_close <- function(a, b, what, tolerance = 1e-12) {
  expect_identical(names(a), names(b), info = what)
  expect_lt(max_difference(a, b), tolerance, label = what)
}

with_float64 <- function(code) {
  old <- torch_get_default_dtype()
  torch_set_default_dtype(torch_float64())
  on.exit(torch_set_default_dtype(old))
  code
}

# Training of ddp_train() in worker.R in one process: rank 0's initial weights, each step on
# the whole batch of every rank.
reference_train <- function(model_fn, data, steps, loss_of_step = whole_batch_loss) {
  model <- model_fn(seed = 10)
  opt <- optim_sgd(model$parameters, lr = 0.1, momentum = 0.9)
  for (s in seq_len(steps)) {
    opt$zero_grad()
    loss <- loss_of_step(model, data, s)
    loss$backward()
    opt$step()
  }
  list(parameters = arrays(model$parameters), buffers = arrays(model$buffers))
}

whole_batch_loss <- function(model, data, s) {
  b <- take(data, step_rows(data, s))
  data$loss(model(b$x), b$y)
}

# Batch norm in training mode normalises each rank's slice by its own statistics, so the
# reference runs the slices one by one and averages their losses (the whole batch's mean loss,
# where no layer mixes samples). The running statistics follow rank 0's slice alone, as every
# forward first sends rank 0's buffers: the other slices run first, then the buffers are put back
# before rank 0's.
per_rank_batch_norm_loss <- function(world_size) function(model, data, s) {
  saved <- lapply(model$buffers, function(b) b$clone())
  losses <- lapply(seq_len(world_size - 1), function(r) {
    b <- rank_rows(data, s, r, world_size)
    data$loss(model(b$x), b$y)
  })
  buffers <- model$buffers
  with_no_grad(for (name in names(saved)) buffers[[name]]$copy_(saved[[name]]))
  b <- rank_rows(data, s, 0, world_size)
  Reduce(`+`, c(losses, list(data$loss(model(b$x), b$y)))) / world_size
}

test_that("collectives on 2 and 3 ranks give what the ranks' values give here", {
  for (np in c(2, 3)) {
    run <- run_ranks("collectives", np)
    expect_ranks_ok(run)
    ranks <- seq_len(np) - 1
    values <- lapply(ranks, rank_values, shape = c(3, 4))
    total <- Reduce(`+`, values)
    for (r in run$results) {
      if (is.null(r)) next
      expect_identical(c(r$rank, r$world_size), c(r$rank, as.integer(np)))
      expect_identical(r$backend, "mpi")
      expect_close(r$reduced, list(total, total / np, Reduce(pmax, values), Reduce(pmin, values)),
                   "all_reduce sum, avg, max, min")
      expect_equal(as.numeric(r$int_sum), c(1, 2, 3) * sum(ranks + 1))
      expect_lt(max_difference(r$float_sum, total), 1e-5)
      m <- values[[r$rank + 1]]
      m[, 2] <- total[, 2]
      expect_close(r$matrix, m, "all_reduce of a column, written back")
      expect_close(r$async, Reduce(pmax, values), "async all_reduce")
      expect_true(r$async_done)
      expect_close(r$broadcast, rank_values(np - 1, 5), "broadcast from the last rank")
      expect_close(r$gathered, lapply(ranks, rank_values, shape = c(2, 2)), "all_gather")
      expect_close(r$into, lapply(ranks, rank_values, shape = 3), "all_gather into a list")
    }
  }
})

test_that("DDP training of an MLP on N ranks is single-process training on the whole batch", {
  for (np in c(2, 3)) {
    run <- run_ranks("mlp", np)
    expect_ranks_ok(run)
    want <- with_float64(reference_train(mlp, regression_data(np), steps = 4))
    for (r in run$results) {
      if (!is.null(r)) expect_close(r$parameters, want$parameters, paste("MLP on", np, "ranks"))
    }
  }
})

test_that("DDP training of a CNN with batch norm on N ranks matches its single-process reference", {
  for (np in c(2, 3)) {
    run <- run_ranks("cnn_bn", np)
    expect_ranks_ok(run)
    want <- with_float64(reference_train(cnn_bn, image_data(np), steps = 3,
                                         per_rank_batch_norm_loss(np)))
    for (r in run$results) {
      if (!is.null(r)) expect_close(r$parameters, want$parameters, paste("CNN on", np, "ranks"))
    }
    if (!is.null(run$results[[1]])) {
      expect_close(run$results[[1]]$buffers, want$buffers, "rank 0's running statistics")
    }
  }
})

test_that("no_sync accumulates micro-batches as one step on the whole batch", {
  for (np in c(2, 3)) {
    run <- run_ranks("no_sync", np)
    expect_ranks_ok(run)
    want <- with_float64({
      data <- regression_data(np, micro = 2)
      model <- mlp(seed = 10)
      opt <- optim_sgd(model$parameters, lr = 0.1)
      for (s in 1:3) {
        opt$zero_grad()
        for (m in 1:2) {
          b <- take(data, step_rows(data, s, m))
          data$loss(model(b$x), b$y)$backward()
        }
        opt$step()
      }
      arrays(model$parameters)
    })
    for (r in run$results) {
      if (!is.null(r)) expect_close(r$parameters, want, paste("no_sync on", np, "ranks"))
    }
  }
})

test_that("a parameter without a gradient is an error naming it, unless find_unused_parameters", {
  run <- run_ranks("unused_error", 2)
  expect_ranks_ok(run)
  for (r in run$results) {
    if (is.null(r)) next
    expect_false(is.null(r$error), info = run$log)
    expect_true("rcuda_error" %in% r$error$class)
    expect_match(r$error$message, "unused\\.(weight|bias)")
    expect_match(r$error$message, "find_unused_parameters")
  }
  run <- run_ranks("unused_ok", 2)
  expect_ranks_ok(run)
  want <- with_float64(reference_train(with_unused, regression_data(2), steps = 3))
  for (r in run$results) {
    if (!is.null(r)) expect_close(r$parameters, want$parameters, "find_unused_parameters = TRUE")
  }
})

test_that("fit() on N ranks splits each batch, averages its records and prints on rank 0", {
  for (np in c(2, 3)) {
    run <- run_ranks("fit_lists", np)
    expect_ranks_ok(run)
    want <- with_float64({
      data <- regression_data(np)
      model <- mlp(seed = 10)
      history <- fit(model, fit_batches(data, 1:4), data$loss, optim_sgd(model$parameters, lr = 0.1),
                     epochs = 2, valid_dl = fit_batches(data, 5:6), metrics = list(metric_mae()),
                     verbose = FALSE)
      list(parameters = arrays(model$parameters), history = as.data.frame(history))
    })
    columns <- c("train_loss", "train_mae", "valid_loss", "valid_mae")
    for (r in run$results) {
      if (is.null(r)) next
      expect_close(r$parameters, want$parameters, paste("fit() on", np, "ranks"))
      expect_close(as.list(r$history[columns]), as.list(want$history[columns]), "fit()'s history")
    }
    printed <- lapply(run$results, `[[`, "printed")
    expect_length(printed[[1]], 2)
    expect_match(printed[[1]], "^epoch [12]/2  loss .* mae .* valid_loss .* valid_mae ")
    for (p in printed[-1]) expect_length(p, 0)
    expect_true(file.exists(file.path(run$dir, "checkpoint-rank0", "model.safetensors")))
    expect_false(dir.exists(file.path(run$dir, "checkpoint-rank1")))
  }
})

test_that("fit() on N ranks shards a shuffled dataloader with distributed_sampler", {
  np <- 2
  run <- run_ranks("fit_loader", np)
  expect_ranks_ok(run)
  want <- with_float64({
    data <- regression_data(np)
    n <- nrow(data$x)
    model <- mlp(seed = 10)
    opt <- optim_sgd(model$parameters, lr = 0.05)
    samplers <- lapply(seq_len(np) - 1, function(rank) {
      distributed_sampler(n, num_replicas = np, rank = rank, seed = 7)
    })
    for (epoch in 0:1) {
      shares <- lapply(samplers, function(s) share_of(s$set_epoch(epoch)))
      for (k in seq_len(ceiling(length(shares[[1]]) / 3))) {
        rows <- unlist(lapply(shares, function(share) share[(3 * k - 2):min(3 * k, length(share))]))
        b <- take(data, rows)
        opt$zero_grad()
        data$loss(model(b$x), b$y)$backward()
        opt$step()
      }
    }
    arrays(model$parameters)
  })
  for (r in run$results) {
    if (!is.null(r)) expect_close(r$parameters, want, "fit() over a sharded dataloader")
  }
})

test_that("a rank that dies mid-step makes the others fail within the timeout", {
  timeout <- 5
  run <- run_ranks("dead", 3, timeout = timeout + 60, extra = "--enable-recovery",
                   env = c(RCUDA_DIST_TIMEOUT = timeout))
  expect_null(run$results[[3]])  # killed before it could write
  for (r in run$results[1:2]) {
    expect_false(is.null(r), info = run$log)
    if (is.null(r)) next
    expect_false(is.null(r$error), info = run$log)
    expect_true("rcuda_dist_error" %in% r$error$class, info = r$error$message)
    expect_match(r$error$message, "rank 2|time(d)? ?out", ignore.case = TRUE)
    expect_lt(r$seconds, timeout + 10)
  }
  expect_lt(run$seconds, timeout + 60)
})
