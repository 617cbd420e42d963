# serve(): a model served over HTTP by `rcuda serve` (the KServe v2 inference protocol and
# vetiver's routes; docs/serving.md), run as a child process. The model goes into a temporary
# model repository laid out as Triton's (<dir>/<name>/config.json, <dir>/<name>/1/model.onnx);
# the handle sends requests with curl and reads the answers with jsonlite.

# Documented in man/serve.Rd.
#' @export
serve <- function(model, example_input = NULL, port = 8000, host = "127.0.0.1", device = NULL,
                  max_batch_size = NULL, max_queue_delay_us = NULL, cuda_graphs = NULL,
                  name = "model", metrics_port = -1, wait = 30, ...) {
  serve_require_packages()
  check_serve_port(port, "port")
  check_serve_port(metrics_port, "metrics_port", off = TRUE)
  if (!is.character(host) || length(host) != 1 || is.na(host) || !nzchar(host))
    value_error("serve: host must be one address, got ", deparse(host)[1])
  if (!is.character(name) || length(name) != 1 || !grepl("^[A-Za-z0-9_][A-Za-z0-9_.-]*$", name))
    value_error("serve: name must be a model name of letters, digits, '_', '.' and '-', got ",
                deparse(name)[1])
  if (!is.numeric(wait) || length(wait) != 1 || is.na(wait) || wait <= 0)
    value_error("serve: wait must be a positive number of seconds, got ", deparse(wait)[1])
  check_serve_model(model, example_input, ...)
  config <- serve_config(name, max_batch_size, max_queue_delay_us, cuda_graphs, device)
  cli <- rcuda_cli()
  repository <- tempfile("rcuda-serve-")
  dir.create(file.path(repository, name, "1"), recursive = TRUE)
  ok <- FALSE
  on.exit(if (!ok) unlink(repository, recursive = TRUE), add = TRUE)
  write_model_file(model, example_input, file.path(repository, name, "1", "model.onnx"), ...)
  writeLines(jsonlite::toJSON(config, auto_unbox = TRUE, pretty = TRUE),
             file.path(repository, name, "config.json"))
  server <- RcudaServer$new(cli, repository, name, host, port, metrics_port,
                            device_type(device), wait)
  ok <- TRUE
  server
}

serve_require_packages <- function() {
  for (pkg in c("processx", "curl", "jsonlite")) {
    if (!requireNamespace(pkg, quietly = TRUE))
      value_error("serve: needs the R package '", pkg, "' (install.packages(\"", pkg,
                  "\"), or Debian's r-cran-", pkg, ")")
  }
}

check_serve_port <- function(port, arg, off = FALSE) {
  good <- is.numeric(port) && length(port) == 1 && !is.na(port) && port == round(port) &&
    port <= 65535 && (port >= 0 || (off && port == -1))
  if (!good)
    value_error("serve: ", arg, " must be a port number from 0 (any free port) to 65535",
                if (off) ", or -1 for none" else "", ", got ", deparse(port)[1])
}

# Note [Where R finds the rcuda binary]: option rcuda.cli, then RCUDA_CLI, then the CLI that
# configure built with the package's own engine (installed in the package's bin/), or the CLI of
# the engine build the package was installed against (configure writes that build's folder into
# inst/engine.dcf), then `rcuda` on the PATH. An option or variable that is set must name an
# executable: falling through to another binary would serve with an engine the user did not ask
# for.
rcuda_cli <- function() {
  is_executable <- function(path) {
    file.exists(path) && !dir.exists(path) && file.access(path, 1) == 0
  }
  option <- getOption("rcuda.cli")
  if (!is.null(option)) {
    if (!is.character(option) || length(option) != 1 || !is_executable(option))
      value_error("serve: option rcuda.cli is ", deparse(option)[1],
                  ", which is not an executable file")
    return(normalizePath(option))
  }
  env <- Sys.getenv("RCUDA_CLI")
  if (nzchar(env)) {
    if (!is_executable(env))
      value_error("serve: RCUDA_CLI is \"", env, "\", which is not an executable file")
    return(normalizePath(env))
  }
  tried <- c("option rcuda.cli (unset)", "environment variable RCUDA_CLI (unset)")
  bundled <- system.file("bin", "rcuda", package = "rcuda")
  if (nzchar(bundled) && is_executable(bundled)) return(bundled)
  build <- engine_build_dir()
  if (!is.na(build)) {
    path <- file.path(build, "apps", "cli", "rcuda")
    if (is_executable(path)) return(path)
    tried <- c(tried, paste0(path, " (the build the package was installed against; build ",
                             "the CLI there)"))
  }
  on_path <- Sys.which("rcuda")
  if (nzchar(on_path)) return(unname(on_path))
  value_error("serve: the rcuda command-line program was not found; looked at:\n  ",
              paste(c(tried, "rcuda on the PATH (not found)"), collapse = "\n  "),
              "\nSet options(rcuda.cli = \"/path/to/rcuda\") or RCUDA_CLI.")
}

