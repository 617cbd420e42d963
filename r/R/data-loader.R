# dataloader(): batches of a dataset, in order or shuffled, as torch for R's dataloader, with
# its arguments in its order. Batches are made in this process, or with num_workers > 0 in that
# many worker processes (Note [Loading in worker processes] in data-workers.R). A dataset with .getbatch (tensor_dataset, mnist_dataset, ...) gives a
# whole batch in one call, so no R code runs per sample; otherwise each sample comes from
# .getitem and collate_fn joins them (default: stacked along a new first dim).
#
# Note [Shuffling order]
# ~~~~~~~~~~~~~~~~~~~~~~
# Each epoch (each dataloader_make_iter) draws its order from Philox bits (rc_randperm in
# src/data.cpp): by default from the engine's generator, so torch_manual_seed(s) before
# making the iterator fixes the order, as in torch; with `generator = s` (a number, or a
# torch_generator() for its seed) from the loader's own stream, the k-th epoch using (s, k),
# independent of other random draws.
#
# Note [Samplers in a dataloader]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# With `sampler =` (R/data-sampler.R, or any object with .iter() and a length), each epoch
# takes one pass of the sampler's indices, in its order, as the order the batches are cut from
# (batch_size, drop_last as usual). With `batch_sampler =`, each value it gives is one batch's
# indices, collated as a batch. As in torch, sampler excludes shuffle, and batch_sampler excludes
# batch_size (other than 1), shuffle, sampler and drop_last.

#' @export
dataloader <- function(dataset, batch_size = 1, shuffle = FALSE, sampler = NULL,
                       batch_sampler = NULL, num_workers = 0, collate_fn = NULL,
                       pin_memory = FALSE, drop_last = FALSE, timeout = -1,
                       worker_init_fn = NULL, worker_globals = NULL, worker_packages = NULL,
                       generator = NULL) {
  if (!is_dataset(dataset)) {
    value_error("dataloader: dataset must be made by a dataset() generator, got ", class(dataset)[1])
  }
  if (is_iterable_dataset(dataset) && isTRUE(shuffle)) {
    value_error("dataloader: shuffle = TRUE needs samples by index; an iterable_dataset gives ",
                "them in its stream's order")
  }
  # Note [Samplers in a dataloader]: sampler's indices are batched as shuffle's order would be;
  # batch_sampler's batches are taken as they come. torch's exclusions hold.
  if (!is.null(sampler)) {
    sampler_length(sampler, "dataloader")
    if (isTRUE(shuffle)) value_error("dataloader: sampler option is mutually exclusive with shuffle")
  }
  if (!is.null(batch_sampler)) {
    sampler_length(batch_sampler, "dataloader")
    if (!identical(as.numeric(batch_size), 1) || isTRUE(shuffle) || !is.null(sampler) || isTRUE(drop_last)) {
      value_error("dataloader: batch_sampler option is mutually exclusive with batch_size, shuffle, ",
                  "sampler, and drop_last")
    }
    batch_size <- NULL
  }
  if ((!is.null(sampler) || !is.null(batch_sampler)) && is_iterable_dataset(dataset)) {
    value_error("dataloader: an iterable_dataset gives its samples in its stream's order; it takes no sampler")
  }
  if (!is.null(batch_size) &&
      (!is.numeric(batch_size) || length(batch_size) != 1 || is.na(batch_size) ||
       batch_size < 1 || batch_size != floor(batch_size))) {
    value_error("dataloader: batch_size must be a whole number of at least 1 (or NULL), got ",
                deparse(batch_size)[1])
  }
  if (!is.null(generator) && !is_torch_generator(generator) &&
      (!is.numeric(generator) || length(generator) != 1 || is.na(generator) || generator < 0)) {
    value_error("dataloader: generator must be NULL, a torch_generator() or a seed (a non-negative number)")
  }
  if (isTRUE(pin_memory) && !cuda_is_available()) {
    warning("dataloader: pin_memory = TRUE, but CUDA is not available: batches stay in ",
            "ordinary host memory", call. = FALSE)
    pin_memory <- FALSE
  }
  dl <- new.env(parent = emptyenv())
  dl$dataset <- dataset
  dl$batch_size <- if (is.null(batch_size)) NULL else as.integer(batch_size)
  dl$shuffle <- isTRUE(shuffle)
  dl$drop_last <- isTRUE(drop_last)
  dl$pin_memory <- isTRUE(pin_memory)
  dl$num_workers <- worker_count(num_workers)
  dl$timeout <- number_arg(timeout, "dataloader", "timeout", "a number of milliseconds (-1: none)")
  dl$worker_init_fn <- worker_init_fn
  dl$worker_packages <- worker_package_names(worker_packages)
  dl$worker_globals <- worker_global_values(worker_globals, parent.frame())
  if (!is.null(worker_init_fn) && !is.function(worker_init_fn)) {
    value_error("dataloader: worker_init_fn must be a function of the worker's id, got ",
                class(worker_init_fn)[1])
  }
  if (dl$num_workers > 0) check_worker_dataset(dataset, dl$num_workers)
  dl$generator <- generator
  dl$sampler <- sampler
  dl$batch_sampler <- batch_sampler
  dl$epochs <- 0
  dl$.has_getbatch <- is.function(dataset$.getbatch)
  dl$.iterable <- is_iterable_dataset(dataset)
  batched <- !is.null(batch_size) || !is.null(batch_sampler)
  dl$collate_fn <- collate_fn %||%
    if (!batched || dl$.has_getbatch) default_convert else default_collate
  dl$.iter <- function() dataloader_make_iter(dl)
  dl$.length <- function() length(dl)
  class(dl) <- "dataloader"
  dl
}

