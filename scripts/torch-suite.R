#!/usr/bin/env Rscript
# torch for R's own testthat suite (mlverse/torch), run against rcuda on the CPU, one test_that
# block at a time (issue #35): the measure of "torch scripts run after library(rcuda)".
#
#   Rscript scripts/torch-suite.R [--out DIR] [--repo GIT_DIR] [--commit SHA] [--files REGEX]
#                                 [--block-timeout SECONDS] [--file-timeout SECONDS] [--jobs N]
#
#   --out            where torch-suite.csv and torch-suite-summary.md go (default /tmp)
#   --repo           a git directory of mlverse/torch (default /work/.mirror/mlverse+torch/repo,
#                    what the session tool `fetch github:mlverse/torch` makes)
#   --commit         the commit whose tests/testthat runs (default e4de110)
#   --files          a regular expression on test file names: run only those (default all)
#   --block-timeout  seconds one test_that block may run (setTimeLimit; default 60)
#   --file-timeout   seconds one test file's R process may run before it is killed (default 900)
#   --jobs           test files run at once, each in its own R process (default 1)
#   --from-csv       summarise the rows of an earlier run's torch-suite.csv again, running nothing
#
# rcuda must be installed where R finds it (R_LIBS). torch's files are extracted into a
# temporary folder and deleted at the end; nothing of theirs enters the repository. The
# figures and the table by cause are kept in docs/torch-parity.md.
#
# Note [How library(torch) becomes rcuda]: a shim package named torch, installed into a
# temporary library that goes first on .libPaths(). Its NAMESPACE imports rcuda and re-exports
# every export of rcuda, so library(torch), requireNamespace("torch"), torch::f and
# packageVersion("torch") all resolve to rcuda without masking any base function (masking
# library() would miss `torch::` and requireNamespace(), and a real torch installed on the
# machine would still win those). The tests are evaluated in an environment whose parent is the
# shim's namespace, as test_check() evaluates them in the package's namespace: what torch keeps
# internal (torch:::f) is missing here, as it is to a user of rcuda.
#
# Each test file runs in its own R process, so that a crash or a hang loses one block, not the
# run: the process writes a mark when a block starts and a row when it ends; after a crash or
# the file timeout the block that started without ending is recorded as "crash" or "timeout"
# and the file goes on from the next top-level expression in a new process.

suite_defaults <- list(out = "/tmp", repo = "/work/.mirror/mlverse+torch/repo", commit = "e4de110",
                       files = "", block_timeout = 60, file_timeout = 900, jobs = 1)

# The two classes the issue reports. A file is tensor-level when it tests tensors and the
# functions over them: creation, dtypes, devices, generators, indexing, operators, reductions,
# linear algebra, the generated torch_* functions and $ methods, scalars, storage, memory format,
# dimension names and tensor comparison. Everything else (autograd, nn_*, nnf_*, optim_*, lr
# schedulers, data loading, distributions, jit, save/load, cuda, ...) is "the rest".
tensor_level_files <- c(
  "test-tensor.R", "test-R7.R", "test-creation-ops.R", "test-dtype.R", "test-device.R",
  "test-generator.R", "test-indexing.R", "test-operators.R", "test-reduction.R", "test-linalg.R",
  "test-stack.R", "test-scalar.R", "test-compare.R", "test-gen-method.R", "test-gen-namespace.R",
  "test-wrapers.R", "test-storage.R", "test-memory_format.R", "test-dimname_list.R",
  "test-with-indices.R")

row_columns <- c("file", "expr", "block", "outcome", "n_expectations", "seconds", "message")

parse_args <- function(args) {
  opts <- c(suite_defaults, list(start = 1))
  i <- 1
  while (i <= length(args)) {
    key <- sub("^--", "", args[[i]])
    key <- gsub("-", "_", key)
    if (!key %in% c(names(opts), "child", "rows", "start", "tests", "from_csv")) stop("torch-suite.R: unknown option ", args[[i]])
    opts[[key]] <- args[[i + 1]]
    i <- i + 2
  }
  for (k in c("block_timeout", "file_timeout", "jobs", "start")) if (!is.null(opts[[k]])) opts[[k]] <- as.numeric(opts[[k]])
  opts
}