# The engine's CMake build folder that configure recorded, NA when there is none.
engine_build_dir <- function() {
  file <- system.file("engine.dcf", package = "rcuda")
  if (!nzchar(file)) return(NA_character_)
  fields <- read.dcf(file, fields = "Build")
  if (!nrow(fields) || is.na(fields[1, "Build"])) NA_character_ else unname(fields[1, "Build"])
}

device_type <- function(device) {
  device <- device_string(device)
  if (is.null(device)) return(NULL)
  type <- sub(":.*$", "", device)
  if (!type %in% c("cpu", "cuda"))
    value_error("serve: device must be \"cpu\", \"cuda\" or \"cuda:N\", got \"", device, "\"")
  type
}

# Checked before anything starts: an ONNX file, or a module with its example input.
check_serve_model <- function(model, example_input, ...) {
  if (is.character(model)) {
    if (length(model) != 1 || is.na(model) || !file.exists(model) || dir.exists(model))
      value_error("serve: model must be an nn_module or an ONNX file, got ", deparse(model)[1],
                  if (length(model) == 1 && !is.na(model)) " (no such file)")
    if (length(list(...)))
      value_error("serve: ", paste(names(list(...)), collapse = ", "), " apply to a module ",
                  "exported by serve(), not to an ONNX file")
    return(invisible())
  }
  if (!is.function(model))
    value_error("serve: model must be an nn_module, a function of tensors or an ONNX file, got ",
                describe(model))
  if (is.null(example_input))
    value_error("serve: example_input is needed to export the model (a tensor or an R array ",
                "with the shape of one batch, or a list of them)")
}

# The model as <path>: an ONNX file is copied; a module or function is exported with
# onnx_export on example_input, the first dim of every input and output of variable size (the
# batch), so that one server answers any number of rows.
write_model_file <- function(model, example_input, path, ...) {
  if (is.character(model)) {
    if (!file.copy(model, path)) value_error("serve: could not copy ", model, " to ", path)
    return(invisible(path))
  }
  inputs <- if (is.list(example_input) && !is.data.frame(example_input)) example_input
            else list(example_input)
  inputs <- lapply(inputs, function(x) {
    if (is_torch_tensor(x)) x else torch_tensor(as_input_array(x))
  })
  args <- list(...)
  if (is.null(args$input_names))
    args$input_names <- default_names(names(inputs), length(inputs), "input")
  if (is.null(args$output_names)) {
    outputs <- example_outputs(model, inputs)
    args$output_names <- default_names(names(outputs), length(outputs), "output")
  }
  if (is.null(args$dynamic_axes)) {
    batch <- list("1" = "batch")
    args$dynamic_axes <- stats::setNames(rep(list(batch), length(args$input_names) +
                                                length(args$output_names)),
                                         c(args$input_names, args$output_names))
  }
  do.call(onnx_export, c(list(model, unname(inputs), path), args))
  invisible(path)
}

# onnx_export's own names ("input", "input_2", ...) unless every value has one.
default_names <- function(given, n, prefix) {
  if (!is.null(given) && all(nzchar(given))) return(given)
  c(prefix, if (n > 1) paste0(prefix, "_", seq(2, n)))[seq_len(n)]
}

# The model's outputs on the example (to name each and mark its batch dim), in eval mode as the
# export runs it.
example_outputs <- function(model, inputs) {
  if (is_nn_module(model) && isTRUE(model$training)) {
    model$eval()
    on.exit(model$train(), add = TRUE)
  }
  out <- with_no_grad(do.call(model, inputs))
  if (is_torch_tensor(out)) list(out) else out
}

