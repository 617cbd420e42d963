# load_state_dict(path): the tensors of a file written by PyTorch's torch.save() (its zip format,
# the default since PyTorch 1.6: <name>/data.pkl, a pickle, and <name>/data/<key>, one raw
# storage per key), as a named list, as torch for R's load_state_dict(). torch_load() reads
# safetensors files; this reads the .pt/.pth files that model zoos publish.
#
# Note [A pickle machine for state dicts]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# data.pkl is a program for Python's pickle machine. A state dict uses a small part of it:
# dicts, lists, tuples, strings, numbers, the globals collections.OrderedDict,
# torch._utils._rebuild_tensor_v2 / _rebuild_parameter and the storage classes, and persistent
# ids ('storage', <class>, key, location, numel) that name the raw files. run_pickle() runs that
# part and refuses any other global by name, so no code from the file runs (Python's own
# unpickler would import and call whatever the file names). Dicts and lists are environments
# while the machine runs, because the pickle fills them after memoising them; they become R
# lists at the end. A tensor is rebuilt from its storage, offset, size and stride in R
# (element positions in row-major order), then made in one torch_tensor() call.

#' Load a state dict saved by PyTorch
#'
#' @param path a file written by PyTorch's `torch.save()` (a dict of tensors).
#' @param ... unused.
#' @param legacy_stream not supported (PyTorch's format before 1.6); must be `FALSE`.
#' @return a named list of tensors (nested lists for nested dicts).
#' @export
load_state_dict <- function(path, ..., legacy_stream = FALSE) {
  fn <- "load_state_dict"
  check_file_path(path, fn)
  if (!isFALSE(legacy_stream)) {
    value_error(fn, ": legacy_stream = TRUE (PyTorch's format before 1.6) is not supported; re-save the ",
                "file with torch.save() of PyTorch 1.6 or newer")
  }
  entries <- tryCatch(utils::unzip(path, list = TRUE)$Name, error = function(e) character(), warning = function(w) character())
  pickle <- grep("(^|/)data\\.pkl$", entries, value = TRUE)
  if (length(pickle) != 1) {
    value_error(fn, ": ", path, " is not a PyTorch zip file (torch.save() of PyTorch 1.6 or newer); ",
                "safetensors files are read by torch_load()")
  }
  prefix <- sub("data\\.pkl$", "", pickle)
  dir <- tempfile("load_state_dict-")
  on.exit(unlink(dir, recursive = TRUE), add = TRUE)
  utils::unzip(path, exdir = dir)
  byteorder <- file.path(dir, prefix, "byteorder")
  if (file.exists(byteorder) && !identical(readLines(byteorder, warn = FALSE), "little")) {
    value_error(fn, ": ", path, " holds big-endian storages, which are not supported")
  }
  bytes <- readBin(file.path(dir, pickle), "raw", file.size(file.path(dir, pickle)))
  storage_file <- function(key) file.path(dir, prefix, "data", key)
  as_r_value(run_pickle(bytes, storage_file, fn))
}

# PyTorch's storage classes and the dtypes they hold, with the bytes an element takes.
pickle_storage_types <- list(
  FloatStorage = list("float32", 4), DoubleStorage = list("float64", 8), HalfStorage = list("float16", 2),
  BFloat16Storage = list("bfloat16", 2), LongStorage = list("int64", 8), IntStorage = list("int32", 4),
  ShortStorage = list("int16", 2), CharStorage = list("int8", 1), ByteStorage = list("uint8", 1),
  BoolStorage = list("bool", 1)
)

