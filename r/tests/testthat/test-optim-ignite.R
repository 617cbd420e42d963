# optim_ignite_*: torch for R's names for rcuda's fused optimizers, checked step by step against
# the updates written out in R doubles, with the ignite state layout (Note [Ignite state layout]).

# Steps `opt_fn(params, ...)` on the loss sum(w * p^2) / 2 (gradient w * p), in float64.
ignite_trajectory <- function(opt_fn, p0, w, steps, ...) {
  p <- torch_tensor(p0, dtype = torch_float64(), requires_grad = TRUE)
  wt <- torch_tensor(w, dtype = torch_float64())
  opt <- opt_fn(list(p), ...)
  for (i in seq_len(steps)) {
    opt$zero_grad()
    (torch_sum(wt * p * p) / 2)$backward()
    opt$step()
  }
  list(p = as_array(p$detach()), opt = opt)
}

test_that("optim_ignite_adam and _adamw step as Adam and AdamW written in R", {
  p0 <- rnorm(5)
  w <- runif(5, 0.5, 2)
  reference <- function(lr, b1, b2, eps, wd, amsgrad, decoupled, steps) {
    p <- p0; m <- 0; v <- 0; vmax <- 0
    for (t in seq_len(steps)) {
      g <- w * p
      if (decoupled) p <- p * (1 - lr * wd) else g <- g + wd * p
      m <- b1 * m + (1 - b1) * g
      v <- b2 * v + (1 - b2) * g^2
      vmax <- pmax(vmax, v)
      denom <- sqrt(if (amsgrad) vmax else v) / sqrt(1 - b2^t) + eps
      p <- p - lr / (1 - b1^t) * m / denom
    }
    p
  }
  for (amsgrad in c(FALSE, TRUE)) {
    got <- ignite_trajectory(optim_ignite_adam, p0, w, 4, lr = 0.05, betas = c(0.8, 0.95), eps = 1e-6,
                             weight_decay = 0.1, amsgrad = amsgrad)$p
    expect_equal(got, reference(0.05, 0.8, 0.95, 1e-6, 0.1, amsgrad, FALSE, 4), tolerance = 1e-10)
    got <- ignite_trajectory(optim_ignite_adamw, p0, w, 4, lr = 0.05, betas = c(0.8, 0.95), eps = 1e-6,
                             weight_decay = 0.1, amsgrad = amsgrad)$p
    expect_equal(got, reference(0.05, 0.8, 0.95, 1e-6, 0.1, amsgrad, TRUE, 4), tolerance = 1e-10)
  }
})

test_that("optim_ignite_sgd, _rmsprop and _adagrad step as their updates written in R", {
  p0 <- rnorm(4)
  w <- runif(4, 0.5, 2)
  sgd <- function(lr, momentum, dampening, wd, nesterov, steps) {
    p <- p0; buf <- NULL
    for (t in seq_len(steps)) {
      g <- w * p + wd * p
      buf <- if (is.null(buf)) g else momentum * buf + (1 - dampening) * g
      p <- p - lr * (if (nesterov) g + momentum * buf else buf)
    }
    p
  }
  expect_equal(ignite_trajectory(optim_ignite_sgd, p0, w, 3, lr = 0.1, momentum = 0.9, dampening = 0.1,
                                 weight_decay = 0.01)$p, sgd(0.1, 0.9, 0.1, 0.01, FALSE, 3), tolerance = 1e-10)
  expect_equal(ignite_trajectory(optim_ignite_sgd, p0, w, 3, lr = 0.1, momentum = 0.9, nesterov = TRUE)$p,
               sgd(0.1, 0.9, 0, 0, TRUE, 3), tolerance = 1e-10)

  rmsprop <- function(lr, alpha, eps, wd, momentum, centered, steps) {
    p <- p0; sq <- 0; ga <- 0; buf <- 0
    for (t in seq_len(steps)) {
      g <- w * p + wd * p
      sq <- alpha * sq + (1 - alpha) * g^2
      ga <- alpha * ga + (1 - alpha) * g
      avg <- sqrt(if (centered) sq - ga^2 else sq) + eps
      buf <- momentum * buf + g / avg
      p <- p - lr * buf
    }
    p
  }
  expect_equal(ignite_trajectory(optim_ignite_rmsprop, p0, w, 3, lr = 0.01, alpha = 0.9, eps = 1e-6,
                                 weight_decay = 0.01, momentum = 0.5, centered = TRUE)$p,
               rmsprop(0.01, 0.9, 1e-6, 0.01, 0.5, TRUE, 3), tolerance = 1e-10)

  adagrad <- function(lr, lr_decay, wd, initial, eps, steps) {
    p <- p0; s <- initial
    for (t in seq_len(steps)) {
      g <- w * p + wd * p
      s <- s + g^2
      p <- p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)
    }
    p
  }
  expect_equal(ignite_trajectory(optim_ignite_adagrad, p0, w, 3, lr = 0.1, lr_decay = 0.01, weight_decay = 0.01,
                                 initial_accumulator_value = 0.1, eps = 1e-8)$p,
               adagrad(0.1, 0.01, 0.01, 0.1, 1e-8, 3), tolerance = 1e-10)
})

