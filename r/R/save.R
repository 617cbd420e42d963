# torch_save() / torch_load() in safetensors files, which PyTorch and the safetensors libraries
# read and write (Note [R objects in safetensors] in src/save.cpp says how an R object is laid
# out). rcuda differs from torch for R, whose files are safetensors with a serialized R object
# inside: rcuda stores the object's shape as JSON, so its files hold only tensors and text.

#' @export
torch_save <- function(obj, path, ...) {
  if (inherits(obj, "nn_module")) {
    value_error("torch_save: saving a whole nn_module is not supported; save its parameters ",
                "with torch_save(model$state_dict(), path) and restore them with ",
                "model$load_state_dict(torch_load(path))")
  }
  check_file_path(path, "torch_save")
  .Call(rc_torch_save, obj, path.expand(path))
  invisible(obj)
}

#' @export
torch_load <- function(path, device = "cpu") {
  check_file_path(path, "torch_load")
  device <- if (is.null(device)) NULL else device_string(device)
  loaded <- .Call(rc_torch_load, path.expand(path), device)
  switch(loaded$written_by,
    rcuda = loaded$object,
    "torch for R" = torch_r_object(loaded, path),
    loaded$tensors
  )
}

check_file_path <- function(path, caller) {
  if (inherits(path, "connection") || is.raw(path)) {
    value_error(caller, ": path must be a file name (rcuda reads and writes files, not ",
                "connections or raw vectors)")
  }
  if (!is.character(path) || length(path) != 1 || is.na(path)) {
    value_error(caller, ": path must be a single file name")
  }
}

# A file from torch for R's torch_save (serialization version 3): its tensors, and for lists an
# R object (tensor "__robj__", from serialize()) whose tensors are stand-ins of class
# torch_tensor_address naming the tensor that takes their place.
torch_r_object <- function(loaded, path) {
  tensors <- loaded$tensors
  type <- loaded$torch_r_type
  if (identical(type, "tensor")) return(tensors[[1]])
  robj <- tensors[["__robj__"]]
  tensors[["__robj__"]] <- NULL
  if (identical(type, "list") && !is.null(robj)) {
    object <- unserialize(as.raw(as_array(robj)))
    return(replace_tensor_addresses(object, tensors))
  }
  warning("torch_load: ", path, " holds a torch for R ", type, " (an R6 object rcuda cannot ",
          "rebuild); returning its tensors, a state dict for model$load_state_dict()",
          call. = FALSE)
  tensors
}

replace_tensor_addresses <- function(x, tensors) {
  if (inherits(x, "torch_tensor_address")) return(tensors[[unclass(x)]])
  if (is.list(x) && !is.object(x)) {
    out <- lapply(x, replace_tensor_addresses, tensors = tensors)
    attributes(out) <- attributes(x)
    return(out)
  }
  x
}
