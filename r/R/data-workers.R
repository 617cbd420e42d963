# Batches made in worker processes: dataloader(num_workers = n), as torch for R's.
#
# Note [Loading in worker processes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A dataset whose .getitem() is slow R code (reading files, decoding images, augmenting) keeps
# the GPU waiting when batches are made in the training process. With num_workers = n, batches
# are made in n R processes (callr sessions, as torch for R's; fresh processes, so no fork of a
# process holding a CUDA context or thread pools). The loader keeps them from one epoch to the
# next (starting R and rcuda is most of an epoch's start) and sets them up afresh for each; they
# stop when the loader is collected, or with an epoch that fails or is left unfinished (an
# iterator collected before its end; a second iterator made meanwhile gets workers of its own).
#
# - What a worker gets each epoch: the dataset, collate_fn, worker_init_fn and worker_globals,
#   written once with torch_save's hook (Note [Whole modules in torch_save] in save.R), so tensors
#   held in the dataset's fields travel too (torch for R cannot pass them, and warns; rcuda warns
#   that each worker holds a copy). Each worker empties its global environment, attaches rcuda
#   and worker_packages, reads that file, puts the globals and `.worker_info` (id 1..n,
#   workers, seed) in its global environment, seeds R's generator and rcuda's with the epoch's
#   seed + id, runs on one thread (n workers beside the training process; PyTorch's workers do
#   the same) and calls worker_init_fn(id).
# - The epoch's seed is drawn from R's generator when the iterator is made, so set.seed() before
#   dataloader_make_iter() makes the workers' draws repeat, as in torch for R.
# - Batch k (1-based) is made by worker ((k - 1) mod n) + 1, from the indices this process
#   chose (the shuffle order is this process's, so it matches num_workers = 0), collated in the
#   worker, and comes back as a safetensors file in /dev/shm (the same hook: every dtype, shape,
#   requires_grad; a tensor that appears twice in the batch comes back as one tensor, so
#   in-place changes through one name show through the other). A worker makes its share of the
#   epoch's batches in one call, each written as <file>.part and renamed when whole, and runs
#   at most two batches ahead of what this process has read (PyTorch's prefetch_factor); this
#   process takes the batches in order, waiting for each file to appear.
# - A worker's error stops the epoch's workers and is raised here as a runtime_error naming the
#   worker and the batch, with the worker's message. `timeout` (milliseconds, as torch for R's;
#   -1 or 0 for none) bounds the wait for one batch; past it, the workers are stopped and a
#   runtime_error says the wait timed out.
# - An iterable_dataset streams in this process: its one stream has no indices to share out.

# ---- arguments ---------------------------------------------------------------------------

worker_count <- function(num_workers) {
  if (!is.numeric(num_workers) || length(num_workers) != 1 || is.na(num_workers) ||
      num_workers < 0 || num_workers != floor(num_workers)) {
    value_error("dataloader: num_workers must be a whole number of at least 0, got ",
                deparse(num_workers, nlines = 1)[1])
  }
  if (num_workers > 0 && !requireNamespace("callr", quietly = TRUE)) {
    value_error("dataloader: num_workers = ", num_workers, " needs the callr package ",
                "(install.packages(\"callr\")); num_workers = 0 makes batches in this process")
  }
  as.integer(num_workers)
}

worker_package_names <- function(packages) {
  if (is.null(packages)) return(character())
  if (!is.character(packages) || anyNA(packages)) {
    value_error("dataloader: worker_packages must be package names, got ", class(packages)[1])
  }
  packages
}

# worker_globals: NULL, a named list of values, or names of variables where dataloader() was
# called (looked up now, as torch for R does).
worker_global_values <- function(globals, env) {
  if (is.null(globals)) return(list())
  if (is.list(globals)) {
    if (length(globals) > 0 && (is.null(names(globals)) || any(names(globals) == ""))) {
      value_error("dataloader: worker_globals as a list must name every value")
    }
    return(globals)
  }
  if (!is.character(globals) || anyNA(globals)) {
    value_error("dataloader: worker_globals must be a named list or variable names, got ",
                class(globals)[1])
  }
  found <- vapply(globals, exists, logical(1), envir = env)
  if (!all(found)) {
    rcuda_abort("rcuda_value_error", paste0(
      "dataloader: worker_globals names variables that do not exist where dataloader() was ",
      "called: ", paste(globals[!found], collapse = ", ")), also = "runtime_error")
  }
  mget(globals, envir = env, inherits = TRUE)
}

# The dataset's fields that hold tensors (directly or in lists): each worker gets a copy.
check_worker_dataset <- function(dataset, n) {
  envs <- list(dataset, dataset_private(dataset))
  holding <- character()
  for (env in Filter(is.environment, envs)) {
    for (name in ls(env, all.names = TRUE)) {
      if (bindingIsActive(name, env)) next  # computed on read: reading it could be costly
      value <- get(name, envir = env, inherits = FALSE)
      if (holds_tensor(value)) holding <- c(holding, name)
    }
  }
  if (length(holding) > 0) {
    warning("dataloader: the dataset's fields ", paste(unique(holding), collapse = ", "),
            " hold tensors; a parallel dataloader (num_workers = ", n, ") gives each worker ",
            "process its own copy of them", call. = FALSE)
  }
}

