# dataloader(num_workers = n): batches made in worker R processes (Note [Loading in worker
# processes] in R/data-workers.R). References: the same loader with num_workers = 0 and plain R.

skip_if_not_installed("callr")

# Sample i: a row of a fixed random matrix (plain R values are the reference) and the worker's id.
rows_dataset <- dataset(
  initialize = function(x) self$x <- x,
  .getitem = function(i) list(x = torch_tensor(self$x[i, ], dtype = torch_float64()),
                              i = i, worker = if (exists(".worker_info")) .worker_info$id else 0L),
  .length = function() nrow(self$x)
)

# The files that carry batches now (after a collection: an abandoned iterator's go with it).
transfer_files <- function() {
  gc()
  dir <- if (dir.exists("/dev/shm")) "/dev/shm" else tempdir()
  list.files(dir, "^rcuda-(batch|dataset)-")
}

test_that("batches come in order, from worker (k - 1) mod n + 1, with the in-process values", {
  x <- matrix(rnorm(7 * 3), 7, 3)
  before <- transfer_files()
  batches <- list()
  loop(for (b in dataloader(rows_dataset(x), batch_size = 2, num_workers = 2)) {
    batches[[length(batches) + 1]] <- b
  })
  expect_length(batches, 4)
  for (k in seq_along(batches)) {
    rows <- (2 * k - 1):min(2 * k, 7)
    expect_equal(as_array(batches[[k]]$x), x[rows, , drop = FALSE], tolerance = 0)
    expect_identical(as_array(batches[[k]]$i), rows)
    expect_identical(unique(as_array(batches[[k]]$worker)), (k - 1L) %% 2L + 1L)
    expect_identical(batches[[k]]$x$dtype, torch_float64())
  }
  expect_setequal(transfer_files(), before)  # every batch's file read and deleted
})

test_that("a shuffled epoch takes the same order as num_workers = 0 under the same seed", {
  x <- matrix(as.numeric(1:40), 20, 2)
  order_of <- function(workers) {
    torch_manual_seed(7)
    it <- dataloader_make_iter(dataloader(rows_dataset(x), batch_size = 6, shuffle = TRUE,
                                          num_workers = workers))
    out <- c()
    while (!is.null(b <- dataloader_next(it))) out <- c(out, as_array(b$i))
    out
  }
  in_process <- order_of(0)
  expect_setequal(in_process, 1:20)
  expect_identical(order_of(3), in_process)
})

test_that("a batch_sampler's batches and batch_size = NULL work in workers", {
  x <- matrix(rnorm(10), 5, 2)
  sampler <- list(.iter = function() { k <- 0; function() { k <<- k + 1; if (k > 2) coro_exhausted() else list(c(5, 1), 3)[[k]] } },
                  .length = function() 2)
  coro_exhausted <- function() as.symbol(".__exhausted__.")
  it <- dataloader_make_iter(dataloader(rows_dataset(x), batch_sampler = sampler, num_workers = 2))
  b1 <- dataloader_next(it)
  b2 <- dataloader_next(it)
  expect_null(dataloader_next(it))
  expect_equal(as_array(b1$x), x[c(5, 1), ], tolerance = 0)
  expect_equal(as_array(b2$x), x[3, , drop = FALSE], tolerance = 0)
  single <- dataloader_next(dataloader_make_iter(dataloader(rows_dataset(x), batch_size = NULL,
                                                            num_workers = 1)))
  expect_equal(as_array(single$x), x[1, ], tolerance = 0)
})

test_that("every dtype, requires_grad, empty and 0-dim tensors and sharing come back", {
  dtypes <- list(torch_float32(), torch_float64(), torch_float16(), torch_bfloat16(), torch_int8(),
                 torch_uint8(), torch_int16(), torch_int32(), torch_int64(), torch_bool())
  ds <- dataset(
    initialize = function() self$v <- rnorm(12),
    .getitem = function(i) {
      out <- lapply(dtypes, function(d) torch_tensor(self$v[(i - 1) * 4 + 1:4] * 10, dtype = d))
      c(out, list(torch_tensor(self$v[1:4])$requires_grad_(TRUE), torch_zeros(0, 3)))
    },
    .length = function() 3
  )
  made <- ds()
  collate <- function(samples) {
    batch <- lapply(seq_along(samples[[1]]), function(j) torch_stack(lapply(samples, `[[`, j)))
    shared <- batch[[1]][, 1:2]
    c(batch, list(scalar = torch_mean(batch[[2]]), a = shared, b = shared))
  }
  local <- dataloader_next(dataloader_make_iter(dataloader(made, batch_size = 3, collate_fn = collate)))
  remote <- dataloader_next(dataloader_make_iter(dataloader(made, batch_size = 3, collate_fn = collate,
                                                           num_workers = 1)))
  expect_length(remote, length(local))
  for (j in seq_along(local)) {
    expect_identical(remote[[j]]$dtype, local[[j]]$dtype)
    expect_identical(remote[[j]]$shape, local[[j]]$shape)
    expect_identical(remote[[j]]$requires_grad, local[[j]]$requires_grad)
    expect_identical(as_array(remote[[j]]$to(dtype = torch_float64())),
                     as_array(local[[j]]$to(dtype = torch_float64())))
  }
  expect_true(remote[[11]]$requires_grad)
  expect_identical(remote$scalar$dim(), 0L)
  remote$a$add_(100)  # one tensor in two places stays one tensor
  expect_identical(as_array(remote$b), as_array(remote$a))
  expect_identical(as_array(remote$a), as_array(local$a + 100))
})

