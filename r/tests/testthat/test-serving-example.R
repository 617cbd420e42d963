# examples/serving/plumber.R: the plumber API started in a background R process on a free port of
# the loopback interface, its /predict answers compared with the model's own forward in R.

serving_example_dir <- function() {
  homes <- c(Sys.getenv("RCUDA_HOME"), rcuda_home_recorded(), file.path("..", "..", ".."))
  dirs <- file.path(homes[nzchar(homes)], "examples", "serving")
  found <- dirs[file.exists(file.path(dirs, "plumber.R"))]
  skip_if(!length(found), paste("examples/serving/plumber.R not found (set RCUDA_HOME to the",
                                "repository)"))
  normalizePath(found[1])
}

# The repository the package was configured against (configure writes it into engine.dcf).
rcuda_home_recorded <- function() {
  file <- system.file("engine.dcf", package = "rcuda")
  if (!nzchar(file)) return("")
  home <- read.dcf(file, fields = "Home")[1, "Home"]
  if (is.na(home)) "" else home
}

post_json <- function(url, body) {
  handle <- curl::new_handle()
  curl::handle_setopt(handle, post = TRUE, copypostfields = body)
  curl::handle_setheaders(handle, "Content-Type" = "application/json")
  answer <- curl::curl_fetch_memory(url, handle)
  list(status = answer$status_code, body = jsonlite::fromJSON(rawToChar(answer$content)))
}

# Rscript with this session's library paths, so that the child loads the same rcuda.
start_plumber <- function(dir, model_path) {
  port <- httpuv::randomPort(host = "127.0.0.1")
  code <- sprintf("plumber::pr_run(plumber::pr('plumber.R'), host = '127.0.0.1', port = %d)", port)
  log <- tempfile(fileext = ".log")
  process <- processx::process$new(
    file.path(R.home("bin"), "Rscript"), c("-e", code), wd = dir, stdout = log, stderr = "2>&1",
    env = c("current", R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep),
            RCUDA_SERVING_MODEL = model_path),
    cleanup = TRUE, supervise = TRUE)
  url <- sprintf("http://127.0.0.1:%d", port)
  deadline <- Sys.time() + 60
  repeat {
    up <- tryCatch(curl::curl_fetch_memory(paste0(url, "/health"))$status_code == 200,
                   error = function(e) FALSE)
    if (up) break
    if (!process$is_alive() || Sys.time() > deadline) {
      process$kill()
      stop("the plumber example did not start:\n", paste(readLines(log), collapse = "\n"))
    }
    Sys.sleep(0.1)
  }
  list(process = process, url = url)
}

test_that("the plumber example answers /predict as the model's forward in R", {
  for (pkg in c("plumber", "httpuv", "processx", "curl", "jsonlite")) skip_if_not_installed(pkg)
  dir <- serving_example_dir()

  model <- nn_sequential(nn_linear(4, 10), nn_relu(), nn_linear(10, 3), nn_softmax(dim = 2))
  model_path <- withr::local_tempfile(fileext = ".onnx")
  onnx_export(model, torch_randn(2, 4), model_path, input_names = "x", output_names = "probs",
              dynamic_axes = list(x = list("1" = "batch"), probs = list("1" = "batch")))
  api <- start_plumber(dir, model_path)
  withr::defer(api$process$kill())

  health <- curl::curl_fetch_memory(paste0(api$url, "/health"))
  health <- jsonlite::fromJSON(rawToChar(health$content))
  expect_equal(health$status, "ok")
  expect_equal(health$device, if (cuda_is_available()) "cuda" else "cpu")

  x <- matrix(rnorm(5 * 4), 5, 4)
  model$eval()
  ref <- as_array(with_no_grad(model(torch_tensor(x))))
  answer <- post_json(paste0(api$url, "/predict"),
                      as.character(jsonlite::toJSON(list(x = x), digits = NA)))
  expect_equal(answer$status, 200)
  expect_equal(dim(answer$body$probs), c(5L, 3L))
  expect_lt(max(abs(answer$body$probs - ref)), 1e-5)
  expect_equal(answer$body$species, c("setosa", "versicolor", "virginica")[max.col(ref, "first")])

  # One row as a plain vector; a data frame's rows (vetiver's form).
  one <- post_json(paste0(api$url, "/predict"),
                   as.character(jsonlite::toJSON(list(x = x[2, ]), digits = NA)))
  expect_lt(max(abs(one$body$probs - ref[2, , drop = FALSE])), 1e-5)
  rows <- post_json(paste0(api$url, "/predict"),
                    as.character(jsonlite::toJSON(as.data.frame(x), digits = NA)))
  expect_lt(max(abs(rows$body$probs - ref)), 1e-5)

  bad <- post_json(paste0(api$url, "/predict"), '{"x": [[1, 2, 3]]}')
  expect_equal(bad$status, 400)
  expect_match(bad$body$error, "input 'x' takes rows of 4 numbers, got 3")
})

test_that("the example's make_model.R writes a model that classifies iris", {
  dir <- serving_example_dir()
  path <- withr::local_tempfile(fileext = ".onnx")
  out <- system2(file.path(R.home("bin"), "Rscript"), c(file.path(dir, "make_model.R"), path),
                 stdout = TRUE, stderr = TRUE,
                 env = paste0("R_LIBS=", paste(.libPaths(), collapse = .Platform$path.sep)))
  expect_true(file.exists(path), info = paste(out, collapse = "\n"))
  model <- onnx_load(path)
  expect_equal(model$inputs[[1]]$name, "x")
  expect_equal(model$outputs[[1]]$name, "probs")
  probs <- as_array(model(as.matrix(iris[, 1:4])))
  expect_lt(max(abs(rowSums(probs) - 1)), 1e-5)
  expect_gt(mean(max.col(probs) == as.integer(iris$Species)), 0.9)
})
