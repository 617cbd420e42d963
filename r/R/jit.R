# jit_trace() and onnx_export(): a function or module traced into a graph that the engine runs
# without R (docs/graph.md), and that graph written as an ONNX file (docs/onnx.md).

#' @export
jit_trace <- function(func, ..., strict = TRUE, respect_mode = TRUE, input_names = NULL) {
  if (!is.function(func))
    stop(sprintf("jit_trace: func must be a function or an nn_module, got %s", describe(func)),
         call. = FALSE)
  inputs <- list(...)
  if (length(inputs) == 0)
    stop("jit_trace: give the example inputs after func (jit_trace(model, x))", call. = FALSE)
  for (i in seq_along(inputs))
    if (!is_torch_tensor(inputs[[i]]))
      stop(sprintf("jit_trace: example input %d must be a tensor, got %s", i,
                   describe(inputs[[i]])), call. = FALSE)
  if (!is.null(input_names) && (!is.character(input_names) || length(input_names) != length(inputs)))
    stop(sprintf("jit_trace: input_names must be a character vector of length %d (one per input)",
                 length(inputs)), call. = FALSE)
  module <- is_nn_module(func)
  params <- if (module) traced_parameters(func) else list()
  scope <- if (module) module_scope_finder(func) else NULL
  tracer <- .Call(rc_trace_begin, inputs, names(params), unname(params), input_names, scope)
  finished <- FALSE
  on.exit(if (!finished) .Call(rc_trace_abort, tracer), add = TRUE)
  out <- do.call(func, inputs)
  single <- is_torch_tensor(out)
  if (!single && !(is.list(out) && length(out) > 0 && all(vapply(out, is_torch_tensor, logical(1)))))
    stop(sprintf("jit_trace: the traced function must return a tensor or a list of tensors, got %s",
                 describe(out)), call. = FALSE)
  graph <- .Call(rc_trace_end, tracer, if (single) out else unname(out))
  finished <- TRUE
  for (w in .Call(rc_graph_info, graph, "warnings")) warning("jit_trace: ", w, call. = FALSE)
  script_function(graph, single, if (single) NULL else names(out), module)
}

# The callable a trace returns: one .Call runs the whole graph.
script_function <- function(graph, single, output_names, module) {
  run <- function(...) {
    out <- .Call(rc_graph_run, graph, list(...))
    if (single) return(out[[1]])
    names(out) <- output_names
    out
  }
  attr(run, "graph") <- graph
  class(run) <- c(if (module) "script_module", "script_function", "rcuda_script_function")
  run
}

#' @export
`$.rcuda_script_function` <- function(x, name) {
  graph <- attr(x, "graph")
  switch(name,
    graph = structure(list(ptr = graph), class = "rcuda_jit_graph"),
    forward = x,
    parameters = .Call(rc_graph_info, graph, "parameters"),
    stop(sprintf("a traced function has $graph, $forward and $parameters, not $%s", name),
         call. = FALSE))
}

#' @export
print.rcuda_script_function <- function(x, ...) {
  ops <- .Call(rc_graph_info, attr(x, "graph"), "ops")
  cat(sprintf("<traced %s: %d ops>\n", if (inherits(x, "script_module")) "module" else "function",
              length(ops)))
  invisible(x)
}

#' @export
print.rcuda_jit_graph <- function(x, ...) {
  cat(.Call(rc_graph_info, x$ptr, "text"))
  invisible(x)
}

#' @export
format.rcuda_jit_graph <- function(x, ...) .Call(rc_graph_info, x$ptr, "text")

# A module's parameters and buffers by their paths ("fc1.weight"), each tensor once.
traced_parameters <- function(module) {
  params <- c(module$parameters, module$buffers)
  params[!duplicated(names(params))]
}

# The modules of `module` by path: the root is "", its children "fc1", "features.0", ...
named_modules <- function(module, prefix = "") {
  found <- list(module)
  names(found) <- prefix
  children <- drop_null(module_registry(module_self(module))$modules)
  for (name in names(children)) {
    path <- if (nzchar(prefix)) paste0(prefix, ".", name) else name
    found <- c(found, named_modules(children[[name]], path))
  }
  found
}

