# fit()'s progress lines and bar, and its history: print(), as.data.frame(), plot().

test_that("verbose prints one line per epoch outside interactive sessions", {
  skip_if(interactive(), "an interactive session shows a bar besides the lines")
  d <- classification_data(40)
  train <- batches_of(d$X, d$y, 20)
  m <- classifier(4)
  out <- capture_output_lines(h <- fit(m, train, nnf_cross_entropy,
                                       optim_sgd(m$parameters, lr = 0.1), epochs = 3,
                                       valid_dl = train, metrics = list(metric_accuracy()),
                                       verbose = TRUE))
  expect_length(out, 3)
  pattern <- paste0("^epoch ([0-9])/3  loss ([0-9.e-]+)  acc ([0-9.e-]+)  valid_loss ([0-9.e-]+)",
                    "  valid_acc ([0-9.e-]+)  [0-9,]+ samples/s  [0-9.]+ s$")
  expect_true(all(grepl(pattern, out)))
  parts <- regmatches(out, regexec(pattern, out))
  r <- h$records
  for (e in 1:3) {
    expect_identical(as.integer(parts[[e]][2]), e)
    shown <- as.numeric(parts[[e]][3:6])
    expect_equal(shown, c(r$train_loss[e], r$train_acc[e], r$valid_loss[e], r$valid_acc[e]),
                 tolerance = 5e-3)
  }
  expect_silent(quiet_fit(m, train, nnf_cross_entropy, optim_sgd(m$parameters, lr = 0.1)))
})

test_that("the progress bar reads the running loss back only when it redraws", {
  old <- options(cli.progress_show_after = 0)
  on.exit(options(old))
  redraws <- 0
  due <- function() {
    redraws <<- redraws + 1
    redraws %% 2 == 0
  }
  reporter <- ns$fit_reporter(TRUE, bar = TRUE, due = due)
  read_backs <- 0
  count <- function() read_backs <<- read_backs + 1
  suppressMessages(trace("read_back", tracer = as.call(list(count)), where = ns, print = FALSE))
  on.exit(suppressMessages(untrace("read_back", where = ns)), add = TRUE)
  run_epoch <- function() {
    reporter$epoch_begin(1, 1, 4)
    for (i in 1:4) reporter$batch(i, 10 * i, torch_tensor(i, dtype = torch_float64()), list())
    reporter$epoch_end(list(epoch = 1, train_loss = 0.25, lr = 0.1, seconds = 1.5,
                            samples_per_s = 12345.6), 1)
  }
  out <- capture_output_lines(suppressMessages(run_epoch()))
  expect_identical(read_backs, 2)  # batches 2 and 4
  expect_identical(out[length(out)], "epoch 1/1  loss 0.25  12,346 samples/s  1.5 s")
})

test_that("the bar's own clock redraws once show_after has passed, then every `refresh` s", {
  old <- options(cli.progress_show_after = 0)
  on.exit(options(old))
  read_backs <- 0
  count <- function() read_backs <<- read_backs + 1
  suppressMessages(trace("read_back", tracer = as.call(list(count)), where = ns, print = FALSE))
  on.exit(suppressMessages(untrace("read_back", where = ns)), add = TRUE)
  reporter <- ns$fit_reporter(TRUE, bar = TRUE, refresh = 3600)
  run_epoch <- function() {
    reporter$epoch_begin(1, 1, NA)
    for (i in 1:5) reporter$batch(i, 10 * i, torch_tensor(i, dtype = torch_float64()), list())
    reporter$epoch_end(list(epoch = 1, train_loss = 1, lr = 0.1, seconds = 1,
                            samples_per_s = 50), 1)
  }
  capture_output_lines(suppressMessages(run_epoch()))
  expect_identical(read_backs, 1)  # the first batch, then not within the hour
})

test_that("print() shows the epochs; as.data.frame() has one row per epoch", {
  old <- options(width = 200)
  on.exit(options(old))
  d <- regression_data(30)
  train <- batches_of(d$X, d$Y, 10)
  m <- regression_mlp(1)
  h <- quiet_fit(m, train, nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01), epochs = 3,
                 valid_dl = train, metrics = metric_mae())
  out <- capture_output_lines(print(h))
  expect_match(out[1], "<fit history> 3 of 3 epochs on cpu")
  expect_match(out[2], "epoch.*train_loss.*train_mae.*valid_loss.*valid_mae")
  expect_true(all(startsWith(trimws(out[3:5]), paste0(1:3, " "))))
  df <- as.data.frame(h)
  expect_identical(names(df), c("epoch", "train_loss", "train_mae", "valid_loss", "valid_mae",
                                "lr", "seconds", "samples_per_s"))
  expect_identical(nrow(df), 3L)
  expect_true(identical(h$model, m))
  # Long histories show the first and last five epochs.
  h$records <- df[rep(1:3, 6), ]
  h$records$epoch <- 1:18
  out <- capture_output_lines(print(h))
  expect_true(any(out == "   ..."))
  expect_true(any(grepl("^ +18 ", out)) && !any(grepl("^ +9 ", out)))
})

test_that("plot() draws the history into a PNG file under Rscript", {
  skip_if_not(capabilities("png"), "this R cannot write PNG files")
  # capabilities() says what R was built with; the libraries its PNG device loads may still be
  # missing (an R unpacked without them): then there is no PNG device to test.
  probe <- tempfile(fileext = ".png")
  opened <- tryCatch({
    suppressWarnings(png(probe))
    dev.off()
    TRUE
  }, error = function(e) FALSE)
  skip_if_not(opened, "png() cannot open a device in this R (its cairo or X11 libraries are missing)")
  d <- classification_data(40)
  train <- batches_of(d$X, d$y, 20)
  m <- classifier(2)
  h <- quiet_fit(m, train, nnf_cross_entropy, optim_sgd(m$parameters, lr = 0.1), epochs = 3,
                 valid_dl = train, metrics = metric_accuracy())
  file <- tempfile(fileext = ".png")
  png(file)
  plot(h)
  dev.off()
  expect_gt(file.size(file), 1000)
  wide <- tempfile(fileext = ".png")  # panels side by side
  png(wide, width = 900, height = 420)
  plot(h)
  dev.off()
  expect_gt(file.size(wide), 1000)
  # One epoch, no validation: points only, one legend entry.
  h1 <- quiet_fit(m, train, nnf_cross_entropy, optim_sgd(m$parameters, lr = 0.1))
  file1 <- tempfile(fileext = ".png")
  png(file1)
  plot(h1)
  dev.off()
  expect_gt(file.size(file1), 1000)
})

test_that("plot(ggplot = TRUE) builds a ggplot", {
  skip_if_not_installed("ggplot2")
  d <- regression_data(20)
  m <- regression_mlp(1)
  h <- quiet_fit(m, batches_of(d$X, d$Y, 10), nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01),
                 epochs = 2, metrics = metric_mae())
  p <- plot(h, ggplot = TRUE)
  expect_s3_class(p, "ggplot")
  expect_setequal(levels(p$data$quantity), c("loss", "mae"))
})

test_that("plot(ggplot = TRUE) without ggplot2 says what is missing", {
  if (requireNamespace("ggplot2", quietly = TRUE)) skip("ggplot2 is installed")
  d <- regression_data(20)
  m <- regression_mlp(1)
  h <- quiet_fit(m, batches_of(d$X, d$Y, 10), nnf_mse_loss, optim_sgd(m$parameters, lr = 0.01))
  expect_error(plot(h, ggplot = TRUE), "needs the ggplot2 package", class = "rcuda_value_error")
})