# Note [A pickle machine for state dicts].
run_pickle <- function(bytes, storage_file, fn) {
  pos <- 1L
  stack <- list()
  marks <- integer()
  memo <- list()
  take <- function(n) {
    if (pos + n - 1L > length(bytes)) value_error(fn, ": the pickle ends early")
    out <- bytes[pos:(pos + n - 1L)]
    pos <<- pos + n
    out
  }
  uint <- function(n) sum(as.integer(take(n)) * 256^(seq_len(n) - 1L))
  int32 <- function() readBin(take(4), "integer", size = 4, endian = "little")
  text <- function(n) rawToChar(take(n))
  line <- function() {
    end <- pos
    while (bytes[end] != as.raw(10)) end <- end + 1L
    out <- rawToChar(bytes[pos:(end - 1L)])
    pos <<- end + 1L
    out
  }
  push <- function(x) stack[[length(stack) + 1L]] <<- list(x)
  pop <- function() {
    x <- stack[[length(stack)]][[1]]
    stack[[length(stack)]] <<- NULL
    x
  }
  top <- function() stack[[length(stack)]][[1]]
  pop_mark <- function() {
    from <- marks[length(marks)]
    marks <<- marks[-length(marks)]
    items <- lapply(stack[seq_len(length(stack) - from) + from], `[[`, 1)
    stack <<- stack[seq_len(from)]
    items
  }
  container <- function(kind) {
    e <- new.env(parent = emptyenv())
    e$kind <- kind
    e$keys <- list()
    e$values <- list()
    e
  }
  tuple <- function(items) structure(items, class = "pickle_tuple")
  set_items <- function(d, items) {
    for (k in seq(1, length(items), by = 2)) {
      d$keys[[length(d$keys) + 1L]] <- items[[k]]
      d$values[[length(d$values) + 1L]] <- items[[k + 1L]]
    }
  }
  repeat {
    op <- as.integer(take(1))
    switch(as.character(op),
      "128" = take(1),                                         # PROTO
      "149" = take(8),                                         # FRAME
      "46" = return(pop()),                                    # STOP
      "40" = marks <- c(marks, length(stack)),                 # MARK
      "125" = push(container("dict")),                         # EMPTY_DICT
      "93" = push(container("list")),                          # EMPTY_LIST
      "41" = push(tuple(list())),                              # EMPTY_TUPLE
      "78" = push(NULL),                                       # NONE
      "136" = push(TRUE), "137" = push(FALSE),                 # NEWTRUE, NEWFALSE
      "75" = push(uint(1)), "77" = push(uint(2)),              # BININT1, BININT2
      "74" = push(int32()),                                    # BININT
      "138" = {                                                # LONG1
        n <- uint(1)
        v <- if (n == 0) 0 else sum(as.integer(take(n)) * 256^(seq_len(n) - 1L))
        if (n > 0 && v >= 2^(8 * n - 1)) v <- v - 2^(8 * n)
        push(v)
      },
      "71" = push(readBin(take(8), "double", size = 8, endian = "big")),   # BINFLOAT
      "88" = push(text(uint(4))), "140" = push(text(uint(1))),             # BINUNICODE, SHORT_BINUNICODE
      "84" = push(text(uint(4))), "85" = push(text(uint(1))),              # BINSTRING, SHORT_BINSTRING
      "66" = push(take(uint(4))), "67" = push(take(uint(1))),              # BINBYTES, SHORT_BINBYTES
      "113" = memo[[as.character(uint(1))]] <- list(top()),                # BINPUT
      "114" = memo[[as.character(uint(4))]] <- list(top()),                # LONG_BINPUT
      "148" = memo[[as.character(length(memo))]] <- list(top()),           # MEMOIZE
      "104" = push(memo[[as.character(uint(1))]][[1]]),                    # BINGET
      "106" = push(memo[[as.character(uint(4))]][[1]]),                    # LONG_BINGET
      "99" = {                                                             # GLOBAL
        module <- line()
        push(pickle_global(module, line(), fn))
      },
      "147" = {                                                            # STACK_GLOBAL
        name <- pop()
        push(pickle_global(pop(), name, fn))
      },
      "133" = push(tuple(list(pop()))),                                    # TUPLE1
      "134" = { b <- pop(); a <- pop(); push(tuple(list(a, b))) },         # TUPLE2
      "135" = { c <- pop(); b <- pop(); a <- pop(); push(tuple(list(a, b, c))) },  # TUPLE3
      "116" = push(tuple(pop_mark())),                                     # TUPLE
      "81" = push(pickle_storage(pop(), storage_file, fn)),                # BINPERSID
      "82" = { args <- pop(); push(pickle_call(pop(), args, fn)) },        # REDUCE
      "129" = { args <- pop(); push(pickle_call(pop(), args, fn)) },       # NEWOBJ
      "98" = pop(),                                                        # BUILD: attributes (OrderedDict's _metadata) are dropped
      "115" = { v <- pop(); k <- pop(); set_items(top(), list(k, v)) },    # SETITEM
      "117" = { items <- pop_mark(); set_items(top(), items) },            # SETITEMS
      "97" = { v <- pop(); d <- top(); d$values[[length(d$values) + 1L]] <- v },          # APPEND
      "101" = { items <- pop_mark(); d <- top(); d$values <- c(d$values, items) },        # APPENDS
      value_error(fn, ": the pickle uses opcode 0x", format(as.hexmode(op)), ", which a state dict does not need")
    )
  }
}

pickle_global <- function(module, name, fn) {
  known <- (module == "collections" && name == "OrderedDict") ||
    (module == "torch._utils" && name %in% c("_rebuild_tensor_v2", "_rebuild_tensor", "_rebuild_parameter")) ||
    (module == "torch" && name %in% names(pickle_storage_types))
  if (!known) {
    value_error(fn, ": the file holds a Python object of ", module, ".", name,
                ", which is not part of a state dict of tensors")
  }
  structure(list(module = module, name = name), class = "pickle_global")
}

