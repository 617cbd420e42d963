# Gradients for optimizer and clipping tests, set and read through the engine's gradient slot
# directly (the same slot that backward() fills and `$grad` reads).
set_grad <- function(p, g) invisible(.Call(rcuda:::rc_optim_set_grad, p, g))
get_grad <- function(p) .Call(rcuda:::rc_optim_get_grad, p)

# Parameters of a few shapes (a matrix, a vector, a 3-d array) as R arrays.
random_params <- function() list(random_array(3, 4), random_array(5), random_array(2, 1, 3))

# `steps` lists of gradients shaped like `params`, fresh normal values.
random_grads <- function(params, steps) {
  lapply(seq_len(steps), function(t) lapply(params, function(p) {
    if (is.null(dim(p))) rnorm(length(p)) else array(rnorm(length(p)), dim = dim(p))
  }))
}

as_values <- function(x) {
  a <- as_array(x)
  if (is.null(dim(a))) as.vector(a) else a
}

# Runs `make_optimizer(tensors)` over the gradient sequence; returns the parameters (as R
# arrays) after every step.
run_optimizer <- function(make_optimizer, params, grads, dtype = torch_double(), device = "cpu") {
  tensors <- lapply(params, function(p) torch_tensor(p, dtype = dtype, device = device))
  opt <- make_optimizer(tensors)
  lapply(grads, function(step_grads) {
    for (i in seq_along(tensors)) {
      set_grad(tensors[[i]], torch_tensor(step_grads[[i]], dtype = dtype, device = device))
    }
    opt$step()
    lapply(tensors, function(t) as_values(t$cpu()))
  })
}

# The same with a reference update written in plain R: `update(p, g, state, t)` returns
# list(p = , state = ) for one parameter at step t (1-based).
run_reference <- function(update, params, grads) {
  state <- rep(list(list()), length(params))
  lapply(seq_along(grads), function(t) {
    for (i in seq_along(params)) {
      r <- update(params[[i]], grads[[t]][[i]], state[[i]], t)
      params[[i]] <<- r$p
      state[[i]] <<- r$state
    }
    params
  })
}
