# CUDA graphs from R (docs/cuda-graphs.md): cuda_graph() objects over the engine's cuda::Graph
# (src/graph.cpp), with_cuda_graph() to capture code, and cuda_graph_step() to turn a training
# step into one replay per batch. The graph keeps the tensors it was given and returned, so R's
# garbage collector never frees memory a replay writes.

# Documented in man/cuda_graph.Rd.
#' @export
cuda_graph <- function(device = NULL, pool = NULL) {
  CudaGraph$new(device, pool)
}

CudaGraph <- R6::R6Class(
  "cuda_graph",
  cloneable = FALSE,
  public = list(
    initialize = function(device, pool) {
      if (!cuda_is_available()) {
        device_error("cuda_graph: CUDA graphs need a GPU (", cuda_info()$unavailable_reason, ")")
      }
      if (!is.null(pool) && !inherits(pool, "cuda_graph")) {
        value_error("cuda_graph: pool must be another cuda_graph() (whose memory to share), got ",
                    class(pool)[1])
      }
      private$device <- device_index(device)
      private$ptr <- .Call(rc_graph_new, private$device,
                           if (is.null(pool)) NULL else pool$.__enclos_env__$private$ptr)
    },
    capture_begin = function() {
      .Call(rc_graph_call, private$ptr, "begin")
      invisible(self)
    },
    capture_end = function() {
      .Call(rc_graph_call, private$ptr, "end")
      invisible(self)
    },
    # Abandons a capture after an error inside it.
    capture_abort = function() {
      .Call(rc_graph_call, private$ptr, "abort")
      invisible(self)
    },
    replay = function() {
      .Call(rc_graph_call, private$ptr, "replay")
      invisible(self)
    },
    reset = function() {
      .Call(rc_graph_call, private$ptr, "reset")
      private$kept <- list()
      invisible(self)
    },
    is_captured = function() .Call(rc_graph_captured, private$ptr),
    # Tensors (or lists of them) the graph reads or writes: kept alive with the graph.
    keep = function(...) {
      private$kept <- c(private$kept, list(...))
      invisible(self)
    },
    print = function(...) {
      cat("<cuda_graph> on cuda:", private$device,
          if (self$is_captured()) ", captured" else ", empty", "\n", sep = "")
      invisible(self)
    }
  ),
  private = list(ptr = NULL, device = NULL, kept = list())
)

# Documented in man/cuda_graph.Rd.
#' @export
with_cuda_graph <- function(graph, code) {
  if (!inherits(graph, "cuda_graph")) {
    value_error("with_cuda_graph: graph must be a cuda_graph(), got ", class(graph)[1])
  }
  graph$capture_begin()
  ok <- FALSE
  on.exit(if (!ok) graph$capture_abort(), add = TRUE)
  value <- force(code)
  graph$capture_end()
  ok <- TRUE
  graph$keep(value)
  invisible(value)
}

# Documented in man/cuda_graph.Rd.
#' @export
cuda_graph_step <- function(step, ..., warmup = 3) {
  if (!is.function(step)) value_error("cuda_graph_step: step must be a function, got ", class(step)[1])
  if (!is.numeric(warmup) || length(warmup) != 1 || is.na(warmup) || warmup < 1) {
    value_error("cuda_graph_step: warmup must be a whole number >= 1 (the optimizer's state and ",
                "cuDNN's plans must exist before the capture), got ", format(warmup))
  }
  examples <- list(...)
  if (length(examples) == 0) value_error("cuda_graph_step: give example batches after step")
  for (i in seq_along(examples)) {
    x <- examples[[i]]
    if (!is_torch_tensor(x) || x$device$type != "cuda") {
      value_error("cuda_graph_step: example ", i, " must be a tensor on a CUDA device, got ",
                  if (is_torch_tensor(x)) device_string(x$device) else class(x)[1])
    }
  }
  # The static inputs: every replay reads them; each call copies its batch in.
  statics <- lapply(examples, function(x) x$clone())
  for (i in seq_len(warmup)) do.call(step, statics)
  graph <- cuda_graph(statics[[1]]$device)
  graph$keep(statics, step)
  output <- with_cuda_graph(graph, do.call(step, statics))
  n <- length(statics)
  replay <- function(...) {
    batch <- list(...)
    if (length(batch) != n) {
      value_error("cuda_graph_step: the captured step takes ", n, " tensors, got ", length(batch))
    }
    for (i in seq_len(n)) statics[[i]]$copy_(batch[[i]])
    graph$replay()
    output
  }
  attr(replay, "graph") <- graph
  replay
}