# ---- the child: one test file in one R process --------------------------------------------

# A testthat reporter that records each block: a mark at its start (so that the parent knows
# which block a crash interrupted), a row at its end, and the block's time limit in between. A
# block may hold blocks (test-utils-data-dataloader-shm.R sources another test file inside
# one): each is a row of its own, named "outer / inner", and the outer block's time limit
# starts again when an inner one ends.
block_reporter <- function(file, rows_path, block_timeout, watch) {
  R6::R6Class("BlockReporter", inherit = testthat::Reporter, public = list(
    expr = 0L, stack = list(),
    start_test = function(context, test) {
      name <- paste(c(vapply(self$stack, `[[`, "", "name"), test), collapse = " / ")
      self$stack[[length(self$stack) + 1L]] <- list(name = name, results = list(), t0 = proc.time()[[3]])
      write_row(rows_path, file, self$expr, name, "started", 0L, 0, "")
      setTimeLimit(elapsed = block_timeout, transient = TRUE)
    },
    add_result = function(context, test, result) {
      # Note [Checks that compare nothing in torch].
      if (inherits(result, "expectation_failure") && watch$tensors_differ) result$compares_nothing_in_torch <- TRUE
      watch$tensors_differ <- FALSE
      n <- length(self$stack)
      self$stack[[n]]$results[[length(self$stack[[n]]$results) + 1L]] <- result
    },
    end_test = function(context, test) {
      setTimeLimit(elapsed = Inf)
      n <- length(self$stack)
      block <- self$stack[[n]]
      self$stack[[n]] <- NULL
      outcome <- block_outcome(block$results)
      write_row(rows_path, file, self$expr, block$name, outcome$outcome, outcome$n, proc.time()[[3]] - block$t0,
                outcome$message)
      if (length(self$stack)) setTimeLimit(elapsed = block_timeout, transient = TRUE)
    }
  ))$new()
}

# error > fail > skip > pass. A block without expectations is "empty": testthat reports it as a
# skip, so it counts neither way (it ran without error, but asserted nothing).
block_outcome <- function(results) {
  types <- vapply(results, function(r) sub("^expectation_", "", class(r)[[1]]), "")
  first <- function(type) conditionMessage(results[[which(types == type)[[1]]]])
  n <- sum(types %in% c("success", "failure", "error"))
  if (any(types == "error")) return(list(outcome = "error", n = n, message = first("error")))
  if (any(types == "failure")) {
    nothing <- all(vapply(results[types == "failure"], function(r) isTRUE(r$compares_nothing_in_torch), TRUE))
    return(list(outcome = "fail", n = n, message = paste0(if (nothing) compares_nothing_in_torch, first("failure"))))
  }
  if (any(types == "skip")) {
    message <- first("skip")
    empty <- grepl("empty test", message, fixed = TRUE)
    return(list(outcome = if (empty) "empty" else "skip", n = n, message = message))
  }
  list(outcome = "pass", n = n, message = "")
}

write_row <- function(path, file, expr, block, outcome, n, seconds, message) {
  message <- gsub("[\r\n\t]+", " | ", substr(message, 1, 500))
  row <- data.frame(file = file, expr = expr, block = block, outcome = outcome, n_expectations = n,
                    seconds = round(seconds, 2), message = message)
  utils::write.table(row, path, append = TRUE, sep = ",", col.names = FALSE,
                     row.names = FALSE, qmethod = "double")
}

# An expect_equal() on two tensors must compare their values, under both editions, inside lists
# too; were it to compare nothing, every block that asserts with it would pass falsely, so the
# run stops instead.
check_tensor_comparison <- function() {
  a <- torch_tensor(c(1, 2, 3))
  b <- torch_tensor(c(1, 2, 4))
  fails <- function(expr) inherits(tryCatch({ expr; NULL }, expectation_failure = function(e) e), "expectation_failure")
  for (edition in 2:3) {
    testthat::local_edition(edition)
    ok <- fails(testthat::expect_equal(a, b)) && fails(testthat::expect_equal(list(a), list(b))) &&
      !fails(testthat::expect_equal(a, a$clone()))
    if (!ok) stop("torch-suite.R: expect_equal() on rcuda tensors does not compare their values (edition ", edition, ")")
  }
}