test_that("ignite state dicts have torch's layout, with empty tensors for unused entries, and load back", {
  layouts <- list(
    list(optim_ignite_adam, c("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"), "max_exp_avg_sq"),
    list(optim_ignite_sgd, "momentum_buffer", "momentum_buffer"),
    list(optim_ignite_rmsprop, c("grad_avg", "square_avg", "momentum_buffer", "step"), c("grad_avg", "momentum_buffer")),
    list(optim_ignite_adagrad, c("sum", "step"), character())
  )
  for (layout in layouts) {
    run <- ignite_trajectory(layout[[1]], c(1, -2), c(1, 1), 2, lr = 0.1)
    state <- run$opt$state_dict()$state
    expect_equal(names(state), "1")
    expect_equal(names(state[[1]]), layout[[2]])
    for (name in layout[[3]]) expect_equal(state[[1]][[name]]$numel(), 0)
    # Through torch_serialize() and back: the same state, and the same next step as without it.
    fresh <- ignite_trajectory(layout[[1]], c(1, -2), c(1, 1), 0, lr = 0.1)$opt
    fresh$load_state_dict(torch_load(torch_serialize(run$opt$state_dict())))
    expect_equal(fresh$state_dict()$state, state)
  }
  empty <- optim_ignite_adamw(list(torch_tensor(1, requires_grad = TRUE)))$state_dict()$state
  expect_identical(empty, structure(list(), names = character()))
})

test_that("a state dict of optim_adam loads into optim_ignite_adam and steps on alike", {
  p0 <- rnorm(3)
  plain <- ignite_trajectory(optim_adam, p0, c(1, 2, 3), 2, lr = 0.1)
  ignite <- ignite_trajectory(optim_ignite_adam, plain$p, c(1, 2, 3), 0, lr = 0.1)
  ignite$opt$load_state_dict(plain$opt$state_dict())
  expect_equal(as.numeric(ignite$opt$state_dict()$state[[1]]$step), 2)
  expect_equal(as_array(ignite$opt$state_dict()$state[[1]]$exp_avg), as_array(plain$opt$state_dict()$state[[1]]$exp_avg))
})

test_that("ignite optimizers refuse empty params and state dicts that do not fit, in torch's words", {
  expect_error(optim_ignite_adamw(list()), "optim_ignite_adamw: the `params` must have length > 0", class = "value_error")
  run <- ignite_trajectory(optim_ignite_adam, c(1, 2), c(1, 1), 1, lr = 0.1)
  o <- run$opt
  expect_error(o$load_state_dict(list()), "must be a list with elements 'param_groups' and 'state'", class = "value_error")
  sd <- o$state_dict()
  expect_error(o$load_state_dict(list(param_groups = sd$param_groups, state = structure(list(), names = character()))),
               "To-be loaded state dict is missing states for parameters 1.", fixed = TRUE)
  bad <- sd
  bad$state[[1]]$exp_avg <- NULL
  expect_error(o$load_state_dict(bad), "The 1-th state has elements with names exp_avg, exp_avg_sq")
  bad <- sd
  bad$param_groups[[1]]$lr <- NULL
  expect_error(o$load_state_dict(bad), "must include names 'params, lr, betas")
  expect_error(optim_ignite_sgd(list(torch_tensor(1, requires_grad = TRUE))), "optim_ignite_sgd: param group 1 has no lr")
})

test_that("$clone() of an optimizer says why it cannot be done", {
  p <- list(torch_ones(2, requires_grad = TRUE))
  expect_error(optim_ignite_adamw(p)$clone(deep = TRUE),
               "optim_ignite_adamw: OptimizerIgnite cannot be deep cloned", class = "value_error")
  expect_error(optim_sgd(p, lr = 0.1)$clone(), "optim_sgd: an optimizer cannot be cloned")
  expect_error(optim_rprop(p)$clone(deep = TRUE), "optim_rprop: an optimizer cannot be deep cloned")
})
