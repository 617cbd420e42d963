# Note [Generator objects]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# torch_generator(), as torch for R's: a random stream of its own, for the functions that take
# `generator =` (torch_randint, torch_normal, torch_bernoulli, torch_poisson,
# torch_multinomial, and dataloader(), whose shuffling starts from its seed). It is a Philox
# seed and offset kept in R (the engine's generator state: Note [Philox stream] in
# rcuda/core/philox.h). A draw with it swaps the engine's state for the generator's, draws,
# keeps the advanced state in the generator and puts the engine's back, so the default stream
# (torch_manual_seed()) is untouched. A generator made with the same seed repeats its draws, on
# every device. $current_seed() is a bit64 integer64, as torch for R's, when bit64 is installed
# (a double otherwise); $set_current_seed() takes either, and seeds stay below 2^53, where
# doubles are exact.

#' @export
torch_generator <- function() {
  g <- new.env(parent = emptyenv())
  g$seed <- generator_default_seed
  g$state <- NULL  # the engine's 16 bytes once the generator has drawn; NULL: fresh from seed
  g$current_seed <- function() {
    if (requireNamespace("bit64", quietly = TRUE)) bit64::as.integer64(g$seed) else g$seed
  }
  g$set_current_seed <- function(seed) {
    # (an integer64's bytes read as a double are garbage: bit64's as.double() reads the value)
    if (inherits(seed, "integer64")) seed <- if (length(seed) == 1 && !is.na(seed)) as.double(seed) else NA
    if (!is.numeric(seed) || length(seed) != 1 || is.na(seed) || seed < 0 || seed != trunc(seed) || seed >= 2^53) {
      value_error("torch_generator: seed must be a whole number in [0, 2^53), got ", deparse(seed, nlines = 1)[1])
    }
    g$seed <- as.numeric(seed)
    g$state <- NULL
    invisible(g)
  }
  class(g) <- "torch_generator"
  g
}

# The engine's default seed (rcuda::Generator's), which a new torch_generator() starts from.
generator_default_seed <- 67280421310721

#' @export
print.torch_generator <- function(x, ...) {
  cat("torch_generator()\n")
  invisible(x)
}

is_torch_generator <- function(x) inherits(x, "torch_generator")

# Runs draw() from the generator's stream (Note [Generator objects]); NULL draws from the default.
with_generator <- function(generator, fn, draw) {
  if (is.null(generator)) return(draw())
  if (!is_torch_generator(generator)) {
    value_error(fn, ": generator must be NULL or a torch_generator(), got ", describe(generator))
  }
  saved <- .Call(rc_get_rng_state)
  on.exit(.Call(rc_set_rng_state, saved))
  if (is.null(generator$state)) torch_manual_seed(generator$seed) else .Call(rc_set_rng_state, generator$state)
  out <- draw()
  generator$state <- .Call(rc_get_rng_state)
  out
}

# A dataloader's generator as the seed its shuffling starts from: a number, or a
# torch_generator()'s current seed.
generator_seed <- function(generator) {
  if (is_torch_generator(generator)) generator$seed else as.numeric(generator)
}