# Note [Checks that compare nothing in torch]: torch for R has no all.equal() method for its
# tensors, so testthat's edition 2 expect_equal() on two tensors (or lists of them) compares only
# their classes there and passes whatever the values. rcuda's all.equal() compares the values, so
# a torch test whose tensors differ (two models with different random weights) passes in torch
# and fails here. The child watches rcuda's all.equal(): a failed expectation that follows a
# mismatch between two tensors is marked, and a block whose every failure is so marked gets its
# own cause in the summary.
watch_tensor_comparisons <- function(state) {
  compare_values <- utils::getS3method("all.equal", "rcuda_tensor")
  registerS3method("all.equal", "rcuda_tensor", function(target, current, ...) {
    out <- compare_values(target, current, ...)
    if (!isTRUE(out) && is_torch_tensor(current) && testthat::edition_get() < 3) state$tensors_differ <- TRUE
    out
  }, envir = asNamespace("rcuda"))
}

compares_nothing_in_torch <- "[tensors differ where torch for R's expect_equal compares nothing] "

run_child <- function(opts) {
  suppressPackageStartupMessages({
    library(testthat)
    library(torch)  # the shim: rcuda
  })
  tests <- opts$tests
  setwd(tests)
  testthat::local_test_context()
  testthat::local_edition(2)  # torch's DESCRIPTION names no edition
  check_tensor_comparison()
  watch <- new.env()
  watch$tensors_differ <- FALSE
  watch_tensor_comparisons(watch)

  helpers <- new.env(parent = asNamespace("torch"))
  for (h in c(sort(Sys.glob("helper*.R")), sort(Sys.glob("setup*.R")))) {
    tryCatch(sys.source(h, envir = helpers, keep.source = TRUE),
             error = function(e) message("torch-suite: helper ", h, ": ", conditionMessage(e)))
  }
  file_env <- new.env(parent = helpers)
  reporter <- block_reporter(opts$child, opts$rows, opts$block_timeout, watch)
  exprs <- parse(opts$child, keep.source = TRUE)
  testthat::with_reporter(reporter, {
    for (i in seq_along(exprs)) {
      if (i < opts$start) next
      reporter$expr <- i
      # An error outside test_that (a file's own setup) stops no block but this expression; a
      # skip there (test-mps.R's "not an M1 Mac") skips the rest of the file, as testthat does.
      skipped <- tryCatch({ eval(exprs[[i]], file_env); NULL }, skip = function(e) e, error = function(e) {
        setTimeLimit(elapsed = Inf)
        message("torch-suite: ", opts$child, " expression ", i, ": ", conditionMessage(e))
        NULL
      })
      if (!is.null(skipped)) {
        for (j in i:length(exprs)) {
          call <- exprs[[j]]
          if (is.call(call) && identical(call[[1]], as.name("test_that")) && is.character(call[[2]]))
            write_row(opts$rows, opts$child, j, call[[2]], "skip", 0L, 0, conditionMessage(skipped))
        }
        break
      }
    }
  }, start_end_reporter = FALSE)
}

# ---- the parent: extract, shim, run every file, classify -----------------------------------

extract_tests <- function(repo, commit, dir) {
  archive <- file.path(dir, "tests.tar")
  git <- function(...) suppressWarnings(system2("git", c(paste0("--git-dir=", repo), ...), stdout = TRUE, stderr = FALSE))
  git("archive", "-o", archive, commit, "tests/testthat")
  if (!file.exists(archive)) stop("torch-suite.R: git archive of ", commit, " from ", repo, " failed")
  utils::untar(archive, exdir = dir)
  unlink(archive)
  # torch's exports: a name a test calls that torch does not export is torch's internal.
  namespace <- git("show", paste0(commit, ":NAMESPACE"))
  exports <- sub("^export\\((.*)\\)$", "\\1", grep("^export\\(", namespace, value = TRUE))
  list(tests = file.path(dir, "tests", "testthat"), commit = git("rev-parse", commit),
       exports = gsub('^["`]|["`]$', "", exports), imports = grep("^import(From)?\\(", namespace, value = TRUE))
}