as_input_array <- function(x) {
  if (is.data.frame(x)) x <- as.matrix(x)
  if (!is.numeric(x) && !is.logical(x))
    value_error("serve: example_input must be tensors or numeric R arrays, got ", describe(x))
  x
}

# config.json (include/rcuda/runtime/config.h): only what the call sets; the server takes the
# inputs and outputs from the file.
serve_config <- function(name, max_batch_size, max_queue_delay_us, cuda_graphs, device) {
  whole <- function(x, arg, min) {
    if (!is.numeric(x) || length(x) != 1 || is.na(x) || x != round(x) || x < min)
      value_error("serve: ", arg, " must be a whole number >= ", min, ", got ", deparse(x)[1])
    as.integer(x)
  }
  config <- list(name = name)
  if (!is.null(max_batch_size)) config$max_batch_size <- whole(max_batch_size, "max_batch_size", 1)
  if (!is.null(max_queue_delay_us)) {
    if (is.null(max_batch_size))
      value_error("serve: max_queue_delay_us batches requests together, which needs max_batch_size")
    config$dynamic_batching <- list(
      max_queue_delay_microseconds = whole(max_queue_delay_us, "max_queue_delay_us", 0))
  }
  if (!is.null(cuda_graphs) && !identical(cuda_graphs, FALSE)) {
    if (is.null(max_batch_size))
      value_error("serve: cuda_graphs captures batch sizes up to max_batch_size; ",
                  "set max_batch_size")
    sizes <- if (isTRUE(cuda_graphs)) config$max_batch_size else cuda_graphs
    if (!is.numeric(sizes) || !length(sizes) || anyNA(sizes) || any(sizes != round(sizes)) ||
        any(sizes < 1) || any(sizes > config$max_batch_size))
      value_error("serve: cuda_graphs must be TRUE or batch sizes from 1 to max_batch_size (",
                  config$max_batch_size, "), got ", deparse(cuda_graphs)[1])
    config$cuda_graphs <- I(sort(unique(as.integer(sizes))))
  }
  device <- device_string(device)
  if (!is.null(device) && grepl("^cuda:[0-9]+$", device))
    config$instance_group <- list(list(count = 1L, device = device))
  config
}

