# The random generator's state, saved and restored, as torch for R's torch_get_rng_state(),
# torch_set_rng_state(), local_torch_manual_seed() and with_torch_manual_seed(). rcuda has one
# Philox generator for every device (Note [Philox stream] in rcuda/core/philox.h), whose state
# is its seed and its offset: 16 bytes, carried as a uint8 tensor (torch for R's CPU state is
# a uint8 tensor too, of another length). cuda_get_rng_state() and cuda_set_rng_state() are
# the same state.

#' @export
torch_get_rng_state <- function() {
  torch_tensor(as.integer(.Call(rc_get_rng_state)), dtype = torch_uint8())
}

#' @export
torch_set_rng_state <- function(state) {
  if (is_torch_tensor(state)) {
    if (dtype_of(state) != "uint8" || state$numel() != 16) {
      value_error("torch_set_rng_state: state must be the 16-element uint8 tensor that ",
                  "torch_get_rng_state() gives, got ", dtype_of(state), " of ", state$numel(),
                  " elements")
    }
    state <- as.raw(as_array(state$cpu()))
  }
  invisible(.Call(rc_set_rng_state, state))
}

#' @export
cuda_get_rng_state <- function(device = NULL) torch_get_rng_state()

#' @export
cuda_set_rng_state <- function(state, device = NULL) torch_set_rng_state(state)

# Seeds the generator until the calling function (.env) returns, then puts the state back.
#' @export
local_torch_manual_seed <- function(seed, .env = parent.frame()) {
  saved <- torch_get_rng_state()
  torch_manual_seed(seed)
  do.call(base::on.exit, list(substitute(torch_set_rng_state(s), list(s = saved)), TRUE, FALSE),
          envir = .env)
  invisible(saved)
}

# Runs code with the generator seeded, then puts the state back: draws after it continue the
# stream as if the code had drawn nothing.
#' @export
with_torch_manual_seed <- function(code, ..., seed) {
  if (...length()) value_error("with_torch_manual_seed: only code and seed are taken")
  local_torch_manual_seed(seed)
  force(code)
}