# Note [How library(torch) becomes rcuda]. The shim also imports what torch's NAMESPACE imports
# (rlang's set_names, bit64's as.integer64, ...) from the packages installed here, since tests
# evaluated in torch's namespace see those names.
install_shim <- function(dir, torch_imports) {
  src <- file.path(dir, "torch-shim", "torch")
  lib <- file.path(dir, "torch-shim-lib")
  dir.create(file.path(src, "R"), recursive = TRUE)
  dir.create(lib)
  writeLines(c("Package: torch", "Version: 0.17.0",
               "Title: torch for R's Name for rcuda (a Test Shim)",
               "Description: Re-exports rcuda under the name torch, to run torch for R's tests.",
               "License: MIT", "Imports: rcuda"), file.path(src, "DESCRIPTION"))  # (R CMD INSTALL checks no others)
  exports <- sort(getNamespaceExports("rcuda"))
  import_package <- sub("^import(From)?\\(([^,)]+).*", "\\2", torch_imports)
  torch_imports <- torch_imports[vapply(import_package, requireNamespace, TRUE, quietly = TRUE)]
  # (Names torch imports that rcuda exports too come from rcuda: its import is read last.)
  writeLines(c(torch_imports, "import(rcuda)", sprintf("export(`%s`)", exports)), file.path(src, "NAMESPACE"))
  writeLines("# rcuda under the name torch: see NAMESPACE", file.path(src, "R", "torch.R"))
  out <- system2(file.path(R.home("bin"), "R"), c("CMD", "INSTALL", "--no-test-load", "-l", shQuote(lib), shQuote(src)),
                 stdout = TRUE, stderr = TRUE)
  if (!dir.exists(file.path(lib, "torch"))) stop("torch-suite.R: installing the shim failed:\n", paste(out, collapse = "\n"))
  lib
}

read_rows <- function(path) {
  if (!file.exists(path) || file.size(path) == 0) return(NULL)
  rows <- utils::read.csv(path, header = FALSE, col.names = row_columns, stringsAsFactors = FALSE,
                          na.strings = character(), colClasses = c("character", "integer", "character",
                          "character", "integer", "numeric", "character"))
  rows
}

# Runs one test file, starting again after a crash or a timeout from the next top-level
# expression; returns its rows, one per block (the "started" marks resolved).
run_file <- function(file, tests, opts, work) {
  rows_path <- file.path(work, paste0(sub("\\.R$", "", file), ".rows"))
  unlink(rows_path)
  start <- 1
  repeat {
    status <- system2(file.path(R.home("bin"), "Rscript"),
                      c(shQuote(opts$script), "--child", file, "--rows", shQuote(rows_path), "--tests", shQuote(tests),
                        "--start", start, "--block-timeout", opts$block_timeout),
                      stdout = FALSE, stderr = file.path(work, paste0(file, ".log")), timeout = opts$file_timeout)
    rows <- read_rows(rows_path)
    if (status == 0 || is.null(rows)) break
    last <- rows[nrow(rows), ]
    if (last$outcome != "started") break  # died between blocks: nothing left to attribute
    why <- if (status == 124) "timeout" else "crash"
    write_row(rows_path, file, last$expr, last$block, why, 0L, 0,
              paste0("the R process ", if (why == "timeout") paste("ran past", opts$file_timeout, "s") else paste("exited with status", status)))
    start <- last$expr + 1
  }
  rows <- read_rows(rows_path)
  if (is.null(rows) && status != 0) {
    # The process died before its first block (rcuda or the shim failed to load): one row says so.
    log <- readLines(file.path(work, paste0(file, ".log")), warn = FALSE)
    write_row(rows_path, file, 0L, "(the whole file)", "crash", 0L, 0,
              paste("the R process exited with status", status, "before any block:", paste(utils::tail(log, 3), collapse = " ")))
    rows <- read_rows(rows_path)
  }
  if (is.null(rows)) return(NULL)
  rows[rows$outcome != "started", ]
}

