# serve(): a model served by `rcuda serve` in a child process, on a free port of the loopback
# interface. Each answer is checked against the model's own forward in R on fresh random inputs.

# The rcuda command-line program with its serve command, or a skip saying what is missing.
skip_if_no_server <- function() {
  for (pkg in c("processx", "curl", "jsonlite")) skip_if_not_installed(pkg)
  cli <- tryCatch(rcuda:::rcuda_cli(), error = function(e) NULL)
  skip_if(is.null(cli), paste("the rcuda command-line program was not found (build apps/cli, or",
                              "set RCUDA_CLI); serve() runs `rcuda serve`"))
  help <- processx::run(cli, c("serve", "--help"), error_on_status = FALSE)
  skip_if(!grepl("--model-repository", paste(help$stdout, help$stderr), fixed = TRUE),
          paste(cli, "has no serve command"))
  cli
}

forward <- function(model, x) {
  model$eval()
  as_array(with_no_grad(model(torch_tensor(x))))
}

max_error <- function(a, b) max(abs(a - b))

fresh_rows <- function(n, features) matrix(rnorm(n * features), n, features)

mlp <- nn_module(
  initialize = function() {
    self$fc1 <- nn_linear(5, 16)
    self$fc2 <- nn_linear(16, 3)
  },
  forward = function(x) self$fc2(torch_tanh(self$fc1(x)))
)

test_that("serve() of a module answers $predict as the module's forward, one row or several", {
  skip_if_no_server()
  model <- mlp()
  server <- serve(model, torch_randn(2, 5), port = 0)
  withr::defer(server$stop())
  expect_true(server$running())
  expect_gt(server$port, 0)
  expect_equal(server$url, sprintf("http://127.0.0.1:%d", server$port))
  expect_output(print(server), "model 'model' at http://127.0.0.1:[0-9]+ \\(running")

  x <- fresh_rows(7, 5)
  y <- server$predict(x)
  expect_equal(dim(y), c(7L, 3L))
  expect_lt(max_error(y, forward(model, x)), 1e-5)
  # A batch of one, a plain vector (one row), a tensor, and predict().
  x1 <- fresh_rows(1, 5)
  expect_lt(max_error(server$predict(x1), forward(model, x1)), 1e-5)
  v <- rnorm(5)
  expect_lt(max_error(server$predict(v), forward(model, matrix(v, 1))), 1e-5)
  x <- fresh_rows(4, 5)
  expect_lt(max_error(server$predict(torch_tensor(x)), forward(model, x)), 1e-5)
  expect_lt(max_error(predict(server, x), forward(model, x)), 1e-5)
})

test_that("serve() of an ONNX file serves it under its name, batched up to max_batch_size", {
  skip_if_no_server()
  model <- nn_sequential(nn_linear(6, 12), nn_relu(), nn_linear(12, 2))
  path <- withr::local_tempfile(fileext = ".onnx")
  onnx_export(model, torch_randn(3, 6), path, input_names = "x", output_names = "y",
              dynamic_axes = list(x = list("1" = "batch"), y = list("1" = "batch")))
  server <- serve(path, name = "mlp_onnx", port = 0, max_batch_size = 8,
                  max_queue_delay_us = 100, device = "cpu")
  withr::defer(server$stop())
  x <- fresh_rows(5, 6)
  y <- server$predict(x)
  expect_equal(dim(y), c(5L, 2L))
  expect_lt(max_error(y, forward(model, x)), 1e-5)
  expect_lt(max_error(server$predict(list(x = x)), forward(model, x)), 1e-5)

  expect_null(server$metrics_url)  # metrics_port = -1, the default: none

  meta <- server$metadata()
  expect_equal(meta$name, "mlp_onnx")
  expect_equal(meta$inputs[[1]]$name, "x")
  expect_equal(meta$inputs[[1]]$datatype, "FP32")
  expect_equal(utils::tail(unlist(meta$inputs[[1]]$shape), 1), 6)
  expect_equal(meta$outputs[[1]]$name, "y")
})

test_that("a wrong input is an R error carrying the server's message, which names the input", {
  skip_if_no_server()
  model <- mlp()
  server <- serve(model, torch_randn(2, 5), port = 0, input_names = "features")
  withr::defer(server$stop())
  err <- expect_error(server$predict(fresh_rows(2, 4)), "features", class = "rcuda_serve_error")
  expect_match(conditionMessage(err), "/v2/models/model/infer answered 4[0-9][0-9]")
  expect_true(err$status >= 400 && err$status < 500)
  expect_error(server$predict(list(other = fresh_rows(2, 5))), "no input 'other'",
               class = "rcuda_value_error")
  # The server still answers after a refused request.
  x <- fresh_rows(3, 5)
  expect_lt(max_error(server$predict(x), forward(model, x)), 1e-5)
})

test_that("a model of several inputs takes them by name or position, and gives a named list", {
  skip_if_no_server()
  two <- nn_module(
    initialize = function() self$fc <- nn_linear(4, 3),
    forward = function(a, b) {
      logits <- self$fc(a) * b
      list(logits = logits, probs = nnf_softmax(logits, dim = 2))
    }
  )
  model <- two()
  server <- serve(model, list(a = torch_randn(2, 4), b = torch_randn(2, 3)), port = 0)
  withr::defer(server$stop())
  expect_equal(vapply(server$metadata()$inputs, function(i) i$name, ""), c("a", "b"))
  a <- fresh_rows(6, 4)
  b <- fresh_rows(6, 3)
  model$eval()
  ref <- with_no_grad(model(torch_tensor(a), torch_tensor(b)))
  for (y in list(server$predict(list(b = b, a = a)), server$predict(list(a, b)))) {
    expect_named(y, c("logits", "probs"), ignore.order = TRUE)
    expect_lt(max_error(y$logits, as_array(ref$logits)), 1e-5)
    expect_lt(max_error(y$probs, as_array(ref$probs)), 1e-5)
  }
  expect_error(server$predict(a), "takes 2 input\\(s\\) \\(a, b\\), got 1")
})

