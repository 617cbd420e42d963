# The CPU backend's threads, as torch for R's torch_set_num_threads() and friends.
#
# Intra-op threads are the engine's: OpenMP's pool for the CPU kernels' loops and OpenBLAS's for
# GEMMs (rcuda::cpu::set_num_threads, Note [BLAS and OpenMP threads]). rcuda has no inter-op
# pool: every op runs on the thread that calls it, and the GPU's work is ordered by streams. So
# torch_set_num_interop_threads() only records the number, which torch_get_num_interop_threads()
# gives back (1 until set), so that scripts written for torch that set and read it run; it
# changes nothing.

interop_threads <- new.env(parent = emptyenv())
interop_threads$n <- 1L

threads_arg <- function(n, fn) {
  convenience_number(n, fn, "num_threads", function(v) v >= 1 && v == trunc(v) && v <= .Machine$integer.max,
                     "a whole number >= 1")
  as.integer(n)
}

#' @export
torch_set_num_threads <- function(num_threads) {
  invisible(.Call(rc_set_num_threads, threads_arg(num_threads, "torch_set_num_threads")))
}

#' @export
torch_get_num_threads <- function() .Call(rc_num_threads)

#' @export
torch_set_num_interop_threads <- function(num_threads) {
  interop_threads$n <- threads_arg(num_threads, "torch_set_num_interop_threads")
  invisible(NULL)
}

#' @export
torch_get_num_interop_threads <- function() interop_threads$n