# The cause of a block's failure, from its first message, as the issue counts them; the
# second element is the detail the summary counts by (a function's name, a message).
failure_cause <- function(outcome, message, torch_exports) {
  m <- function(pattern) regmatches(message, regexec(pattern, message))[[1]]
  missing <- function(name) c(if (name %in% torch_exports) "missing function" else "torch internal (not exported by torch)", name)
  core <- substr(sub("^(<[^>]*> \\| )?Error( in `[^`]*`)?: ", "", message), 1, 90)
  if (outcome %in% c("timeout", "crash")) return(c(outcome, ""))
  if (grepl("reached elapsed time limit", message)) return(c("timeout", ""))
  if (length(x <- m('could not find function \\\\?"([^"\\\\]+)'))) return(missing(x[[2]]))
  if (length(x <- m("rcuda_tensor has no method or field '([^']+)'"))) return(c("missing function", paste0("$", x[[2]])))
  if (length(x <- m("a traced function has .* not \\$([A-Za-z_.0-9]+)"))) return(c("missing function", paste0("traced $", x[[2]])))
  if (length(x <- m("'([^']+)' is not an exported object from 'namespace:torch'"))) return(missing(x[[2]]))
  if (length(x <- m("object '([^']+)' not found"))) return(missing(x[[2]]))
  if (length(x <- m("there is no package called .([A-Za-z0-9.]+)"))) return(c("missing package", x[[2]]))
  if (grepl("cannot open URL", message)) return(c("needs the network", ""))
  if (length(x <- m("unused arguments? \\(([^ =)]+)"))) return(c("argument torch accepts", x[[2]]))
  if (outcome == "fail" && startsWith(message, compares_nothing_in_torch)) return(c("values differ where torch's check compares nothing", ""))
  if (outcome == "fail") {
    if (grepl("did not throw|threw an error with unexpected|does not match|Expected match|inherit from|not an S3 object|^class\\(|class\\(.*not equal|did not produce|produced (warnings|messages)|unexpected (warning|message)", message))
      return(c("message or class differs", ""))
    return(c("different value", ""))
  }
  if (grepl("^<rcuda_", message)) return(c("error where torch accepts the input", core))
  c("other error", core)
}

summarise <- function(rows, info, out) {
  rows$class <- ifelse(rows$file %in% tensor_level_files, "tensor-level", "the rest")
  causes <- t(mapply(failure_cause, rows$outcome, rows$message, MoreArgs = list(torch_exports = info$exports),
                      USE.NAMES = FALSE))
  failed <- rows$outcome %in% c("fail", "error", "timeout", "crash")
  rows$cause <- ifelse(failed, causes[, 1], "")
  rows$cause_detail <- ifelse(failed, causes[, 2], "")
  csv <- file.path(out, "torch-suite.csv")
  utils::write.csv(rows, csv, row.names = FALSE)

  lines <- c(sprintf("torch for R's tests (mlverse/torch %s) against rcuda %s, %s", substr(info$commit, 1, 9),
                     info$rcuda_commit, format(Sys.time(), "%Y-%m-%d %H:%M")), "",
             "| class | blocks | skipped | empty | run | passed | pass % | pass % without torch internals |",
             "|---|---|---|---|---|---|---|---|")
  # The last column leaves out the blocks that stop at a name torch does not export (its tests
  # run inside its namespace): they say nothing about rcuda.
  for (cl in c("tensor-level", "the rest", "all")) {
    r <- if (cl == "all") rows else rows[rows$class == cl, ]
    run <- sum(!r$outcome %in% c("skip", "empty"))
    pass <- sum(r$outcome == "pass")
    internal <- sum(startsWith(r$cause, "torch internal"))
    lines <- c(lines, sprintf("| %s | %d | %d | %d | %d | %d | %.1f | %.1f |", cl, nrow(r), sum(r$outcome == "skip"),
                              sum(r$outcome == "empty"), run, pass, 100 * pass / max(run, 1),
                              100 * pass / max(run - internal, 1)))
  }
  f <- rows[failed, ]
  by_cause <- sort(table(f$cause), decreasing = TRUE)
  lines <- c(lines, "", "| cause | blocks | tensor-level | the rest |", "|---|---|---|---|")
  for (cause in names(by_cause)) {
    lines <- c(lines, sprintf("| %s | %d | %d | %d |", cause, by_cause[[cause]],
                              sum(f$cause == cause & f$class == "tensor-level"), sum(f$cause == cause & f$class == "the rest")))
  }
  missing <- f[f$cause %in% c("missing function", "argument torch accepts", "error where torch accepts the input"), ]
  if (nrow(missing)) {
    top <- sort(table(paste0(missing$cause, ": ", missing$cause_detail)), decreasing = TRUE)
    lines <- c(lines, "", "| most frequent | blocks |", "|---|---|",
               sprintf("| %s | %d |", names(top), as.integer(top))[seq_len(min(40, length(top)))])
  }
  by_file <- aggregate(cbind(run = !outcome %in% c("skip", "empty"), passed = outcome == "pass") ~ file, rows, sum)
  lines <- c(lines, "", "| file | run | passed |", "|---|---|---|", sprintf("| %s | %d | %d |", by_file$file, by_file$run, by_file$passed))
  writeLines(lines, file.path(out, "torch-suite-summary.md"))
  writeLines(lines)
  message("torch-suite: ", csv, " and ", file.path(out, "torch-suite-summary.md"))
}