# Documented in man/serve.Rd.
RcudaServer <- R6::R6Class(
  "rcuda_server",
  cloneable = FALSE,
  public = list(
    url = NULL,
    port = NULL,
    metrics_url = NULL,
    name = NULL,
    initialize = function(cli, repository, name, host, port, metrics_port, device, wait) {
      private$repository <- repository
      private$log_file <- paste0(repository, ".log")  # beside the repository: models only there
      self$name <- name
      args <- c("serve", "--model-repository", repository, "--http-port", port,
                "--metrics-port", metrics_port, "--host", host, "--vetiver-model", name,
                if (!is.null(device)) c("--device", device))
      private$process <- processx::process$new(cli, as.character(args), stdout = private$log_file,
                                               stderr = "2>&1", cleanup = TRUE, supervise = TRUE)
      address <- private$wait_ready(host, wait)
      self$port <- address$port
      self$url <- sprintf("http://%s:%d", url_host(host), address$port)
      if (!is.na(address$metrics_port))
        self$metrics_url <- sprintf("http://%s:%d/metrics", url_host(host), address$metrics_port)
      # A model that failed its load leaves the server ready for the others: say why here.
      private$model <- tryCatch(self$metadata(), rcuda_serve_error = function(e) {
        private$fail(paste0("the model did not load (", conditionMessage(e), ")"))
      })
    },
    predict = function(x) {
      private$check_running("predict")
      inputs <- request_inputs(x, private$model$inputs)
      body <- jsonlite::toJSON(list(inputs = inputs), auto_unbox = TRUE, digits = NA,
                               na = "null")
      answer <- private$request("POST", paste0("/v2/models/", self$name, "/infer"), body)
      outputs <- lapply(answer$outputs, output_array)
      if (length(outputs) == 1) return(outputs[[1]])
      names(outputs) <- vapply(answer$outputs, function(o) o$name, "")
      outputs
    },
    metadata = function() {
      private$check_running("metadata")
      private$request("GET", paste0("/v2/models/", self$name))
    },
    running = function() !is.null(private$process) && private$process$is_alive(),
    # SIGTERM lets the server answer what it has queued; a server that has not exited 10 s later
    # is killed.
    stop = function() {
      p <- private$process
      if (!is.null(p)) {
        if (p$is_alive()) {
          p$signal(tools::SIGTERM)
          p$wait(10000)
          if (p$is_alive()) p$kill()
        }
        private$status <- p$get_exit_status()
        private$process <- NULL
        unlink(private$repository, recursive = TRUE)
      }
      invisible(private$status)
    },
    # The server's output so far (its log lines).
    log = function() {
      if (file.exists(private$log_file)) readLines(private$log_file, warn = FALSE) else character()
    },
    print = function(...) {
      state <- if (self$running()) sprintf("running, pid %d", private$process$get_pid())
               else "stopped"
      cat(sprintf("<rcuda_server> model '%s' at %s (%s)\n", self$name, self$url %||% "-", state))
      for (kind in c("inputs", "outputs")) {
        for (t in private$model[[kind]])
          cat(sprintf("  %s %s: %s [%s]\n", substr(kind, 1, nchar(kind) - 1), t$name, t$datatype,
                      paste(unlist(t$shape), collapse = ", ")))
      }
      invisible(self)
    }
  ),
  private = list(
    process = NULL, repository = NULL, log_file = NULL, model = NULL, status = NULL,
    finalize = function() {
      self$stop()
      unlink(private$log_file)
    },
    # Waits for the line "rcuda serve: serving http://HOST:PORT (metrics http://HOST:PORT/metrics
    # | off)", whose ports are those bound (port = 0 leaves them to the system), then for
    # /v2/health/ready to answer 200.
    wait_ready = function(host, wait) {
      deadline <- Sys.time() + wait
      port <- NA
      repeat {
        if (is.na(port)) {
          line <- grep("rcuda serve: serving http://", self$log(), value = TRUE, fixed = TRUE)
          if (length(line)) {
            port <- as.integer(sub(".*serving http://[^ ]*:([0-9]+).*", "\\1", line[1]))
            metrics <- regmatches(line[1], regexec("metrics http://[^ ]*:([0-9]+)/", line[1]))[[1]]
            metrics_port <- if (length(metrics)) as.integer(metrics[2]) else NA
          }
        }
        if (!is.na(port) && health_ready(sprintf("http://%s:%d", url_host(host), port)))
          return(list(port = port, metrics_port = metrics_port))
        if (!private$process$is_alive()) {
          status <- private$process$get_exit_status()
          private$fail(sprintf("the server exited with status %s before it was ready", status))
        }
        if (Sys.time() > deadline)
          private$fail(sprintf("the server was not ready within %g s (wait = %g)", wait, wait))
        Sys.sleep(0.05)
      }
    },
    fail = function(what) {
      log <- self$log()
      self$stop()
      unlink(private$log_file)
      rcuda_abort("rcuda_serve_error", paste0(
        "serve: ", what, "; its output:\n", paste(utils::tail(log, 30), collapse = "\n")))
    },
    check_running = function(what) {
      if (!self$running())
        rcuda_abort("rcuda_serve_error", sprintf(
          "serve: $%s(): the server for '%s' is not running (%s)", what, self$name,
          if (is.null(private$process)) "stopped" else
            paste("exited with status", private$process$get_exit_status())))
    },
    request = function(method, path, body = NULL) {
      handle <- serve_handle()
      if (!is.null(body)) {
        curl::handle_setopt(handle, post = TRUE, copypostfields = as.character(body))
        curl::handle_setheaders(handle, "Content-Type" = "application/json")
      }
      response <- tryCatch(curl::curl_fetch_memory(paste0(self$url, path), handle),
        error = function(e) rcuda_abort("rcuda_serve_error", sprintf(
          "serve: %s %s: no answer from %s (%s)", method, path, self$url, conditionMessage(e))))
      text <- rawToChar(response$content)
      parsed <- tryCatch(jsonlite::fromJSON(text, simplifyVector = TRUE, simplifyDataFrame = FALSE,
                                            simplifyMatrix = FALSE),
                         error = function(e) NULL)
      if (response$status_code != 200) {
        message <- if (is.list(parsed) && !is.null(parsed$error)) parsed$error else text
        serve_http_error(method, path, response$status_code, message)
      }
      if (is.null(parsed))
        rcuda_abort("rcuda_serve_error", sprintf("serve: %s %s: the answer is not JSON: %s",
                                                 method, path, substr(text, 1, 200)))
      parsed
    }
  )
)