`%||%` <- function(a, b) if (is.null(a)) b else a

#' @export
is_dataloader <- function(x) inherits(x, "dataloader")

#' @export
length.dataloader <- function(x) {
  if (!is.null(x$batch_sampler)) return(sampler_length(x$batch_sampler, "dataloader"))
  n <- if (is.null(x$sampler)) length(x$dataset) else sampler_length(x$sampler, "dataloader")
  if (is.na(n)) return(NA_integer_)  # an iterable dataset without .length()
  if (is.null(x$batch_size)) return(n)
  if (x$drop_last) n %/% x$batch_size else as.integer(ceiling(n / x$batch_size))
}

#' @export
print.dataloader <- function(x, ...) {
  cat("<dataloader> ", length(x), " batches of ", x$batch_size %||% "single", " samples",
      if (x$shuffle) ", shuffled", "\n", sep = "")
  invisible(x)
}

# dataloader_make_iter() and dataloader_next() are S3 generics, so that other loaders (a class
# with these two methods) iterate wherever rcuda's do: fit() (Note [Iteration protocol] in
# fit.R), loop(). Calls read as torch for R's plain functions.
#' @export
dataloader_make_iter <- function(dataloader) UseMethod("dataloader_make_iter")

#' @export
dataloader_make_iter.default <- function(dataloader) {
  value_error("dataloader_make_iter: expected a dataloader")
}

#' @export
dataloader_make_iter.dataloader <- function(dataloader) {
  dl <- dataloader
  if (dl$.iterable) return(stream_iter(dl))
  if (!is.null(dl$batch_sampler)) {
    batches <- sampler_values(dl$batch_sampler)
    if (dl$num_workers > 0) return(worker_iter(dl, batches = batches, position = 0L))
    return(loader_iter(dl, next_batch, batches = batches, position = 0L, batches_left = length(batches)))
  }
  n <- length(dl$dataset)
  order <- if (!is.null(dl$sampler)) {
    as.integer(unlist(sampler_values(dl$sampler)))
  } else if (!dl$shuffle) {
    seq_len(n)
  } else {
    seed <- if (is.null(dl$generator)) NULL else c(generator_seed(dl$generator), dl$epochs)
    .Call(rc_randperm, n, seed)  # Note [Shuffling order]
  }
  size <- if (is.null(dl$batch_size)) 1L else dl$batch_size
  batches <- if (dl$drop_last) length(order) %/% size else ceiling(length(order) / size)
  if (dl$num_workers > 0) {
    return(worker_iter(dl, order = order, position = 0L, batches_left = as.integer(batches)))
  }
  loader_iter(dl, next_batch, order = order, position = 0L, batches_left = as.integer(batches))
}

# An epoch's iterator over dl (its state in ... as fields): counts the epoch, and calls
# next_fn(it) for each batch.
loader_iter <- function(dl, next_fn, ...) {
  dl$epochs <- dl$epochs + 1
  it <- list2env(list(...), parent = emptyenv())
  it$loader <- dl
  it$.next <- function() next_fn(it)
  it$.length <- function() length(dl)
  class(it) <- "dataloader_iter"
  it
}

# A collated batch, in pinned memory when the loader asks for it.
finished_batch <- function(dl, batch) if (dl$pin_memory) pin_tensors(batch) else batch

#' @export
dataloader_next <- function(iter, completed = NULL) UseMethod("dataloader_next")

#' @export
dataloader_next.default <- function(iter, completed = NULL) {
  value_error("dataloader_next: expected an iterator from dataloader_make_iter()")
}

#' @export
dataloader_next.dataloader_iter <- function(iter, completed = NULL) {
  batch <- iter$.next()
  if (is_exhausted_value(batch)) completed else batch
}