run_parent <- function(opts) {
  work <- tempfile("torch-suite-")
  dir.create(work)
  on.exit(unlink(work, recursive = TRUE), add = TRUE)
  src <- extract_tests(opts$repo, opts$commit, work)
  here <- dirname(opts$script)
  rcuda_commit <- tryCatch(system2("git", c("-C", shQuote(here), "rev-parse", "--short", "HEAD"), stdout = TRUE, stderr = FALSE),
                           error = function(e) "unknown", warning = function(w) "unknown")
  info <- list(commit = src$commit, exports = src$exports, rcuda_commit = rcuda_commit)
  dir.create(opts$out, showWarnings = FALSE, recursive = TRUE)
  if (!is.null(opts$from_csv)) {
    rows <- utils::read.csv(opts$from_csv, stringsAsFactors = FALSE, na.strings = character())[row_columns]
    return(summarise(rows, info, opts$out))
  }
  if (!requireNamespace("rcuda", quietly = TRUE)) stop("torch-suite.R: rcuda is not installed where R finds it (R_LIBS)")
  lib <- install_shim(work, src$imports)
  Sys.setenv(R_LIBS = paste(c(lib, .libPaths()), collapse = .Platform$path.sep),
             NOT_CRAN = "true", TESTTHAT = "true", CUDA_VISIBLE_DEVICES = "", OMP_NUM_THREADS = "1")
  files <- sort(basename(Sys.glob(file.path(src$tests, "test-*.R"))))
  if (nzchar(opts$files)) files <- grep(opts$files, files, value = TRUE)
  run_one <- function(f) {
    t0 <- proc.time()[[3]]
    rows <- run_file(f, src$tests, opts, work)
    message(sprintf("torch-suite: %-45s %3d blocks, %3d passed (%.0f s)", f, NROW(rows), sum(rows$outcome == "pass"),
                    proc.time()[[3]] - t0))
    rows
  }
  all <- if (opts$jobs > 1) parallel::mclapply(files, run_one, mc.cores = opts$jobs, mc.preschedule = FALSE) else lapply(files, run_one)
  summarise(do.call(rbind, all), info, opts$out)
}

main <- function() {
  all_args <- commandArgs(trailingOnly = FALSE)
  script <- normalizePath(sub("^--file=", "", grep("^--file=", all_args, value = TRUE)[[1]]))
  opts <- parse_args(commandArgs(trailingOnly = TRUE))
  opts$script <- script
  if (!is.null(opts$child)) run_child(opts) else run_parent(opts)
}

main()