# A function of no arguments that names the innermost module whose forward is running, asked by
# the tracer for each op it records: onnx_export's errors then say where the op was called.
module_scope_finder <- function(module) {
  modules <- named_modules(module)
  envs <- lapply(modules, environment)
  paths <- names(modules)
  # Up the chain of callers, not down the stack: R evaluates an argument (x + y in
  # self$norm(x + y)) inside the callee's frame, but its caller is the frame that wrote it.
  function() {
    # Called from the engine (C), so its own frame has no R caller: start at the frame below it,
    # the R function whose .Call made the op.
    parents <- sys.parents()
    i <- sys.nframe() - 1L
    while (i > 0) {
      e <- environment(sys.function(i))
      for (k in seq_along(envs)) if (identical(e, envs[[k]])) return(paths[[k]])
      i <- parents[[i]]
    }
    ""
  }
}

#' @export
onnx_export <- function(model, args, path, input_names = NULL, output_names = NULL,
                        dynamic_axes = NULL, opset_version = 17, verbose = FALSE, ...) {
  extra <- list(...)
  if (length(extra))
    stop(sprintf("onnx_export: unsupported argument%s %s", if (length(extra) > 1) "s" else "",
                 paste(names(extra), collapse = ", ")), call. = FALSE)
  if (!is.character(path) || length(path) != 1 || is.na(path) || !nzchar(path))
    stop(sprintf("onnx_export: path must be one file name, got %s", describe(path)),
         call. = FALSE)
  if (!is.numeric(opset_version) || length(opset_version) != 1 || opset_version != round(opset_version))
    stop(sprintf("onnx_export: opset_version must be a whole number, got %s",
                 describe(opset_version)), call. = FALSE)
  if (is_torch_tensor(args)) args <- list(args)
  if (!is.list(args) || !length(args) || !all(vapply(args, is_torch_tensor, logical(1))))
    stop(sprintf("onnx_export: args must be a tensor or a list of tensors, got %s",
                 describe(args)), call. = FALSE)
  traced <- if (inherits(model, "rcuda_script_function")) model else {
    # As torch.onnx.export: a module is exported in eval mode and given back in its own.
    if (is_nn_module(model) && isTRUE(model$training)) {
      model$eval()
      on.exit(model$train(), add = TRUE)
    }
    do.call(jit_trace, c(list(model), args, list(input_names = input_names)))
  }
  axes <- onnx_dynamic_axes(dynamic_axes)
  .Call(rc_onnx_export, attr(traced, "graph"), path.expand(path), input_names, output_names,
        axes, as.integer(opset_version))
  if (isTRUE(verbose)) print(traced$graph)
  invisible(path)
}

# dynamic_axes as torch.onnx.export takes it, with R's 1-based dims: list(input = list("1" =
# "batch")) names dim 1 "batch"; list(input = 1) names it "input_dynamic_axes_1". To the engine:
# 0-based dims as names of the symbolic names.
onnx_dynamic_axes <- function(dynamic_axes) {
  if (is.null(dynamic_axes)) return(NULL)
  if (!is.list(dynamic_axes) || is.null(names(dynamic_axes)) || any(!nzchar(names(dynamic_axes))))
    stop("onnx_export: dynamic_axes must be a named list: list(input = list(\"1\" = \"batch\"))",
         call. = FALSE)
  out <- lapply(names(dynamic_axes), function(name) {
    v <- dynamic_axes[[name]]
    if (is.numeric(v) && is.null(names(v))) {
      dims <- as.integer(v)
      labels <- paste0(name, "_dynamic_axes_", seq_along(dims))
    } else {
      dims <- suppressWarnings(as.integer(names(v)))
      labels <- as.character(unlist(v))
    }
    if (!length(dims) || anyNA(dims) || any(dims < 1))
      stop(sprintf(paste0("onnx_export: dynamic_axes$%s must name 1-based dims, as list(\"1\" = ",
                          "\"batch\") or c(1)"), name), call. = FALSE)
    stats::setNames(labels, as.character(dims - 1L))
  })
  names(out) <- names(dynamic_axes)
  out
}
