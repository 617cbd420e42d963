# torch_save() / torch_load() in safetensors files, which PyTorch and the safetensors libraries
# read and write (Note [R objects in safetensors] in src/save.cpp says how an R object is laid
# out). rcuda differs from torch for R, whose files are safetensors with a serialized R object
# inside: rcuda stores the object's shape as JSON, so its files hold only tensors and text,
# except for whole modules (Note [Whole modules in torch_save]).
#
# Note [Whole modules in torch_save]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch_save(model, path) is how torch for R scripts keep a trained model, and a module is
# more than its state dict: its class, its methods (R closures, possibly the script's own),
# its training flag and fields. So is a dataset (torch for R saves those too), and any other
# environment or closure. Such an object is written with R's serialize(), whose refhook
# is called for each reference object it meets: a tensor's handle (an external pointer, which
# serialize() would write as a dead address) is replaced there by a name ("t1", "t2", ... and
# the handle's nn_parameter / nn_buffer marker), and the tensors go beside it in the file under
# those names. The file holds two entries: "__rcuda_object__" (the serialized bytes, a uint8
# tensor) and "__rcuda_tensors__" (the tensors, with their requires_grad). torch_load()
# unserializes with a refhook that gives back one handle per name, so a tensor shared by two
# fields is shared again. Another external pointer in the module (not a tensor) is an error.
# Loading runs no code from the file beyond what unserialize() restores (closures are only
# defined, as readRDS() does); as with readRDS(), load only files you trust.

#' @export
torch_save <- function(obj, path, ...) {
  check_file_path(path, "torch_save")
  # Note [Whole modules in torch_save]: modules, and datasets and other environments or
  # closures (their fields and code), go through serialize().
  if (inherits(obj, c("nn_module", "dataset")) || is.environment(obj) || is.function(obj)) {
    obj <- serialized_object(obj)
  }
  .Call(rc_torch_save, obj, path.expand(path))
  invisible(obj)
}

#' @export
torch_load <- function(path, device = "cpu") {
  if (is.raw(path)) {
    # torch_serialize()'s bytes: the same file format, through a temporary file.
    file <- tempfile(fileext = ".safetensors")
    on.exit(unlink(file))
    writeBin(path, file)
    return(torch_load(file, device = device))
  }
  check_file_path(path, "torch_load")
  device <- if (is.null(device)) NULL else device_string(device)
  loaded <- .Call(rc_torch_load, path.expand(path), device)
  switch(loaded$written_by,
    rcuda = restore_serialized(loaded$object, path),
    "torch for R" = torch_r_object(loaded, path),
    loaded$tensors
  )
}

# The bytes of torch_save()'s file as a raw vector, which torch_load() reads back, as torch for
# R's torch_serialize().
#' @export
torch_serialize <- function(obj, ...) {
  file <- tempfile(fileext = ".safetensors")
  on.exit(unlink(file))
  torch_save(obj, path = file, ...)  # (a `path` in ... is an error, as torch for R's)
  readBin(file, "raw", n = file.size(file))
}

serialized_entries <- c("__rcuda_object__", "__rcuda_tensors__")

# Note [Whole modules in torch_save]: the object as list(bytes, tensors).
# `caller` names the function for the error (torch_save). For a dataloader's workers (Note
# [Loading in worker processes] in data-workers.R) another external pointer is written as R
# writes it, a dead address, as callr would: a dataset's closures often see the caller's
# environment, which can hold anything (a connection, another loader's workers).
serialized_object <- function(obj, caller = "torch_save") {
  keys <- new.env(parent = emptyenv())  # tensor identity and marker -> name
  tensors <- list()
  hook <- function(x) {
    if (is.environment(x)) return(NULL)  # written as R writes environments
    if (!is_torch_tensor(x)) {
      if (caller == "dataloader") return(NULL)
      value_error("torch_save: the object holds an R ", typeof(x), " of class ", class(x)[1],
                  " that is not a tensor and cannot be saved")
    }
    marker <- handle_marker(x)
    identity <- paste(c(.Call(rc_tensor_ids, list(x)), marker), collapse = "|")
    name <- keys[[identity]]
    if (is.null(name)) {
      name <- paste0("t", length(tensors) + 1L)
      keys[[identity]] <- name
      tensors[[name]] <<- x
    }
    c(name, marker)
  }
  bytes <- serialize(obj, NULL, refhook = hook)
  out <- list(.Call(rc_uint8_from_raw, bytes, length(bytes)), tensors)  # (one copy, no integers)
  names(out) <- serialized_entries
  out
}

# The object torch_load() read: a module written by serialized_object(), or the object itself.
restore_serialized <- function(object, path) {
  if (!is.list(object) || !identical(names(object), serialized_entries)) return(object)
  tensors <- object[[2]]
  made <- new.env(parent = emptyenv())
  hook <- function(name) {
    identity <- paste(name, collapse = "|")
    if (!is.null(made[[identity]])) return(made[[identity]])
    t <- tensors[[name[1]]]
    if (!is_torch_tensor(t)) {
      value_error("torch_load: ", path, " names a tensor '", name[1], "' that it does not hold")
    }
    if (length(name) == 3) t <- .Call(rc_marked_handle, t, name[2], as.logical(name[3]))
    assign(identity, t, envir = made)
    t
  }
  bytes <- object[[1]]
  if (!is_torch_tensor(bytes) || dtype_of(bytes) != "uint8") {
    value_error("torch_load: ", path, " has a malformed '", serialized_entries[1], "' entry")
  }
  unserialize(as.raw(as_array(bytes$cpu())), refhook = hook)
}

check_file_path <- function(path, caller) {
  if (inherits(path, "connection") || is.raw(path)) {
    value_error(caller, ": path must be a file name (rcuda reads and writes files, not ",
                "connections or raw vectors; torch_serialize() gives the bytes, which torch_load() reads)")
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
