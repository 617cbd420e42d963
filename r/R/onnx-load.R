# onnx_load(): an ONNX file as an nn_module that runs on rcuda's engine (src/onnx_load.cpp,
# docs/onnx.md). The engine binds each ONNX node to its own ops once, at load; a call runs the
# whole model with one .Call. The module's parameters are the tensors the engine reads, so
# optimizers fine-tune the loaded model as any other.

#' @export
onnx_load <- function(path, device = NULL, requires_grad = FALSE, cuda_graph = FALSE) {
  if (!is.character(path) || length(path) != 1 || is.na(path)) {
    value_error("onnx_load: path must be one file name, got ", describe(path))
  }
  if (!file.exists(path)) value_error("onnx_load: ", path, ": no such file")
  if (!is.logical(requires_grad) || length(requires_grad) != 1 || is.na(requires_grad)) {
    value_error("onnx_load: requires_grad must be TRUE or FALSE, got ", deparse(requires_grad)[1])
  }
  if (!is.logical(cuda_graph) || length(cuda_graph) != 1 || is.na(cuda_graph)) {
    value_error("onnx_load: cuda_graph must be TRUE or FALSE, got ", deparse(cuda_graph)[1])
  }
  ptr <- .Call(rc_onnx_load, normalizePath(path), device_string(device), cuda_graph)
  onnx_module(ptr, requires_grad)
}

onnx_module <- nn_module(
  "onnx_module",
  initialize = function(ptr, requires_grad) {
    self$.onnx <- ptr
    # What the file declares: lists of (name, dtype, dims with NA where symbolic, dim_names,
    # shape), the opset of ONNX's default domain, the op types with their counts.
    self$inputs <- .Call(rc_onnx_info, ptr, "inputs")
    self$outputs <- .Call(rc_onnx_info, ptr, "outputs")
    self$opset <- .Call(rc_onnx_info, ptr, "opset")
    self$ops <- .Call(rc_onnx_info, ptr, "ops")
    self$producer <- .Call(rc_onnx_info, ptr, "producer")
    self$metadata <- .Call(rc_onnx_info, ptr, "metadata")
    # Index inputs that the exported R module took 1-based (onnx_export writes them 0-based and
    # names them here): the loaded model takes them 1-based too.
    one_based <- self$metadata["rcuda.one_based_inputs"]
    self$.one_based <- if (is.na(one_based)) character() else strsplit(one_based, ",")[[1]]
    params <- .Call(rc_onnx_info, ptr, "parameters")
    for (name in names(params)) {
      self$register_parameter(name, params[[name]])
      .Call(rc_set_requires_grad, params[[name]], requires_grad)
    }
  },
  forward = function(...) {
    args <- list(...)
    inputs <- self$inputs
    if (length(args) != length(inputs)) {
      value_error("onnx model: takes ", length(inputs), " input(s) (",
                  paste(vapply(inputs, function(i) paste(i$name, i$shape), ""), collapse = ", "),
                  "), got ", length(args))
    }
    if (!is.null(names(args)) && all(nzchar(names(args)))) {
      wanted <- vapply(inputs, function(i) i$name, "")
      if (!setequal(names(args), wanted)) {
        value_error("onnx model: inputs are named ", paste(wanted, collapse = ", "), ", got ",
                    paste(names(args), collapse = ", "))
      }
      args <- args[wanted]
    }
    # R arrays and vectors become tensors of the dtype the file declares.
    for (i in seq_along(args)) {
      if (!is_torch_tensor(args[[i]])) {
        args[[i]] <- tryCatch(
          torch_tensor(args[[i]], dtype = inputs[[i]]$dtype),
          error = function(e) {
            value_error("onnx model: input '", inputs[[i]]$name, "' (", inputs[[i]]$dtype, " ",
                        inputs[[i]]$shape, ") must be a tensor or an R array: ",
                        conditionMessage(e))
          })
      }
    }
    for (i in seq_along(args)) {
      if (inputs[[i]]$name %in% self$.one_based) args[[i]] <- args[[i]] - 1L
    }
    out <- .Call(rc_onnx_run, self$.onnx, unname(args))
    if (length(out) == 1) return(out[[1]])
    names(out) <- vapply(self$outputs, function(o) o$name, "")
    out
  },
  # Moves every initializer, constants and shapes included (the engine's own to()); the
  # parameters are moved in place, so optimizers made before keep working.
  to = function(dtype = NULL, device = NULL, ...) {
    if (!is.null(dtype) && is.null(device) && !is_dtype(dtype) && !is_dtype_string(dtype)) {
      device <- dtype  # model$to("cuda")
      dtype <- NULL
    }
    if (!is.null(dtype)) {
      value_error("onnx model: $to(dtype =) is not supported: the model computes in the dtypes ",
                  "its file declares (export it in float16 for a float16 model)")
    }
    if (!is.null(device)) .Call(rc_onnx_to, self$.onnx, device_string(device))
    invisible(module_object(self))
  },
  # The input signatures captured as CUDA graphs, each with "" or why it runs eagerly.
  captures = function() .Call(rc_onnx_info, self$.onnx, "captures"),
  initializers = function() .Call(rc_onnx_info, self$.onnx, "initializers"),
  cuda_graph = function(enabled = TRUE) {
    .Call(rc_onnx_set_cuda_graphs, self$.onnx, isTRUE(enabled))
    invisible(module_object(self))
  },
  print = function(...) {
    cat(.Call(rc_onnx_info, self$.onnx, "summary"))
    invisible(module_object(self))
  }
)

