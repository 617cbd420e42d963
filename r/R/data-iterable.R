# iterable_dataset(): datasets that give their samples as a stream rather than by index, as
# torch for R's (PyTorch's IterableDataset). A generator made by iterable_dataset() takes the
# arguments of dataset(); its objects need `.iter()`, which returns an iterator: a function
# that returns the next sample on each call and coro's exhausted() sentinel at the end (the
# symbol `.__exhausted__.`, which is what coro::exhausted() returns). `.length()` is optional.
#
# A dataloader() over such a dataset (Note [Batches from a stream] in R/data-loader.R) calls
# `.iter()` once per epoch and collects batch_size samples per batch, in the stream's order.

#' @export
iterable_dataset <- function(name = NULL, inherit = NULL, ..., private = NULL, active = NULL,
                             parent_env = parent.frame()) {
  if (is.null(inherit)) {
    inherit <- iterable_dataset_base
  } else if (!is_iterable_generator(inherit)) {
    value_error("iterable_dataset: inherit must be a generator made by iterable_dataset(), got ",
                class(inherit)[1])
  }
  dataset(name = name, inherit = inherit, ..., private = private, active = active,
          parent_env = parent_env)
}

# What every iterable dataset inherits: the class "iterable_dataset", and a .getitem that says
# why samples cannot be read by index.
iterable_dataset_base <- dataset(
  name = "iterable_dataset",
  .getitem = function(index) {
    value_error("iterable_dataset: '", class(self)[1], "' gives its samples through .iter(), ",
                "not by index")
  }
)

is_iterable_generator <- function(x) {
  spec <- attr(x, "Dataset")
  while (!is.null(spec)) {
    if (identical(spec$name, "iterable_dataset")) return(TRUE)
    spec <- spec$parent
  }
  FALSE
}

is_iterable_dataset <- function(x) inherits(x, "iterable_dataset")

# Registered for length() (NAMESPACE): NA when the dataset has no .length().
length.iterable_dataset <- function(x) {
  if (is.function(x$.length)) x$.length() else NA_integer_
}