# The `private` environment of a dataset's methods (Note [Dataset objects] in data.R).
dataset_private <- function(dataset) {
  for (name in ls(dataset, all.names = TRUE)) {
    if (bindingIsActive(name, dataset)) next
    value <- get(name, envir = dataset, inherits = FALSE)
    if (is.function(value) && is.environment(environment(value)$private)) {
      return(environment(value)$private)
    }
  }
  NULL
}

holds_tensor <- function(x) {
  if (is_torch_tensor(x)) return(TRUE)
  is.list(x) && !is.environment(x) && any(vapply(x, holds_tensor, logical(1)))
}

# ---- this process's side -----------------------------------------------------------------

# How many of a worker's batches may wait unread (PyTorch's prefetch_factor).
worker_prefetch <- 2L

worker_iter <- function(dl, ...) {
  it <- loader_iter(dl, next_worker_batch, ...)
  index <- list()
  repeat {  # every batch's indices, drawn now: this process decides the order
    if (!is.null(it$batches_left) && length(index) >= it$batches_left) break
    if (!is.null(it$batches) && it$position >= length(it$batches)) break
    index[[length(index) + 1L]] <- next_batch_index(it)
  }
  n <- length(index)
  it$taken <- 0L
  it$failed <- NULL
  it$token <- basename(tempfile("rcuda-batch-"))
  it$files <- file.path(transfer_dir(), sprintf("%s-%d.safetensors", it$token, seq_len(n)))
  seed <- sample.int(.Machine$integer.max - dl$num_workers, 1)
  it$bundle <- tempfile("rcuda-dataset-", tmpdir = transfer_dir(), fileext = ".safetensors")
  bundle <- list(recipe = loader_recipe(dl, it), init = dl$worker_init_fn, globals = dl$worker_globals)
  .Call(rc_torch_save, serialized_object(bundle, "dataloader"), it$bundle)
  it$pool <- take_pool(dl, it$token)
  workers <- it$pool$workers
  it$finished <- rep(FALSE, length(workers))
  for (id in seq_along(workers)) {
    mine <- which((seq_len(n) - 1L) %% length(workers) + 1L == id)
    workers[[id]]$call(
      function(...) worker_epoch(...),  # (package: called in rcuda's namespace there)
      list(bundle = it$bundle, id = id, workers = length(workers), seed = seed,
           packages = dl$worker_packages, index = index[mine], files = it$files[mine],
           prefetch = worker_prefetch),
      package = "rcuda")
  }
  reg.finalizer(it, release_pool, onexit = TRUE)
  it
}

# A folder in memory where there is one, for the files that carry batches.
transfer_dir <- function() {
  if (dir.exists("/dev/shm") && file.access("/dev/shm", 2) == 0) "/dev/shm" else tempdir()
}

# The loader's worker processes, for the epoch of iterator `token`: those of its last epoch when
# that epoch has ended (worker_epoch sets them up afresh), otherwise new ones. An iterator left
# before its end keeps its own pool until it is collected (release_pool).
take_pool <- function(dl, token) {
  pool <- dl$.pool
  alive <- !is.null(pool) && all(vapply(pool$workers, function(w) w$is_alive(), logical(1)))
  if (is.null(pool) || pool$busy || !alive) {
    if (!is.null(pool) && !pool$busy) stop_pool(pool)
    pool <- start_pool(dl$num_workers)
    dl$.pool <- pool
  }
  pool$busy <- TRUE
  pool$token <- token
  pool
}

start_pool <- function(n) {
  options <- callr::r_session_options(supervise = TRUE)  # workers end with this process
  workers <- lapply(seq_len(n), function(i) callr::r_session$new(options, wait = FALSE))
  for (id in seq_len(n)) {
    w <- workers[[id]]
    w$poll_process(-1)
    started <- w$read()
    if (!identical(started$code, 201L)) {
      lapply(workers, function(w) w$kill())
      rcuda_abort("rcuda_error", paste0("dataloader: worker ", id, " did not start: ",
                                         started$message %||% "the R process exited"),
                  also = "runtime_error")
    }
  }
  pool <- new.env(parent = emptyenv())
  pool$workers <- workers
  pool$busy <- FALSE
  reg.finalizer(pool, stop_pool, onexit = TRUE)
  pool
}

stop_pool <- function(pool) {
  for (w in pool$workers) if (w$is_alive()) w$kill()
  pool$workers <- list()
  pool$busy <- FALSE
  invisible(NULL)
}

# An iterator's end, early (an error, or collected before its last batch) or not.
release_pool <- function(it) {
  pool <- it$pool
  if (!is.null(pool) && identical(pool$token, it$token) && pool$busy) {
    if (it$taken < length(it$files) || !is.null(it$failed)) {
      stop_pool(pool)  # workers still busy with this epoch
    } else {
      for (id in which(!it$finished)) worker_answer(pool$workers[[id]], -1)  # (their last answers)
      pool$busy <- FALSE
    }
  }
  unlink(c(it$files, paste0(it$files, ".part"), it$bundle))
  invisible(NULL)
}

