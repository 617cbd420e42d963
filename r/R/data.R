# Datasets as torch for R has them: dataset() makes a generator, a function whose calls make
# instances (`ds <- my_dataset(...)`), with `ds[i]`, `ds[[i]]`, `length(ds)` and the methods
# given as `self$...`. torch for R builds these on R6; rcuda uses plain environments with the
# same semantics, so it needs no R6.
#
# Note [Dataset objects]
# ~~~~~~~~~~~~~~~~~~~~~~
# An instance is an environment `self` of class c(<name>, <inherited names>, "dataset"). Each
# method is a copy of the function given to dataset() whose enclosing environment holds `self`,
# `private` (an environment for the `private = list(...)` members) and, under inheritance,
# `super` (the parent's methods bound to the same instance); that environment's parent is
# `parent_env`, where dataset() was called, so methods see the variables there. Other members
# are copied into `self`; `active = list(...)` members become active bindings. Levels are bound
# base first, so a child's member replaces its parent's. initialize(...) runs last, with the
# generator's arguments.

#' @export
dataset <- function(name = NULL, inherit = NULL, ..., private = NULL, active = NULL,
                    parent_env = parent.frame()) {
  if (!is.null(inherit) && !inherits(inherit, "dataset_generator")) {
    value_error("dataset: inherit must be a dataset generator made by dataset(), got ",
                class(inherit)[1])
  }
  public <- list(...)
  if (length(public) > 0 && (is.null(names(public)) || any(names(public) == ""))) {
    value_error("dataset: every member given in ... must be named")
  }
  spec <- list(name = name, parent = if (!is.null(inherit)) attr(inherit, "Dataset"),
               public = public, private = private, active = active, parent_env = parent_env)
  structure(dataset_generator(spec), class = "dataset_generator", Dataset = spec)
}

# A function with initialize's arguments (as torch for R's generators have, so that help and
# completion show them) whose body passes each on by name: my_dataset(a, b = 2) calls
# .__new_dataset__(a = a, b = b), and missing arguments stay missing.
dataset_generator <- function(spec) {
  init <- NULL
  s <- spec
  while (!is.null(s) && is.null(init)) {
    init <- s$public$initialize
    s <- s$parent
  }
  args <- if (is.function(init)) formals(init) else as.pairlist(alist(... = ))
  passed <- lapply(names(args), as.name)
  names(passed) <- ifelse(names(args) == "...", "", names(args))
  generator <- function() NULL
  formals(generator) <- args
  body(generator) <- as.call(c(list(as.name(".__new_dataset__")), passed))
  env <- new.env(parent = spec$parent_env)
  env$.__new_dataset__ <- function(...) new_dataset(spec, ...)
  environment(generator) <- env
  generator
}

new_dataset <- function(spec, ...) {
  self <- new.env(parent = emptyenv())
  private <- new.env(parent = emptyenv())
  levels <- list()
  s <- spec
  while (!is.null(s)) {
    levels <- c(list(s), levels)
    s <- s$parent
  }
  super <- NULL
  for (level in levels) {
    enclos <- new.env(parent = level$parent_env)
    enclos$self <- self
    enclos$private <- private
    if (!is.null(super)) enclos$super <- super
    # What `super` is for the next level: every method visible at this one.
    visible <- new.env(parent = emptyenv())
    if (!is.null(super)) for (nm in ls(super, all.names = TRUE)) visible[[nm]] <- super[[nm]]
    bind <- function(value) {
      if (is.function(value)) environment(value) <- enclos
      value
    }
    for (nm in names(level$public)) {
      value <- bind(level$public[[nm]])
      if (exists(nm, envir = self, inherits = FALSE) && bindingIsActive(nm, self)) {
        rm(list = nm, envir = self)
      }
      assign(nm, value, envir = self)
      if (is.function(value)) visible[[nm]] <- value
    }
    for (nm in names(level$private)) assign(nm, bind(level$private[[nm]]), envir = private)
    for (nm in names(level$active)) {
      if (exists(nm, envir = self, inherits = FALSE)) rm(list = nm, envir = self)
      makeActiveBinding(nm, bind(level$active[[nm]]), self)
    }
    super <- visible
  }
  names <- unlist(lapply(rev(levels), function(l) l$name))
  class(self) <- unique(c(names, "dataset"))
  if (is.function(self$initialize)) self$initialize(...)
  self
}

is_dataset <- function(x) inherits(x, "dataset")

#' @export
print.dataset_generator <- function(x, ...) {
  cat("<dataset_generator>", attr(x, "Dataset")$name, "\n")
  invisible(x)
}

#' @export
print.dataset <- function(x, ...) {
  n <- if (is.function(x$.length)) tryCatch(x$.length(), error = function(e) NA) else NA
  cat("<dataset: ", class(x)[1], ">", if (!is.na(n)) paste0(" ", n, " samples"), "\n", sep = "")
  invisible(x)
}

# ds[i]: a batch through .getbatch when the dataset has one, else the .getitem of i.
#' @export
`[.dataset` <- function(x, y) {
  y <- as.integer(y)
  if (is.function(x$.getbatch)) x$.getbatch(y) else x$.getitem(y)
}

#' @export
`[[.dataset` <- function(x, y) {
  if (is.character(y)) return(get0(y, envir = x, inherits = FALSE))
  y <- as.integer(y)
  if (length(y) != 1) value_error("dataset: [[ takes one index, got ", length(y))
  x$.getitem(y)
}

#' @export
length.dataset <- function(x) {
  if (!is.function(x$.length)) value_error("length: dataset '", class(x)[1], "' has no .length() method")
  x$.length()
}

#' @export
tensor_dataset <- dataset(
  name = "tensor_dataset",
  initialize = function(...) {
    tensors <- list(...)
    if (length(tensors) == 0) value_error("tensor_dataset: give at least one tensor")
    if (!all(vapply(tensors, is_torch_tensor, logical(1)))) {
      value_error("tensor_dataset: every argument must be a tensor")
    }
    sizes <- vapply(tensors, function(t) if (t$dim() == 0) NA_real_ else t$shape[1], numeric(1))
    if (anyNA(sizes) || length(unique(sizes)) != 1) {
      shape_error("tensor_dataset: all tensors must have the same size in the first dimension, ",
                  "got ", paste(sizes, collapse = ", "))
    }
    self$tensors <- tensors
  },
  # One sample: each tensor indexed along its first dim (one index_select per tensor, in C++).
  .getitem = function(index, ..., drop = TRUE) {
    if (is.list(index)) index <- unlist(index)
    .Call(rc_index_batch, self$tensors, index, drop, "tensor_dataset")
  },
  .getbatch = function(index) self$.getitem(index, drop = FALSE),
  .length = function() self$tensors[[1]]$shape[1]
)

#' @export
dataset_subset <- dataset(
  name = "dataset_subset",
  initialize = function(dataset, indices) {
    if (!is_dataset(dataset)) value_error("dataset_subset: dataset must be a dataset")
    indices <- as.integer(indices)
    n <- length(dataset)
    if (anyNA(indices) || any(indices < 1 | indices > n)) {
      index_error("dataset_subset: indices must lie in 1..", n, " (the dataset's length)")
    }
    self$dataset <- dataset
    self$indices <- indices
    if (is.function(dataset$.getbatch)) self$.getbatch <- self$.getitem
    classes <- setdiff(class(dataset), "dataset")
    class(self) <- unique(c(paste0(classes, "_subset"), class(self)))
  },
  .getitem = function(idx) self$dataset[self$indices[idx]],
  .length = function() length(self$indices)
)
