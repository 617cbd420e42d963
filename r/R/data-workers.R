# Batches made in worker processes: dataloader(num_workers = n), as torch for R's.
#
# Note [Loading in worker processes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A dataset whose .getitem() is slow R code (reading files, decoding images, augmenting) keeps
# the GPU waiting when batches are made in the training process. With num_workers = n, each
# epoch's iterator starts n R processes (callr sessions, as torch for R's; fresh processes, so no
# fork of a process holding a CUDA context or thread pools) and stops them when the epoch ends,
# fails, or the iterator is collected.
#
# - What a worker gets: the dataset, collate_fn, worker_init_fn and worker_globals, written once
#   per epoch with torch_save's hook (Note [Whole modules in torch_save] in save.R), so tensors
#   held in the dataset's fields travel too (torch for R cannot pass them, and warns; rcuda warns
#   that each worker holds a copy). Each worker attaches rcuda and worker_packages, reads that
#   file, puts the globals and `.worker_info` (id 1..n, workers, seed) in its global
#   environment, seeds R's generator and rcuda's with the epoch's seed + id, runs on one thread
#   (n workers beside the training process; PyTorch's workers do the same) and calls
#   worker_init_fn(id).
# - The epoch's seed is drawn from R's generator when the iterator is made, so set.seed() before
#   dataloader_make_iter() makes the workers' draws repeat, as in torch for R.
# - Batch k (1-based) is made by worker ((k - 1) mod n) + 1, from the indices this process
#   chose (the shuffle order is this process's, so it matches num_workers = 0), collated in the
#   worker, and comes back as a safetensors file in /dev/shm (the same hook: every dtype, shape,
#   requires_grad; a tensor that appears twice in the batch comes back as one tensor, so
#   in-place changes through one name show through the other). Each worker holds one batch at
#   a time: n batches are in flight, and the batches come out in order.
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

worker_iter <- function(dl, ...) {
  it <- loader_iter(dl, next_worker_batch, ...)
  index <- list()
  repeat {  # every batch's indices, drawn now: this process decides the order
    if (!is.null(it$batches_left) && length(index) >= it$batches_left) break
    if (!is.null(it$batches) && it$position >= length(it$batches)) break
    index[[length(index) + 1L]] <- next_batch_index(it)
  }
  it$index <- index
  it$taken <- 0L
  it$failed <- NULL
  it$workers <- start_workers(dl, loader_recipe(dl, it))
  it$files <- character(length(index))
  for (k in seq_len(min(length(index), length(it$workers)))) send_batch(it, k)
  reg.finalizer(it, function(it) stop_workers(it), onexit = TRUE)
  it
}

# A folder in memory where there is one, for the files that carry batches.
transfer_dir <- function() {
  if (dir.exists("/dev/shm") && file.access("/dev/shm", 2) == 0) "/dev/shm" else tempdir()
}

start_workers <- function(dl, recipe) {
  n <- dl$num_workers
  seed <- sample.int(.Machine$integer.max - n, 1)
  bundle <- list(recipe = recipe, init = dl$worker_init_fn, globals = dl$worker_globals)
  file <- tempfile("rcuda-dataset-", tmpdir = transfer_dir(), fileext = ".safetensors")
  on.exit(unlink(file))
  .Call(rc_torch_save, serialized_object(bundle, "dataloader"), file)
  workers <- lapply(seq_len(n), function(i) callr::r_session$new(wait = FALSE))
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
    w$call(function(...) worker_setup(...),  # (package: called in rcuda's namespace there)
           list(file = file, id = id, workers = n, seed = seed, packages = dl$worker_packages),
           package = "rcuda")
  }
  for (id in seq_len(n)) {
    answer <- worker_answer(workers[[id]], -1)
    if (!is.null(answer$error)) {
      lapply(workers, function(w) w$kill())
      rcuda_abort("rcuda_error", paste0("dataloader: worker ", id, " could not start: ",
                                         worker_message(answer$error)), also = "runtime_error")
    }
  }
  workers
}

# The next result of a worker's call (skipping its printed output), or NULL past `timeout` ms.
worker_answer <- function(w, timeout) {
  deadline <- if (timeout > 0) Sys.time() + timeout / 1000 else Inf
  repeat {
    left <- if (is.finite(deadline)) max(0, as.numeric(deadline - Sys.time(), units = "secs") * 1000) else -1
    if (w$poll_process(as.integer(ceiling(left))) == "timeout") return(NULL)
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

worker_of <- function(it, k) ((k - 1L) %% length(it$workers)) + 1L

send_batch <- function(it, k) {
  it$files[k] <- tempfile(paste0("rcuda-batch-", k, "-"), tmpdir = transfer_dir(),
                          fileext = ".safetensors")
  it$workers[[worker_of(it, k)]]$call(function(...) worker_batch(...),
                                      list(index = it$index[[k]], file = it$files[k]),
                                      package = "rcuda")
}

next_worker_batch <- function(it) {
  if (!is.null(it$failed)) {
    rcuda_abort("rcuda_error", paste0("dataloader: this epoch's workers stopped after an error (",
                                       it$failed, "); make a new iterator"), also = "runtime_error")
  }
  if (it$taken >= length(it$index)) {
    stop_workers(it)
    return(exhausted_value())
  }
  k <- it$taken + 1L
  id <- worker_of(it, k)
  answer <- worker_answer(it$workers[[id]], it$loader$timeout)
  if (is.null(answer) || !is.null(answer$error) || answer$code != 200L) {
    why <- if (is.null(answer)) {
      paste0("worker ", id, " timed out: no batch ", k, " within ", it$loader$timeout, " ms")
    } else if (!is.null(answer$error)) {
      paste0("worker ", id, " failed on batch ", k, ": ", worker_message(answer$error))
    } else {
      paste0("worker ", id, " stopped on batch ", k, ": ", answer$message %||% "the R process exited")
    }
    it$failed <- why
    stop_workers(it)
    rcuda_abort("rcuda_error", paste0("dataloader: ", why), also = "runtime_error")
  }
  file <- it$files[k]
  batch <- torch_load(file)
  unlink(file)
  it$taken <- k
  if (k + length(it$workers) <= length(it$index)) send_batch(it, k + length(it$workers))
  finished_batch(it$loader, batch)
}

stop_workers <- function(it) {
  for (w in it$workers) if (w$is_alive()) w$kill()
  it$workers <- list()
  unlink(it$files[nzchar(it$files)])
  invisible(NULL)
}

# ---- the worker's side (called in a callr session) ---------------------------------------

worker_state <- new.env(parent = emptyenv())

worker_setup <- function(file, id, workers, seed, packages) {
  # rcuda attached, as torch is in torch for R's workers: a dataset defined at top level calls
  # torch_tensor() and the rest through the search path.
  for (p in c("rcuda", packages)) library(p, character.only = TRUE)
  bundle <- torch_load(file)
  list2env(bundle$globals, envir = globalenv())
  assign(".worker_info", list(id = id, workers = workers, seed = seed + id), envir = globalenv())
  set.seed(seed + id)
  torch_manual_seed(seed + id)
  torch_set_num_threads(1)
  worker_state$recipe <- bundle$recipe
  if (!is.null(bundle$init)) bundle$init(id)
  invisible(TRUE)
}

worker_batch <- function(index, file) {
  batch <- make_batch(worker_state$recipe, index)
  .Call(rc_torch_save, serialized_object(batch, "dataloader"), file)
  invisible(TRUE)
}