test_that("vetiver's routes answer: /ping, /metadata and /predict", {
  skip_if_no_server()
  model <- mlp()
  server <- serve(model, torch_randn(2, 5), port = 0)
  withr::defer(server$stop())
  get <- function(path) curl::curl_fetch_memory(paste0(server$url, path))
  expect_equal(get("/ping")$status_code, 200)
  expect_equal(get("/metadata")$status_code, 200)

  # vetiver's body: the rows of a data frame, one JSON object each.
  x <- fresh_rows(3, 5)
  body <- as.character(jsonlite::toJSON(as.data.frame(x), digits = NA))
  handle <- curl::new_handle()
  curl::handle_setopt(handle, post = TRUE, copypostfields = body)
  curl::handle_setheaders(handle, "Content-Type" = "application/json")
  answer <- curl::curl_fetch_memory(paste0(server$url, "/predict"), handle)
  expect_equal(answer$status_code, 200)
  pred <- jsonlite::fromJSON(rawToChar(answer$content))$.pred  # one array per row
  expect_equal(dim(pred), c(3L, 3L))
  expect_lt(max_error(pred, forward(model, x)), 1e-5)
})

test_that("$stop() ends the server; a second $stop() is harmless", {
  skip_if_no_server()
  server <- serve(mlp(), torch_randn(2, 5), port = 0)
  url <- server$url
  expect_equal(server$stop(), 0)  # SIGTERM: the server drains and exits 0
  expect_false(server$running())
  expect_equal(server$stop(), 0)
  expect_output(print(server), "\\(stopped\\)")
  expect_error(server$predict(fresh_rows(1, 5)), "not running", class = "rcuda_serve_error")
  expect_error(curl::curl_fetch_memory(paste0(url, "/v2/health/ready")))
})

test_that("a file that is not a model fails serve() with the server's output", {
  skip_if_no_server()
  path <- withr::local_tempfile(fileext = ".onnx")
  writeLines("not an ONNX model", path)
  expect_error(serve(path, port = 0, wait = 20), "serve: ", class = "rcuda_serve_error")
})

test_that("serve() checks its arguments before starting anything", {
  skip_if_not_installed("processx")
  skip_if_not_installed("curl")
  skip_if_not_installed("jsonlite")
  model <- mlp()
  expect_error(serve(model, torch_randn(2, 5), port = -3), "port must be a port number",
               class = "rcuda_value_error")
  expect_error(serve(model, torch_randn(2, 5), name = "a/b"), "name must be a model name")
  expect_error(serve(model, torch_randn(2, 5), max_queue_delay_us = 100),
               "needs max_batch_size")
  expect_error(serve(model, torch_randn(2, 5), max_batch_size = 4, cuda_graphs = 8),
               "cuda_graphs must be TRUE or batch sizes from 1 to max_batch_size \\(4\\)")
  expect_error(serve(model, port = 0), "example_input is needed")
  expect_error(serve(tempfile(fileext = ".onnx")), "no such file")
})

test_that("the rcuda program is found through option rcuda.cli, then RCUDA_CLI", {
  withr::local_options(rcuda.cli = file.path(tempdir(), "no-such-rcuda"))
  expect_error(rcuda:::rcuda_cli(), "option rcuda.cli is .*no-such-rcuda.*not an executable")
  withr::local_options(rcuda.cli = NULL)
  withr::local_envvar(RCUDA_CLI = file.path(tempdir(), "no-such-rcuda"))
  expect_error(rcuda:::rcuda_cli(), "RCUDA_CLI is .*no-such-rcuda.*not an executable")
  fake <- withr::local_tempfile()
  writeLines("#!/bin/sh", fake)
  Sys.chmod(fake, "755")
  withr::local_envvar(RCUDA_CLI = fake)
  expect_equal(rcuda:::rcuda_cli(), normalizePath(fake))
  withr::local_envvar(RCUDA_CLI = NA)
  withr::local_envvar(PATH = tempdir())
  # Then the CLI installed with the package's own engine, or the one of the build it linked.
  bundled <- system.file("bin", "rcuda", package = "rcuda")
  build <- rcuda:::engine_build_dir()
  if (nzchar(bundled)) {
    expect_equal(rcuda:::rcuda_cli(), bundled)
  } else if (is.na(build) || !file.exists(file.path(build, "apps", "cli", "rcuda"))) {
    expect_error(rcuda:::rcuda_cli(), "rcuda on the PATH")
  } else {
    expect_equal(rcuda:::rcuda_cli(), file.path(build, "apps", "cli", "rcuda"))
  }
})

test_that("metrics_port = 0 serves Prometheus metrics on a free port", {
  skip_if_no_server()
  model <- mlp()
  server <- serve(model, torch_randn(2, 5), port = 0, metrics_port = 0)
  withr::defer(server$stop())
  expect_match(server$metrics_url, "^http://127.0.0.1:[0-9]+/metrics$")
  expect_false(grepl(paste0(":", server$port, "/"), server$metrics_url, fixed = TRUE))
  server$predict(fresh_rows(4, 5))
  metrics <- rawToChar(curl::curl_fetch_memory(server$metrics_url)$content)
  pattern <- "rcuda_inference_request_success_total\\{[^}]*model=\"model\"[^}]*\\} [0-9.e+]+"
  count <- regmatches(metrics, regexpr(pattern, metrics))
  expect_length(count, 1)
  expect_equal(as.numeric(sub(".* ", "", count)), 1)  # the one request above
})