# The same sentinel as coro's exhausted(), so iter$.next() reads as in torch for R.
exhausted_value <- function() as.symbol(".__exhausted__.")
is_exhausted_value <- function(x) identical(x, exhausted_value())

next_batch <- function(it) {
  if (it$batches_left <= 0) return(exhausted_value())
  it$batches_left <- it$batches_left - 1L
  dl <- it$loader
  finished_batch(dl, make_batch(loader_recipe(dl, it), next_batch_index(it)))
}

# The dataset indices of an epoch's next batch: the next batch_size of its order, or a
# batch_sampler's next batch.
next_batch_index <- function(it) {
  dl <- it$loader
  if (is.null(it$batches)) {
    size <- if (is.null(dl$batch_size)) 1L else min(dl$batch_size, length(it$order) - it$position)
    index <- it$order[it$position + seq_len(size)]
    it$position <- it$position + size
    index
  } else {
    it$position <- it$position + 1L
    as.integer(it$batches[[it$position]])
  }
}

# What making a batch from its indices needs, in this process or a worker's (Note [Loading in
# worker processes] in data-workers.R): the dataset, how its samples are read and collated.
loader_recipe <- function(dl, it) {
  list(dataset = dl$dataset, collate_fn = dl$collate_fn, has_getbatch = dl$.has_getbatch,
       single = is.null(dl$batch_size) && is.null(it$batches))
}

make_batch <- function(recipe, index) {
  ds <- recipe$dataset
  data <- if (recipe$single) {
    ds$.getitem(index)
  } else if (recipe$has_getbatch) {
    ds$.getbatch(index)
  } else {
    lapply(index, function(i) ds$.getitem(i))
  }
  recipe$collate_fn(data)
}

# Note [Batches from a stream]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Over an iterable_dataset (R/data-iterable.R) each epoch's iterator calls the dataset's .iter()
# once and takes batch_size samples per batch from it, in order, collated as samples by index
# are; the last batch may be short (dropped with drop_last). The batch count need not be known:
# the stream's end ends the epoch.
stream_iter <- function(dl) {
  source <- dl$dataset$.iter()
  if (!is.function(source)) {
    value_error("dataloader: .iter() of '", class(dl$dataset)[1], "' must return an iterator ",
                "function, got ", class(source)[1])
  }
  loader_iter(dl, next_stream_batch, source = source, done = FALSE)
}

next_stream_batch <- function(it) {
  if (it$done) return(exhausted_value())
  dl <- it$loader
  size <- if (is.null(dl$batch_size)) 1L else dl$batch_size
  samples <- vector("list", size)
  n <- 0L
  while (n < size) {
    sample <- it$source()
    if (is_exhausted_value(sample)) {
      it$done <- TRUE
      break
    }
    n <- n + 1L
    samples[[n]] <- sample
  }
  if (n == 0L || (n < size && dl$drop_last)) return(exhausted_value())
  finished_batch(dl, dl$collate_fn(if (is.null(dl$batch_size)) samples[[1]] else samples[seq_len(n)]))
}

# torch for R's default collate: tensors are stacked along a new first dim; R arrays and
# vectors longer than one become tensors first; single numbers become a tensor of the batch
# (integers int64, doubles float32, logicals bool); strings stay a character vector; lists are
# collated element by element, keeping their names.
default_collate <- function(batch) {
  elem <- batch[[1]]
  if (is_torch_tensor(elem)) return(torch_stack(batch, dim = 1))
  if (is.atomic(elem) && !is.character(elem) && (length(elem) > 1 || is.array(elem))) {
    return(torch_stack(lapply(batch, torch_tensor), dim = 1))
  }
  if (length(elem) == 1 && is.atomic(elem)) {
    values <- unlist(batch, use.names = FALSE)
    if (is.integer(elem)) return(torch_tensor(values, dtype = torch_long()))
    if (is.numeric(elem)) return(torch_tensor(values, dtype = torch_float()))
    if (is.logical(elem)) return(torch_tensor(values, dtype = torch_bool()))
    if (is.character(elem)) return(values)
  }
  if (is.list(elem)) {
    out <- lapply(seq_along(elem), function(i) default_collate(lapply(batch, `[[`, i)))
    names(out) <- names(elem)
    return(out)
  }
  value_error("dataloader: cannot collate samples of class '", class(elem)[1],
              "'; give a collate_fn")
}

# For batches a dataset made itself (.getbatch): tensors stay, R values become tensors.
default_convert <- function(data) {
  if (is_torch_tensor(data)) return(data)
  if (is.list(data)) return(lapply(data, default_convert))
  tryCatch(torch_tensor(data), error = function(e) {
    value_error("dataloader: Can't convert data of class '", class(data)[1], "' to a tensor")  # (torch for R's words)
  })
}