#' @export
predict.rcuda_server <- function(object, newdata, ...) object$predict(newdata)

# An HTTP error as an R error carrying the server's message; class rcuda_serve_error, with the
# status in $status.
serve_http_error <- function(method, path, status, message) {
  stop(structure(
    class = c("rcuda_serve_error", "rcuda_error", "error", "condition"),
    list(message = sprintf("serve: %s %s answered %d: %s", method, path, status, message),
         call = NULL, status = status)))
}

# A connection per request, without compression: the server usually runs on this machine,
# where compressing costs more than it saves and a new connection about 0.2 ms; a handle that
# is never reused keeps nothing open between calls from R.
serve_handle <- function(...) {
  curl::new_handle(forbid_reuse = TRUE, accept_encoding = "identity", ...)
}

health_ready <- function(url) {
  handle <- serve_handle(timeout = 2, connecttimeout = 1)
  response <- tryCatch(curl::curl_fetch_memory(paste0(url, "/v2/health/ready"), handle),
                       error = function(e) NULL)
  !is.null(response) && response$status_code == 200
}

url_host <- function(host) {
  if (host %in% c("0.0.0.0", "")) return("127.0.0.1")
  if (host == "::") return("[::1]")
  if (grepl(":", host, fixed = TRUE)) paste0("[", host, "]") else host
}

# The request's inputs: x alone for a one-input model, or a list by name or position; declared:
# the model's inputs from its metadata. Values go row-major, as KServe v2 lays out "data"; R's
# arrays are column-major, hence the aperm in kserve_input().
request_inputs <- function(x, declared) {
  xs <- if (is.list(x) && !is.data.frame(x)) x else list(x)
  input_names <- vapply(declared, function(d) d$name, "")
  if (length(xs) != length(declared))
    value_error("serve: $predict(): the model takes ", length(declared), " input(s) (",
                paste(input_names, collapse = ", "), "), got ", length(xs))
  given <- names(xs)
  lapply(seq_along(xs), function(i) {
    if (is.null(given) || !nzchar(given[i])) return(kserve_input(xs[[i]], declared[[i]]))
    k <- match(given[i], input_names)
    if (is.na(k))
      value_error("serve: $predict(): the model has no input '", given[i], "' (inputs: ",
                  paste(input_names, collapse = ", "), ")")
    kserve_input(xs[[i]], declared[[k]])
  })
}

kserve_input <- function(x, declared) {
  if (is_torch_tensor(x)) x <- as_array(x)
  if (is.data.frame(x)) x <- as.matrix(x)
  if (!is.numeric(x) && !is.logical(x))
    value_error("serve: $predict(): input '", declared$name, "' must be a tensor or a numeric R ",
                "array, got ", describe(x))
  shape <- dim(x)
  rank <- length(unlist(declared$shape))
  if (is.null(shape)) shape <- if (rank == 2) c(1L, length(x)) else length(x)  # one row
  data <- if (length(shape) > 1) as.vector(aperm(array(x, shape))) else as.vector(x)
  datatype <- declared$datatype %||% "FP32"
  data <- switch(datatype,
    FP16 = , FP32 = , FP64 = , BF16 = as.double(data),
    BOOL = as.logical(data),
    as.integer(data))
  list(name = declared$name, shape = I(as.integer(shape)), datatype = datatype, data = I(data))
}

# One output as an R array in R's layout (a vector for one dim, a matrix for two).
output_array <- function(output) {
  shape <- as.integer(unlist(output$shape))
  data <- unlist(output$data)
  if (is.null(data)) data <- numeric()
  if (length(shape) <= 1) return(data)
  aperm(array(data, rev(shape)))
}