test_that("a worker's error is a runtime_error naming the worker and batch, then the epoch is over", {
  ds <- dataset(.getitem = function(i) if (i > 2) stop("sample ", i, " is unreadable") else i,
                .length = function() 6)
  it <- dataloader_make_iter(dataloader(ds(), batch_size = 2, num_workers = 2))
  expect_identical(as_array(dataloader_next(it)), c(1L, 2L))
  expect_error(dataloader_next(it), class = "runtime_error",
               regexp = "dataloader: worker 2 failed on batch 2: sample 3 is unreadable", fixed = TRUE)
  expect_error(dataloader_next(it), class = "runtime_error", regexp = "stopped after an error")
  expect_length(it$pool$workers, 0)  # stopped
})

test_that("a worker process that dies is reported, not waited for", {
  ds <- dataset(.getitem = function(i) { if (i == 5) tools::pskill(Sys.getpid(), tools::SIGKILL); i },
                .length = function() 8)
  it <- dataloader_make_iter(dataloader(ds(), batch_size = 2, num_workers = 2))
  expect_identical(as_array(dataloader_next(it)), 1:2)
  expect_identical(as_array(dataloader_next(it)), 3:4)
  expect_error(dataloader_next(it), class = "runtime_error",
               regexp = "dataloader: worker 1 failed on batch 3: .*(crashed|killed)", perl = TRUE)
})

test_that("timeout bounds the wait for a batch", {
  ds <- dataset(.getitem = function(i) { Sys.sleep(30); i }, .length = function() 4)
  it <- dataloader_make_iter(dataloader(ds(), batch_size = 2, num_workers = 2, timeout = 200))
  started <- Sys.time()
  expect_error(dataloader_next(it), class = "runtime_error",
               regexp = "worker 1 timed out: no batch 1 within 200 ms", fixed = TRUE)
  expect_lt(as.numeric(Sys.time() - started, units = "secs"), 10)
})

test_that("workers' draws repeat under set.seed and differ between workers", {
  ds <- dataset(.getitem = function(i) list(r = runif(1), t = torch_randn(1)), .length = function() 4)
  dl <- dataloader(ds(), batch_size = 2, num_workers = 2)
  draw <- function() {
    it <- dataloader_make_iter(dl)
    list(dataloader_next(it), dataloader_next(it))
  }
  set.seed(11)
  a <- draw()
  set.seed(11)
  b <- draw()
  set.seed(12)
  c <- draw()
  expect_identical(as_array(a[[1]]$r), as_array(b[[1]]$r))
  expect_identical(as_array(a[[2]]$t), as_array(b[[2]]$t))
  expect_false(identical(as_array(a[[1]]$r), as_array(c[[1]]$r)))
  expect_false(identical(as_array(a[[1]]$r), as_array(a[[2]]$r)))  # two workers, two streams
})

test_that("worker_init_fn, worker_globals and worker_packages reach the workers", {
  ds <- dataset(.getitem = function(i) list(init = from_init, g = scale_by * i,
                                            pkg = "tools" %in% .packages()),
                .length = function() 2)
  scale_by <- 3
  init <- function(id) from_init <<- id * 10
  dl <- dataloader(ds(), batch_size = 1, num_workers = 2, worker_init_fn = init,
                   worker_globals = "scale_by", worker_packages = "tools")
  rm(scale_by)
  it <- dataloader_make_iter(dl)
  b1 <- dataloader_next(it)
  b2 <- dataloader_next(it)
  expect_identical(c(as_array(b1$init), as_array(b2$init)), c(10, 20))
  expect_identical(c(as_array(b1$g), as_array(b2$g)), c(3, 6))
  expect_true(as_array(b1$pkg))
  no_pkg <- dataloader_next(dataloader_make_iter(dataloader(ds(), batch_size = 1, num_workers = 1,
                                                            worker_init_fn = init,
                                                            worker_globals = list(scale_by = 1))))
  expect_false(as_array(no_pkg$pkg))
  expect_error(dataloader(ds(), num_workers = 1, worker_globals = c("scale_by", "nowhere")),
               class = "runtime_error", regexp = "do not exist.*scale_by, nowhere")
})

