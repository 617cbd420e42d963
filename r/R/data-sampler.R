# Samplers, as torch for R's: objects that give a dataset's indices (1-based) one by one
# (SequentialSampler, RandomSampler) or in batches (BatchSampler), through `.iter()` (a
# function that returns the next value, then coro's exhausted() sentinel) and `length()`.
# dataloader(sampler =) batches the indices a sampler gives; dataloader(batch_sampler =) takes
# each batch as it comes (Note [Samplers in a dataloader] in R/data-loader.R). An object of
# another class with `.iter()` and a `.length()` (or `length()`) serves as well, and so do plain
# R values: a vector of indices, or a list of index vectors for batch_sampler.

new_sampler <- function(class, length, iter, ...) {
  s <- list2env(list(...), parent = emptyenv())
  s$.length <- function() length
  s$.iter <- iter
  class(s) <- c(class, "utils_sampler")
  s
}

#' @export
length.utils_sampler <- function(x) x$.length()

# An iterator function over the elements of a vector or list, then exhausted().
values_iterator <- function(values) {
  i <- 0L
  function() {
    if (i >= length(values)) return(exhausted_value())
    i <<- i + 1L
    values[[i]]
  }
}

sampler_size <- function(data_source, fn) {
  n <- if (is.numeric(data_source) && length(data_source) == 1) data_source else length(data_source)
  if (is.na(n)) value_error(fn, ": data_source has no length (an iterable dataset is sampled by its stream)")
  as.integer(n)
}

#' @export
SequentialSampler <- function(data_source) {
  n <- sampler_size(data_source, "SequentialSampler")
  new_sampler("SequentialSampler", n, function() values_iterator(seq_len(n)), data_source = data_source)
}

# num_samples indices: with replacement, uniform draws; without, a permutation (several, joined,
# for num_samples > n, as PyTorch's). generator: NULL (the default stream) or a torch_generator().
#' @export
RandomSampler <- function(data_source, replacement = FALSE, num_samples = NULL, generator = NULL) {
  fn <- "RandomSampler"
  n <- sampler_size(data_source, fn)
  num <- if (is.null(num_samples)) n else num_samples
  if (!is.numeric(num) || length(num) != 1 || is.na(num) || num < 1 || num != trunc(num)) {
    value_error(fn, ": num_samples must be a whole number of at least 1, got ", deparse(num_samples, nlines = 1)[1])
  }
  extra_flag(replacement, fn, "replacement")
  if (n == 0) value_error(fn, ": data_source is empty")
  draw <- function() {
    if (replacement) return(as.integer(torch_randint(1, n + 1, num, dtype = torch_long())))
    rounds <- ceiling(num / n)
    unlist(lapply(seq_len(rounds), function(r) .Call(rc_randperm, n, NULL)))[seq_len(num)]
  }
  new_sampler("RandomSampler", as.integer(num),
              function() values_iterator(with_generator(generator, fn, draw)),
              data_source = data_source, replacement = replacement, generator = generator)
}

# Batches of batch_size indices from `sampler`; the last shorter one is kept unless drop_last.
#' @export
BatchSampler <- function(sampler, batch_size, drop_last) {
  fn <- "BatchSampler"
  if (!is.numeric(batch_size) || length(batch_size) != 1 || is.na(batch_size) || batch_size < 1 ||
      batch_size != trunc(batch_size)) {
    value_error(fn, ": batch_size must be a whole number of at least 1, got ", deparse(batch_size, nlines = 1)[1])
  }
  extra_flag(drop_last, fn, "drop_last")
  if (!has_iter(sampler)) value_error(fn, ": sampler must have an .iter() method, got ", describe(sampler))
  n <- sampler_length(sampler, fn)
  batches <- if (drop_last) n %/% batch_size else ceiling(n / batch_size)
  iter <- function() {
    source <- sampler$.iter()
    function() {
      batch <- vector("list", batch_size)
      k <- 0L
      while (k < batch_size) {
        value <- source()
        if (is_exhausted_value(value)) break
        k <- k + 1L
        batch[[k]] <- value
      }
      if (k == 0L || (k < batch_size && drop_last)) return(exhausted_value())
      unlist(batch[seq_len(k)])
    }
  }
  new_sampler("BatchSampler", as.integer(batches), iter, sampler = sampler, batch_size = batch_size,
              drop_last = drop_last)
}

# A sampler object (one with an .iter() method), as opposed to plain values.
has_iter <- function(x) (is.environment(x) || is.list(x)) && is.function(x$.iter)

# How many values a sampler gives: its .length(), or length() of another object. Plain R
# values serve as a fixed sampler, as PyTorch takes any iterable: a vector of indices, or (for
# batch_sampler) a list of index vectors.
sampler_length <- function(sampler, fn) {
  if (!has_iter(sampler)) {
    if ((is.numeric(sampler) || is.list(sampler)) && !is.object(sampler)) return(length(sampler))
    value_error(fn, ": sampler must have an .iter() method or be a vector (or list) of indices, got ",
                describe(sampler))
  }
  n <- if (is.function(sampler$.length)) sampler$.length() else length(sampler)
  as.integer(n)
}

# Every value of one pass over a sampler.
sampler_values <- function(sampler) {
  if (!has_iter(sampler)) return(as.list(sampler))
  it <- sampler$.iter()
  out <- list()
  repeat {
    value <- it()
    if (is_exhausted_value(value)) return(out)
    out[[length(out) + 1L]] <- value
  }
}