# A persistent id ('storage', <storage class>, key, location, numel): the storage's elements.
pickle_storage <- function(id, storage_file, fn) {
  if (!inherits(id, "pickle_tuple") || length(id) < 5 || !identical(id[[1]], "storage") ||
      !inherits(id[[2]], "pickle_global")) {
    value_error(fn, ": the file has a persistent id that is not a storage")
  }
  type <- pickle_storage_types[[id[[2]]$name]]
  n <- id[[5]]
  structure(list(dtype = type[[1]], values = read_storage(storage_file(id[[3]]), type[[1]], type[[2]], n)),
            class = "pickle_storage")
}

# The n elements of a raw little-endian storage file as R values (doubles, integers or logicals).
read_storage <- function(path, dtype, size, n) {
  raw <- readBin(path, "raw", n * size)
  switch(dtype,
    float32 = readBin(raw, "double", n, size = 4, endian = "little"),
    float64 = readBin(raw, "double", n, size = 8, endian = "little"),
    float16 = half_to_double(readBin(raw, "integer", n, size = 2, signed = FALSE, endian = "little")),
    bfloat16 = {
      widened <- rbind(matrix(as.raw(0), 2, n), matrix(raw, 2, n))  # the high half of a float32
      readBin(as.vector(widened), "double", n, size = 4, endian = "little")
    },
    int64 = {
      words <- matrix(readBin(raw, "integer", 2 * n, size = 4, endian = "little"), 2)
      low <- ifelse(words[1, ] < 0, words[1, ] + 2^32, words[1, ])
      words[2, ] * 2^32 + low
    },
    int32 = readBin(raw, "integer", n, size = 4, endian = "little"),
    int16 = readBin(raw, "integer", n, size = 2, endian = "little"),
    int8 = readBin(raw, "integer", n, size = 1, signed = TRUE),
    uint8 = as.integer(raw),
    bool = raw != as.raw(0)
  )
}

# IEEE half-precision bit patterns as doubles.
half_to_double <- function(bits) {
  sign <- ifelse(bits >= 32768, -1, 1)
  exponent <- (bits %/% 1024) %% 32
  fraction <- bits %% 1024
  ifelse(exponent == 0, sign * fraction * 2^-24,
         ifelse(exponent == 31, ifelse(fraction == 0, sign * Inf, NaN),
                sign * (1 + fraction / 1024) * 2^(exponent - 15)))
}

pickle_call <- function(callable, args, fn) {
  if (!inherits(callable, "pickle_global")) value_error(fn, ": the pickle calls something that is not a known global")
  switch(callable$name,
    OrderedDict = {
      e <- new.env(parent = emptyenv())
      e$kind <- "dict"
      e$keys <- list()
      e$values <- list()
      e
    },
    `_rebuild_tensor_v2` = , `_rebuild_tensor` = rebuild_tensor(args[[1]], args[[2]], args[[3]], args[[4]],
                                                                if (length(args) >= 5) args[[5]] else FALSE),
    `_rebuild_parameter` = with_requires_grad(args[[1]], isTRUE(args[[2]])),
    value_error(fn, ": the pickle calls ", callable$module, ".", callable$name, ", which a state dict does not need")
  )
}

# The tensor of `size` whose element (i1, ..., in) (from 0) is the storage's element
# offset + sum(i * stride), gathered in row-major order.
rebuild_tensor <- function(storage, offset, size, stride, requires_grad) {
  size <- as.numeric(unlist(size))
  stride <- as.numeric(unlist(stride))
  positions <- offset
  for (k in seq_along(size)) {
    positions <- rep(positions, each = size[[k]]) + rep(seq_len(size[[k]]) - 1, times = length(positions)) * stride[[k]]
  }
  values <- storage$values[positions + 1]
  t <- torch_tensor(values, dtype = storage$dtype)
  t <- if (length(size)) t$reshape(size) else t$reshape(integer())
  with_requires_grad(t, isTRUE(requires_grad) && storage$dtype %in% c("float32", "float64", "float16", "bfloat16"))
}

# The machine's values as R values: dicts as named lists, lists and tuples as lists.
as_r_value <- function(x) {
  if (is.environment(x)) {
    values <- lapply(x$values, as_r_value)
    if (x$kind == "dict") names(values) <- vapply(x$keys, function(k) as.character(k)[1], "")
    return(values)
  }
  if (inherits(x, "pickle_tuple")) return(lapply(unclass(x), as_r_value))
  x
}