test_that("tensors in the dataset's fields are copied to the workers, with a warning", {
  ds <- dataset(initialize = function() { self$w <- torch_randn(3); private$p <- list(torch_ones(2)) },
                .getitem = function(i) self$w * i + private$p[[1]]$sum(),
                .length = function() 2,
                private = list(p = NULL))
  made <- ds()
  expect_warning(dl <- dataloader(made, batch_size = 2, num_workers = 1),
                 regexp = "fields w, p hold tensors; a parallel dataloader (num_workers = 1)", fixed = TRUE)
  b <- dataloader_next(dataloader_make_iter(dl))
  expect_equal(as_array(b), rbind(as_array(made$w) + 2, as_array(made$w) * 2 + 2), tolerance = 1e-6)
})

test_that("an abandoned epoch's workers and files go with the iterator", {
  ds <- dataset(.getitem = function(i) torch_ones(1000) * i, .length = function() 8)
  before <- transfer_files()
  it <- dataloader_make_iter(dataloader(ds(), batch_size = 2, num_workers = 2))
  dataloader_next(it)
  pids <- vapply(it$pool$workers, function(w) w$get_pid(), numeric(1))
  expect_true(all(vapply(it$pool$workers, function(w) w$is_alive(), logical(1))))
  rm(it)
  gc()
  Sys.sleep(0.2)
  alive <- vapply(pids, function(p) isTRUE(tools::pskill(p, 0)), logical(1))
  expect_false(any(alive))
  expect_setequal(transfer_files(), before)
})

test_that("the loader keeps its workers between epochs, each epoch set up afresh", {
  ds <- dataset(.getitem = function(i) list(pid = Sys.getpid(), seen = exists("left_over"),
                                            id = .worker_info$id),
                .length = function() 4)
  init <- function(id) left_over <<- id  # in the worker's global environment
  dl <- dataloader(ds(), batch_size = 2, num_workers = 2, worker_init_fn = function(id) NULL)
  epoch <- function() {
    out <- list()
    loop(for (b in dl) out[[length(out) + 1]] <- b)
    out
  }
  first <- epoch()
  second <- epoch()
  pids <- function(e) vapply(e, function(b) as_array(b$pid)[1], numeric(1))
  expect_identical(pids(second), pids(first))
  expect_identical(vapply(second, function(b) as_array(b$id)[1], integer(1)), c(1L, 2L))
  # A variable a worker left in its global environment is gone at the next epoch.
  dl$worker_init_fn <- init
  third <- epoch()
  expect_true(all(vapply(third, function(b) all(as_array(b$seen)), logical(1))))
  dl$worker_init_fn <- function(id) NULL
  fourth <- epoch()
  expect_false(any(vapply(fourth, function(b) any(as_array(b$seen)), logical(1))))
})

test_that("two iterators of one loader at once each get their workers", {
  x <- matrix(rnorm(12), 6, 2)
  dl <- dataloader(rows_dataset(x), batch_size = 2, num_workers = 2)
  a <- dataloader_make_iter(dl)
  b <- dataloader_make_iter(dl)
  expect_equal(as_array(dataloader_next(b)$x), x[1:2, ], tolerance = 0)
  expect_equal(as_array(dataloader_next(a)$x), x[1:2, ], tolerance = 0)
  expect_equal(as_array(dataloader_next(a)$x), x[3:4, ], tolerance = 0)
  expect_equal(as_array(dataloader_next(b)$x), x[3:4, ], tolerance = 0)
  empty <- dataloader(rows_dataset(x[0, , drop = FALSE]), batch_size = 2, num_workers = 1)
  expect_null(dataloader_next(dataloader_make_iter(empty)))
})

test_that("a worker that cannot start says so", {
  ds <- dataset(.getitem = function(i) i, .length = function() 2)
  it <- dataloader_make_iter(dataloader(ds(), batch_size = 1, num_workers = 1,
                                        worker_packages = "no.such.package.here"))
  expect_error(dataloader_next(it), class = "runtime_error",
               regexp = "dataloader: worker 1 could not start: .*no.such.package.here")
})

test_that("bad worker arguments are refused by name", {
  ds <- dataset(.getitem = function(i) i, .length = function() 2)
  expect_error(dataloader(ds(), num_workers = -1), "num_workers must be a whole number of at least 0, got -1")
  expect_error(dataloader(ds(), num_workers = 1.5), "num_workers must be a whole number")
  expect_error(dataloader(ds(), num_workers = "2"), "num_workers must be a whole number")
  expect_error(dataloader(ds(), timeout = "soon"), "dataloader: timeout must be a number of milliseconds")
  expect_error(dataloader(ds(), worker_init_fn = 3), "worker_init_fn must be a function")
  expect_error(dataloader(ds(), worker_globals = list(1)), "must name every value")
  expect_error(dataloader(ds(), worker_packages = 3), "worker_packages must be package names")
})