# The next result of a worker's call (skipping its printed output), waiting at most `wait` ms
# (-1: no limit); NULL if none came.
worker_answer <- function(w, wait) {
  repeat {
    if (w$poll_process(wait) == "timeout") return(NULL)
    answer <- w$read()
    if (is.null(answer)) next
    if (answer$code >= 300 && answer$code < 400) next  # output the worker printed
    return(answer)
  }
}

worker_message <- function(error) {
  parent <- error$parent
  if (inherits(parent, "condition")) conditionMessage(parent) else conditionMessage(error)
}

worker_of <- function(it, k) ((k - 1L) %% length(it$finished)) + 1L

next_worker_batch <- function(it) {
  if (!is.null(it$failed)) {
    rcuda_abort("rcuda_error", paste0("dataloader: this epoch's workers stopped after an error (",
                                       it$failed, "); make a new iterator"), also = "runtime_error")
  }
  if (it$taken >= length(it$files)) {
    release_pool(it)  # (an epoch of no batches ends here)
    return(exhausted_value())
  }
  k <- it$taken + 1L
  id <- worker_of(it, k)
  file <- it$files[k]
  timeout <- it$loader$timeout
  deadline <- if (timeout > 0) Sys.time() + timeout / 1000 else Inf
  wait <- 1L
  # Batch k's file appears once its worker has renamed it into place; meanwhile the worker's
  # call can end with an error. Polls back off from 1 to 10 ms.
  while (!file.exists(file)) {
    if (!it$finished[id]) {
      answer <- worker_answer(it$pool$workers[[id]], wait)
      if (!is.null(answer)) {
        it$finished[id] <- TRUE
        if (!is.null(answer$error) || answer$code != 200L) worker_failed(it, id, k, answer)
      }
    } else if (!file.exists(file)) {
      worker_failed(it, id, k, NULL)
    }
    if (Sys.time() > deadline) {
      worker_failed(it, id, k, NULL, paste0("worker ", id, " timed out: no batch ", k,
                                            " within ", timeout, " ms"))
    }
    wait <- min(wait * 2L, 10L)
  }
  batch <- torch_load(file, device = NULL)  # (each tensor back on the device it was made on)
  unlink(file)
  it$taken <- k
  if (k == length(it$files)) release_pool(it)  # the epoch's last batch: the pool is free
  finished_batch(it$loader, batch)
}

worker_failed <- function(it, id, k, answer, why = NULL) {
  if (is.null(why)) {
    message <- if (!is.null(answer$error)) worker_message(answer$error) else NULL
    why <- if (is.null(message)) {
      paste0("worker ", id, " stopped before batch ", k, ": ",
             answer$message %||% "its R process exited")
    } else if (startsWith(message, "could not start: ")) {
      paste0("worker ", id, " ", message)
    } else {
      paste0("worker ", id, " failed on batch ", k, ": ", message)
    }
  }
  it$failed <- why
  release_pool(it)
  rcuda_abort("rcuda_error", paste0("dataloader: ", why), also = "runtime_error")
}

# ---- the worker's side (called in a callr session) ---------------------------------------

worker_state <- new.env(parent = emptyenv())

# One epoch in a worker: set up from the epoch's bundle, then make the batches `index` (this
# worker's share, in order) into `files`, at most `prefetch` of them waiting unread.
worker_epoch <- function(bundle, id, workers, seed, packages, index, files, prefetch) {
  tryCatch(worker_setup(bundle, id, workers, seed, packages), error = function(e) {
    stop("could not start: ", conditionMessage(e), call. = FALSE)
  })
  for (j in seq_along(index)) {
    if (j > prefetch) wait_until_read(files[j - prefetch])
    batch <- make_batch(worker_state$recipe, index[[j]])
    part <- paste0(files[j], ".part")  # renamed when whole, so a file that exists is complete
    .Call(rc_torch_save, serialized_object(batch, "dataloader"), part)
    file.rename(part, files[j])
  }
  invisible(TRUE)
}

wait_until_read <- function(file) {
  wait <- 0.001
  while (file.exists(file)) {
    Sys.sleep(wait)
    wait <- min(wait * 2, 0.01)
  }
}

worker_setup <- function(bundle, id, workers, seed, packages) {
  # A fresh global environment each epoch, as a new process would have.
  rm(list = ls(globalenv(), all.names = TRUE), envir = globalenv())
  # rcuda attached, as torch is in torch for R's workers: a dataset defined at top level calls
  # torch_tensor() and the rest through the search path.
  for (p in c("rcuda", packages)) library(p, character.only = TRUE)
  made <- torch_load(bundle, device = NULL)
  list2env(made$globals, envir = globalenv())
  assign(".worker_info", list(id = id, workers = workers, seed = seed + id), envir = globalenv())
  set.seed(seed + id)
  torch_manual_seed(seed + id)
  torch_set_num_threads(1)
  worker_state$recipe <- made$recipe
  if (!is.null(made$init)) made$init(id)
  invisible(TRUE)
}