# Host tensors of a batch copied to page-locked memory, so that `$cuda()` / `$to(device =)`
# copies them asynchronously (Note [Pinned host cache] in the engine).
pin_tensors <- function(x) {
  if (is_torch_tensor(x)) return(if (x$is_cuda) x else .Call(rc_pin_memory, x))
  if (is.list(x)) return(lapply(x, pin_tensors))
  x
}

tensor_methods$pin_memory <- function(self) .Call(rc_pin_memory, self)
tensor_methods$is_pinned <- function(self) .Call(rc_is_pinned, self)

# ---- loops ---------------------------------------------------------------------------------

#' @export
loop <- function(loop) {
  expr <- substitute(loop)
  env <- parent.frame()
  if (!is.call(expr) || !identical(expr[[1]], as.name("for"))) {
    value_error("loop: expects a for loop, as in loop(for (batch in dl) { ... })")
  }
  step <- loop_stepper(eval(expr[[3]], env))
  # A real repeat loop in the caller's frame, so that break and next in the body work.
  eval(bquote(repeat {
    if (!.(step$advance)()) break
    .(expr[[2]]) <- .(step$value)()
    .(expr[[4]])
  }), env)
  invisible(NULL)
}

# advance() moves to the next element (FALSE at the end); value() is that element.
loop_stepper <- function(x) {
  next_value <- if (is_dataloader(x)) {
    iter <- dataloader_make_iter(x)
    iter$.next
  } else if (inherits(x, "dataloader_iter")) {
    x$.next
  } else if (is.function(x)) {
    x  # an iterator function, as coro's: returns values, then the exhausted sentinel
  } else {
    i <- 0L
    function() {
      if (i >= length(x)) return(exhausted_value())
      i <<- i + 1L
      x[[i]]
    }
  }
  current <- NULL
  list(
    advance = function() {
      v <- next_value()
      if (is_exhausted_value(v)) return(FALSE)
      current <<- v
      TRUE
    },
    value = function() current
  )
}

# coro::loop(for (b in dl) ...) asks coro::as_iterator(dl): this method, registered in coro's
# namespace when coro is loaded (s3_register, as vctrs does), so coro stays optional.
as_iterator_dataloader <- function(x) {
  iter <- dataloader_make_iter(x)
  exhausted <- if (requireNamespace("coro", quietly = TRUE)) coro::exhausted() else exhausted_value()
  function() dataloader_next(iter, exhausted)
}

# Registers `method` for generic "pkg::generic" now if pkg is loaded, and whenever it loads.
s3_register <- function(generic, class, method) {
  parts <- strsplit(generic, "::", fixed = TRUE)[[1]]
  package <- parts[1]
  name <- parts[2]
  register <- function(...) {
    registerS3method(name, class, method, envir = asNamespace(package))
  }
  hook <- structure(register, rcuda_s3_hook = paste(generic, class))
  event <- packageEvent(package, "onLoad")
  others <- Filter(function(h) !identical(attr(h, "rcuda_s3_hook"), attr(hook, "rcuda_s3_hook")),
                   getHook(event))
  setHook(event, NULL, "replace")
  for (h in c(others, list(hook))) setHook(event, h, "append")
  if (isNamespaceLoaded(package)) register()
  invisible(NULL)
}

register_coro_methods <- function() {
  s3_register("coro::as_iterator", "dataloader", as_iterator_dataloader)
}

# enumerate(dl): torch for R's older way to loop over a dataloader, `for (b in enumerate(dl))`,
# deprecated there in favour of loop() / coro::loop() and kept for the scripts that use it. As
# torch for R's, it returns one lazy element per batch: an element fetches the next batch the
# first time it is read, so batches are made one at a time as the loop goes.
#' @export
enumerate <- function(x, ...) UseMethod("enumerate")

#' @export
enumerate.dataloader <- function(x, max_len = 1e6, ...) {
  warning(structure(
    class = c("deprecated", "warning", "condition"),
    list(message = paste("enumerate() is deprecated in favour of loop(for (b in dl) ...)",
                         "(or coro::loop()), as in torch for R"), call = NULL)
  ))
  n <- length(x)
  if (is.na(n)) n <- max_len
  shared <- new.env(parent = emptyenv())
  shared$iter <- dataloader_make_iter(x)
  lapply(seq_len(n), function(i) {
    element <- new.env(parent = shared)
    element$fetched <- FALSE
    class(element) <- "enum_env"
    element
  })
}

#' @export
`[[.enum_env` <- function(x, i, ...) {
  shared <- parent.env(x)
  if (!get("fetched", envir = x, inherits = FALSE)) {
    shared$batch <- dataloader_next(shared$iter)
    assign("fetched", TRUE, envir = x)
  }
  shared$batch[[i]]
}

#' @export
`$.enum_env` <- function(x, name) x[[name]]
