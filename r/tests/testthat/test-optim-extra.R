# optim_adadelta, optim_asgd, optim_rprop and optim_lbfgs against PyTorch's documented update
# rules (or known minima) in plain R, their optimizer interface (param_groups, schedulers,
# state dicts, zero_grad), and nn_utils_rnn_pad_sequence against base R.

# ---- references: PyTorch's algorithm boxes, one parameter at a time ---------------------------

reference_adadelta <- function(lr = 1, rho = 0.9, eps = 1e-6, weight_decay = 0) {
  function(p, g, state, t) {
    if (t == 1) state <- list(v = 0 * p, u = 0 * p)
    g <- g + weight_decay * p
    state$v <- rho * state$v + (1 - rho) * g^2
    delta <- sqrt(state$u + eps) / sqrt(state$v + eps) * g
    state$u <- rho * state$u + (1 - rho) * delta^2
    list(p = p - lr * delta, state = state)
  }
}

reference_asgd <- function(lr = 1e-2, lambda = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0) {
  function(p, g, state, t) {
    if (t == 1) state <- list(eta = lr, mu = 1, ax = 0 * p)
    g <- g + weight_decay * p
    p <- p * (1 - lambda * state$eta) - state$eta * g
    state$ax <- if (state$mu != 1) state$ax + state$mu * (p - state$ax) else p
    state$eta <- lr / (1 + lambda * lr * t)^alpha
    state$mu <- 1 / max(1, t - t0)
    list(p = p, state = state)
  }
}

reference_rprop <- function(lr = 1e-2, etas = c(0.5, 1.2), step_sizes = c(1e-6, 50)) {
  function(p, g, state, t) {
    if (t == 1) state <- list(prev = 0 * p, eta = 0 * p + lr)
    s <- g * state$prev
    up <- s > 0
    down <- s < 0
    state$eta[up] <- pmin(state$eta[up] * etas[2], step_sizes[2])
    state$eta[down] <- pmax(state$eta[down] * etas[1], step_sizes[1])
    g[down] <- 0
    state$prev <- g
    list(p = p - state$eta * sign(g), state = state)
  }
}

# ---- the quadratic loss sum(a * p^2 / 2 - b * p), gradient a * p - b -------------------------

quadratic_problem <- function() {
  shapes <- list(c(3, 4), 5, c(2, 1, 3))
  draw <- function(d, f) if (length(d) == 1) f(d) else array(f(prod(d)), d)
  list(p = lapply(shapes, draw, f = rnorm),
       a = lapply(shapes, draw, f = function(n) runif(n, 0.5, 2)),
       b = lapply(shapes, draw, f = rnorm))
}

# LBFGS's closure: zero the gradients, compute the loss f(), backward, return it.
lbfgs_closure <- function(opt, f) {
  function() {
    opt$zero_grad()
    loss <- f()
    loss$backward()
    loss
  }
}

as_values <- function(x) {
  a <- as_array(x)
  if (is.null(dim(a))) as.vector(a) else a
}

# The parameters after each step, gradients from backward() of the loss; `lrs[t]`, when
# given, is set as the lr of step t through param_groups.
run_quadratic <- function(make, problem, steps, dtype = torch_double(), lrs = NULL) {
  x <- lapply(problem$p, torch_tensor, dtype = dtype, requires_grad = TRUE)
  a <- lapply(problem$a, torch_tensor, dtype = dtype)
  b <- lapply(problem$b, torch_tensor, dtype = dtype)
  opt <- make(x)
  lapply(seq_len(steps), function(t) {
    if (!is.null(lrs)) opt$param_groups[[1]]$lr <- lrs[[t]]
    opt$zero_grad()
    loss <- Reduce(`+`, lapply(seq_along(x), function(i) (a[[i]] * x[[i]]^2 / 2 - b[[i]] * x[[i]])$sum()))
    loss$backward()
    opt$step()
    lapply(x, as_values)
  })
}

reference_quadratic <- function(make_update, problem, steps, lrs = NULL) {
  p <- problem$p
  state <- rep(list(list()), length(p))
  lapply(seq_len(steps), function(t) {
    update <- if (is.null(lrs)) make_update() else make_update(lr = lrs[[t]])
    for (i in seq_along(p)) {
      r <- update(p[[i]], problem$a[[i]] * p[[i]] - problem$b[[i]], state[[i]], t)
      p[[i]] <<- r$p
      state[[i]] <<- r$state
    }
    p
  })
}

cases <- list(
  adadelta = list(function(p) optim_adadelta(p), function(...) reference_adadelta(...)),
  adadelta_options = list(
    function(p) optim_adadelta(p, lr = 0.5, rho = 0.7, eps = 1e-4, weight_decay = 0.1),
    function(lr = 0.5) reference_adadelta(lr = lr, rho = 0.7, eps = 1e-4, weight_decay = 0.1)),
  asgd = list(function(p) optim_asgd(p), function(...) reference_asgd(...)),
  # t0 = 2: the average starts at step 3.
  asgd_options = list(
    function(p) optim_asgd(p, lr = 0.1, lambda = 0.05, alpha = 0.6, t0 = 2, weight_decay = 0.2),
    function(lr = 0.1) reference_asgd(lr = lr, lambda = 0.05, alpha = 0.6, t0 = 2,
                                      weight_decay = 0.2)),
  rprop = list(function(p) optim_rprop(p), function(...) reference_rprop(...)),
  # Step sizes that reach both bounds within a few steps.
  rprop_options = list(
    function(p) optim_rprop(p, lr = 0.3, etas = c(0.3, 1.5), step_sizes = c(0.05, 0.5)),
    function(lr = 0.3) reference_rprop(lr = lr, etas = c(0.3, 1.5), step_sizes = c(0.05, 0.5)))
)

for (name in names(cases)) {
  local({
    case <- cases[[name]]
    test_that(paste(name, "follows PyTorch's update in float64 and float32"), {
      problem <- quadratic_problem()
      want <- reference_quadratic(case[[2]], problem, 8)
      got <- run_quadratic(case[[1]], problem, 8)
      expect_equal(lapply(got[[8]], dim), lapply(want[[8]], dim))
      for (t in 1:8) expect_equal(unlist(got[[t]]), unlist(want[[t]]), tolerance = 1e-12)
      got32 <- run_quadratic(case[[1]], problem, 8, dtype = torch_float())
      for (t in 1:8) expect_equal(unlist(got32[[t]]), unlist(want[[t]]), tolerance = 1e-4)
    })
    test_that(paste(name, "uses an lr changed through param_groups"), {
      problem <- quadratic_problem()
      lrs <- c(0.3, 0.1, 0.05, 0.2)
      want <- reference_quadratic(case[[2]], problem, 4, lrs = lrs)
      got <- run_quadratic(case[[1]], problem, 4, lrs = lrs)
      expect_equal(unlist(got), unlist(want), tolerance = 1e-12)
    })
    test_that(paste(name, "state_dict round trip: a fresh optimizer continues identically"), {
      problem <- quadratic_problem()
      grads <- lapply(1:6, function(t) lapply(problem$p, function(p) p * 0 + rnorm(length(p))))
      x <- lapply(problem$p, torch_tensor, dtype = torch_double())
      feed <- function(ts, t) {
        for (i in seq_along(ts)) ts[[i]]$grad <- torch_tensor(grads[[t]][[i]], dtype = torch_double())
      }
      opt <- case[[1]](x)
      for (t in 1:3) {
        feed(x, t)
        opt$step()
      }
      copies <- lapply(x, function(t) torch_tensor(as_values(t), dtype = torch_double()))
      fresh <- case[[1]](copies)
      fresh$param_groups[[1]]$lr <- 123
      fresh$load_state_dict(opt$state_dict())
      expect_equal(fresh$param_groups[[1]]$lr, opt$param_groups[[1]]$lr)
      for (t in 4:6) {
        feed(x, t)
        feed(copies, t)
        opt$step()
        fresh$step()
        expect_identical(lapply(copies, as_values), lapply(x, as_values))
      }
    })
  })
}

# The references read lr as the optimizers do: Adadelta every step, ASGD for eta after each
# step, Rprop once (its initial step sizes).
test_that("reference_asgd's average matches the optimizer's state", {
  problem <- quadratic_problem()
  x <- lapply(problem$p, torch_tensor, dtype = torch_double(), requires_grad = TRUE)
  opt <- optim_asgd(x, lr = 0.1, lambda = 0.01, t0 = 3)
  update <- reference_asgd(lr = 0.1, lambda = 0.01, t0 = 3)
  p <- problem$p[[2]]
  state <- list()
  for (t in 1:7) {
    opt$zero_grad()
    (problem$a[[2]][1] * x[[2]]^2 / 2)$sum()$backward()
    opt$step()
    r <- update(p, problem$a[[2]][1] * p, state, t)
    p <- r$p
    state <- r$state
  }
  sd <- opt$state_dict()
  expect_equal(names(sd$state), "2")
  expect_equal(sd$state[["2"]]$step, 7)
  expect_equal(as_values(sd$state[["2"]]$ax), state$ax, tolerance = 1e-12)
  expect_equal(sd$state[["2"]]$eta, state$eta)
  expect_equal(sd$state[["2"]]$mu, 1 / 4)
})

test_that("param groups take their own options; a non-contiguous parameter updates in place", {
  base <- matrix(rnorm(12), 3, 4)
  whole <- torch_tensor(base, dtype = torch_double())
  view <- whole$t()
  o0 <- rnorm(4)
  other <- torch_tensor(o0, dtype = torch_double())
  opt <- optim_adadelta(list(list(params = list(view)), list(params = other, rho = 0.5)), lr = 0.7)
  g1 <- matrix(rnorm(12), 4, 3)
  g2 <- rnorm(4)
  view$grad <- torch_tensor(g1, dtype = torch_double())
  other$grad <- torch_tensor(g2, dtype = torch_double())
  opt$step()
  want1 <- reference_adadelta(lr = 0.7)(t(base), g1, list(), 1)$p
  want2 <- reference_adadelta(lr = 0.7, rho = 0.5)(o0, g2, list(), 1)$p
  expect_equal(as_values(view), want1, tolerance = 1e-12)
  expect_equal(as_values(whole), t(want1), tolerance = 1e-12)
  expect_equal(as_values(other), want2, tolerance = 1e-12)
  expect_equal(opt$state_dict()$param_groups[[2]]$params, 2L)
})

test_that("an empty parameter steps without error", {
  for (make in list(optim_adadelta, optim_asgd, optim_rprop)) {
    e <- torch_zeros(0, dtype = torch_double(), requires_grad = TRUE)
    x <- torch_tensor(c(1, -2), dtype = torch_double(), requires_grad = TRUE)
    opt <- make(list(e, x))
    ((x^2)$sum() + e$sum())$backward()
    expect_null(opt$step())
    expect_equal(e$numel(), 0)
    expect_true(all(abs(as_values(x)) < c(1, 2)))
  }
  e <- torch_zeros(0, dtype = torch_double(), requires_grad = TRUE)
  x <- torch_tensor(c(1, -2), dtype = torch_double(), requires_grad = TRUE)
  opt <- optim_lbfgs(list(e, x))
  opt$step(lbfgs_closure(opt, function() ((x - 3)^2)$sum() + e$sum()))
  expect_equal(as_values(x), c(3, 3), tolerance = 1e-6)
})

test_that("schedulers set the lr that the next step uses, as their closed forms", {
  p0 <- rnorm(3)
  x <- torch_tensor(p0, dtype = torch_double(), requires_grad = TRUE)
  opt <- optim_adadelta(list(x), lr = 2)
  sched <- lr_step(opt, step_size = 2, gamma = 0.5)
  update <- reference_adadelta
  p <- p0
  state <- list()
  for (t in 1:6) {
    lr <- 2 * 0.5^floor((t - 1) / 2)
    expect_equal(opt$param_groups[[1]]$lr, lr)
    opt$zero_grad()
    (x^2)$sum()$backward()
    opt$step()
    r <- update(lr = lr)(p, 2 * p, state, t)
    p <- r$p
    state <- r$state
    expect_equal(as_values(x), p, tolerance = 1e-12)
    sched$step()
  }
  rp <- optim_rprop(list(torch_randn(2)), lr = 0.1)
  cosine <- lr_cosine_annealing(rp, T_max = 5, eta_min = 0.01)
  got <- numeric(6)
  for (t in 0:5) {
    got[[t + 1]] <- rp$param_groups[[1]]$lr
    cosine$step()
  }
  expect_equal(got, 0.01 + (0.1 - 0.01) * (1 + cos(pi * (0:5) / 5)) / 2, tolerance = 1e-12)
  asgd <- optim_asgd(list(torch_randn(2)), lr = 0.4)
  lam <- lr_lambda(asgd, function(epoch) 1 / (epoch + 1))
  for (t in 1:3) lam$step()
  expect_equal(asgd$param_groups[[1]]$lr, 0.4 / 4)
})

test_that("zero_grad zeroes or drops gradients; parameters without one are skipped", {
  a <- torch_tensor(c(1, 2), dtype = torch_double(), requires_grad = TRUE)
  b <- torch_tensor(c(3, 4), dtype = torch_double(), requires_grad = TRUE)
  opt <- optim_rprop(list(a, b), lr = 0.1)
  (a * 3)$sum()$backward()
  opt$step()
  expect_equal(as_values(a), c(0.9, 1.9))
  expect_equal(as_values(b), c(3, 4))
  expect_equal(names(opt$state_dict()$state), "1")
  opt$zero_grad()
  expect_equal(as_values(a$grad), c(0, 0))
  opt$zero_grad(set_to_none = TRUE)
  expect_true(is_undefined_tensor(a$grad))
  expect_true(is_undefined_tensor(b$grad))
})

test_that("load_state_dict copies into the parameters' dtype and refuses dicts that do not fit", {
  a <- torch_tensor(c(1, 2), dtype = torch_double())
  opt <- optim_adadelta(list(a))
  a$grad <- torch_tensor(c(1, -1), dtype = torch_double())
  opt$step()
  sd <- opt$state_dict()
  b <- torch_tensor(c(1, 2), dtype = torch_float())
  other <- optim_adadelta(list(b))
  other$load_state_dict(sd)
  loaded <- other$state_dict()$state[["1"]]$square_avg
  expect_equal(loaded$dtype, torch_float())
  opt$step()
  expect_equal(as_values(loaded), c(0.1, 0.1), tolerance = 1e-6)
  two <- optim_adadelta(list(torch_randn(2), torch_randn(2)))
  expect_error(two$load_state_dict(sd), "parameters", class = "rcuda_value_error")
  expect_error(opt$load_state_dict(list(state = list())), "param_groups",
               class = "rcuda_value_error")
  bad <- sd
  bad$state[["1"]]$square_avg <- torch_zeros(3, dtype = torch_double())
  expect_error(opt$load_state_dict(bad), "shape", class = "rcuda_shape_error")
  bad <- sd
  names(bad$state[["1"]])[2] <- "exp_avg"
  expect_error(opt$load_state_dict(bad), "unknown state 'exp_avg'", class = "rcuda_value_error")
  bad <- sd
  bad$param_groups[[1]]$rho <- 2
  expect_error(opt$load_state_dict(bad), "rho", class = "rcuda_value_error")
  expect_equal(opt$param_groups[[1]]$rho, 0.9)
})

test_that("bad options and parameters are refused, naming the optimizer", {
  x <- torch_randn(2)
  expect_error(optim_adadelta(x, lr = -1), "optim_adadelta.*learning rate", class = "rcuda_value_error")
  expect_error(optim_adadelta(x, rho = 1.5), "optim_adadelta.*rho", class = "rcuda_value_error")
  expect_error(optim_asgd(x, weight_decay = -1), "optim_asgd.*weight_decay",
               class = "rcuda_value_error")
  expect_error(optim_rprop(x, etas = c(2, 1.2)), "optim_rprop.*eta", class = "rcuda_value_error")
  expect_error(optim_rprop(x, step_sizes = 1), "optim_rprop.*step_sizes",
               class = "rcuda_value_error")
  expect_error(optim_asgd(list(x, x)), "appear only once", class = "rcuda_value_error")
  expect_error(optim_rprop(list(x, 1)), "tensors", class = "rcuda_value_error")
  opt <- optim_asgd(x)
  expect_error(opt$param_groups[[1]]$lr <- -2, "learning rate", class = "rcuda_value_error")
  expect_error(opt$param_groups[[1]]$params <- list(torch_randn(2)), "differ",
               class = "rcuda_value_error")
  expect_equal(opt$param_groups[[1]]$lr, 1e-2)
  opt$add_param_group(list(params = torch_randn(3), lr = 0.5))
  expect_equal(opt$param_groups[[2]]$lambda, 1e-4)
  expect_error(opt$add_param_group(list(params = x)), "only once", class = "rcuda_value_error")
  expect_true(is_optimizer(opt))
})

# ---- L-BFGS ------------------------------------------------------------------------------------

for (ls in list(NULL, "strong_wolfe")) {
  local({
    label <- if (is.null(ls)) "without line search" else "with strong_wolfe"
    test_that(paste("LBFGS", label, "minimises a quadratic to solve(A, b)"), {
      n <- 6
      M <- matrix(rnorm(n * n), n)
      A <- crossprod(M) / n + diag(n)
      b <- rnorm(n)
      At <- torch_tensor(A, dtype = torch_double())
      bt <- torch_tensor(b, dtype = torch_double())
      # Two parameters, one a matrix: the flat vector is their concatenation.
      x1 <- torch_tensor(matrix(rnorm(4), 2), dtype = torch_double(), requires_grad = TRUE)
      x2 <- torch_tensor(rnorm(2), dtype = torch_double(), requires_grad = TRUE)
      # Tolerances below the defaults, whose loss-change test stops ~1e-5 away.
      opt <- optim_lbfgs(list(x1, x2), tolerance_grad = 1e-10, tolerance_change = 1e-14,
                         line_search_fn = ls)
      f <- function() {
        x <- torch_cat(list(x1$reshape(-1), x2))
        (x * torch_matmul(At, x))$sum() / 2 - (bt * x)$sum()
      }
      for (i in 1:5) opt$step(lbfgs_closure(opt, f))
      expect_equal(c(as.vector(t(as_values(x1))), as_values(x2)), solve(A, b), tolerance = 1e-6)
    })
    test_that(paste("LBFGS", label, "minimises the Rosenbrock function to (1, 1)"), {
      x <- torch_tensor(c(-1.5, 2), dtype = torch_double(), requires_grad = TRUE)
      opt <- optim_lbfgs(x, line_search_fn = ls)
      f <- function() (1 - x[1])^2 + 100 * (x[2] - x[1]^2)^2
      for (i in 1:30) opt$step(lbfgs_closure(opt, f))
      expect_equal(as_values(x), c(1, 1), tolerance = 1e-4)
    })
  })
}

test_that("LBFGS's first two iterations are a gradient step and a BFGS step", {
  n <- 4
  M <- matrix(rnorm(n * n), n)
  A <- crossprod(M) + diag(n)
  b <- rnorm(n)
  x0 <- rnorm(n)
  x <- torch_tensor(x0, dtype = torch_double(), requires_grad = TRUE)
  At <- torch_tensor(A, dtype = torch_double())
  bt <- torch_tensor(b, dtype = torch_double())
  # max_eval = 10: its default, max_iter * 5 / 4 = 2, would stop after the first iteration.
  opt <- optim_lbfgs(x, lr = 0.8, max_iter = 2, max_eval = 10)
  loss <- opt$step(lbfgs_closure(opt, function() (x * torch_matmul(At, x))$sum() / 2 - (bt * x)$sum()))
  expect_equal(loss$item(), sum(x0 * A %*% x0) / 2 - sum(b * x0), tolerance = 1e-12)
  grad <- function(x) as.vector(A %*% x - b)
  g0 <- grad(x0)
  x1 <- x0 - min(1, 1 / sum(abs(g0))) * 0.8 * g0
  s <- x1 - x0
  y <- grad(x1) - g0
  rho <- 1 / sum(y * s)
  # The BFGS inverse Hessian from H0 = (y's / y'y) I and the pair (s, y).
  H0 <- diag(n) * sum(y * s) / sum(y * y)
  H <- (diag(n) - rho * s %*% t(y)) %*% H0 %*% (diag(n) - rho * y %*% t(s)) + rho * s %*% t(s)
  x2 <- x1 - 0.8 * as.vector(H %*% grad(x1))
  expect_equal(as_values(x), x2, tolerance = 1e-10)
  expect_equal(opt$state_dict()$state[["1"]]$func_evals, 2)
})

test_that("LBFGS stops at once where the gradient is zero, counting the evaluation", {
  # torch for R's test: a closure without backward() leaves no gradient.
  x <- torch_tensor(1, requires_grad = TRUE)
  opt <- optim_lbfgs(x)
  f <- function() 2 * x
  opt$step(f)
  expect_equal(opt$state_dict()$state[["1"]]$func_evals, 1)
  opt$step(f)
  expect_equal(opt$state_dict()$state[["1"]]$func_evals, 2)
  expect_equal(as_values(x), 1)
})

test_that("LBFGS with strong_wolfe reaches the flower function's minimum (torch for R's test)", {
  flower <- function(x) torch_norm(x) + torch_sin(4 * torch_atan2(x[2], x[1]))
  params <- torch_tensor(c(20, 20), requires_grad = TRUE)
  opt <- optim_lbfgs(params, line_search_fn = "strong_wolfe")
  opt$step(lbfgs_closure(opt, function() flower(params)))
  expect_lt(max(abs(as_values(params))), 0.1)
})

test_that("LBFGS does not fail on NaN losses", {
  x <- torch_tensor(c(1, 2), dtype = torch_double(), requires_grad = TRUE)
  opt <- optim_lbfgs(x)
  f <- lbfgs_closure(opt, function() (x * NaN)$sum())
  expect_no_error(for (i in 1:3) loss <- opt$step(f))
  expect_true(is.nan(loss$item()))
})

test_that("LBFGS state_dict round trip: a fresh optimizer continues identically", {
  A <- crossprod(matrix(rnorm(9), 3)) + diag(3)
  At <- torch_tensor(A, dtype = torch_double())
  quad <- function(x) function() (x * torch_matmul(At, x))$sum() / 2 + x$sum()
  x <- torch_tensor(rnorm(3), dtype = torch_double(), requires_grad = TRUE)
  opt <- optim_lbfgs(x, max_iter = 2, max_eval = 4, history_size = 2)
  opt$step(lbfgs_closure(opt, quad(x)))
  opt$step(lbfgs_closure(opt, quad(x)))
  y <- torch_tensor(as_values(x), dtype = torch_double(), requires_grad = TRUE)
  fresh <- optim_lbfgs(y, max_iter = 2, max_eval = 4, history_size = 2)
  fresh$load_state_dict(opt$state_dict())
  expect_length(fresh$state_dict()$state[["1"]]$old_dirs, 2)
  opt$step(lbfgs_closure(opt, quad(x)))
  fresh$step(lbfgs_closure(fresh, quad(y)))
  expect_identical(as_values(y), as_values(x))
})

test_that("LBFGS refuses groups, unknown line searches and a step without closure", {
  x <- torch_randn(2, requires_grad = TRUE)
  expect_error(optim_lbfgs(x, line_search_fn = "armijo"), "optim_lbfgs.*line_search_fn",
               class = "rcuda_value_error")
  expect_error(optim_lbfgs(list(list(params = x), list(params = torch_randn(2)))),
               "parameter groups", class = "rcuda_value_error")
  opt <- optim_lbfgs(x)
  expect_error(opt$add_param_group(list(params = torch_randn(2))), "parameter groups",
               class = "rcuda_value_error")
  expect_error(opt$step(), "closure", class = "rcuda_value_error")
  expect_error(optim_lbfgs(x, max_iter = 0), "max_iter", class = "rcuda_value_error")
})

test_that("the strong Wolfe line search (torch for R's cases)", {
  # f(x) = x^2 from x = 3 along d: list(f, gradient) at 3 + t d.
  at <- function(x) function(t, d) {
    new_x <- x + t * d
    list((new_x^2)$item(), 2 * new_x)
  }
  ret <- rcuda:::lbfgs_strong_wolfe(at(torch_tensor(3)), t = 1, d = torch_tensor(-1), f = 9,
                            g = torch_tensor(6), gtd = -6)
  expect_equal(ret$evals, 1)
  expect_equal(ret$t, 1)
  # Uphill: no step.
  ret <- rcuda:::lbfgs_strong_wolfe(at(torch_tensor(3)), t = 0.1, d = torch_tensor(1), f = 9,
                            g = torch_tensor(6), gtd = 6)
  expect_equal(ret$t, 0)
  # Too short a first step: cubic extrapolation, more evaluations, a step satisfying the
  # strong Wolfe conditions for x^2 from -3 along +1.
  ret <- rcuda:::lbfgs_strong_wolfe(at(torch_tensor(-3)), t = 0.001, d = torch_tensor(1), f = 9,
                            g = torch_tensor(-6), gtd = -6)
  expect_gt(ret$evals, 1)
  x_new <- -3 + ret$t
  expect_lte(x_new^2, 9 + 1e-4 * ret$t * -6)
  expect_lte(abs(2 * x_new), 0.9 * 6)
})

# ---- nn_utils_rnn_pad_sequence -----------------------------------------------------------------

# Base R: a T x B x trailing array (or B x T x trailing) from R arrays L_i x trailing.
pad_reference <- function(arrays, trailing, batch_first, padding_value) {
  longest <- max(vapply(arrays, function(a) dim(a)[1], numeric(1)))
  out <- array(padding_value, c(longest, length(arrays), prod(trailing)))
  for (i in seq_along(arrays)) {
    L <- dim(arrays[[i]])[1]
    if (L > 0) out[seq_len(L), i, ] <- matrix(arrays[[i]], L)
  }
  out <- array(out, c(longest, length(arrays), trailing))
  if (batch_first) out <- aperm(out, c(2, 1, seq_along(trailing) + 2))
  out
}

test_that("pad_sequence pads and stacks as base R, in both layouts and several dtypes", {
  trailing <- c(2, 3)
  lengths <- c(4, 1, 0, 3)
  arrays <- lapply(lengths, function(L) array(rnorm(L * 6), c(L, trailing)))
  for (dtype in list(torch_double(), torch_float())) {
    seqs <- lapply(arrays, torch_tensor, dtype = dtype)
    for (batch_first in c(FALSE, TRUE)) {
      got <- nn_utils_rnn_pad_sequence(seqs, batch_first = batch_first, padding_value = -2.5)
      expect_equal(got$dtype, dtype)
      expect_equal(as_array(got), pad_reference(arrays, trailing, batch_first, -2.5),
                   tolerance = 1e-6)
    }
  }
  ints <- lapply(c(2, 3), function(L) array(sample(-5:5, L * 2, TRUE), c(L, 2)))
  got <- nn_utils_rnn_pad_sequence(lapply(ints, torch_tensor, dtype = torch_long()))
  expect_equal(got$dtype, torch_long())
  expect_equal(as_array(got), pad_reference(ints, 2, FALSE, 0))
  # 1-d sequences, a non-contiguous one among them, and torch for R's example.
  m <- matrix(rnorm(6), 2)
  got <- nn_utils_rnn_pad_sequence(list(torch_tensor(m)$t()$reshape(-1)$narrow(1, 2, 3),
                                        torch_tensor(1:2 + 0.5)), batch_first = TRUE)
  expect_equal(as_array(got), rbind(as.vector(m)[2:4], c(1.5, 2.5, 0)), tolerance = 1e-6)
  o <- nn_utils_rnn_pad_sequence(list(torch_ones(25, 300), torch_ones(22, 300), torch_ones(15, 300)))
  expect_equal(o$shape, c(25, 3, 300))
})

test_that("pad_sequence reads a non-contiguous sequence and passes gradients back", {
  a <- torch_randn(3, 2, dtype = torch_double(), requires_grad = TRUE)
  base <- matrix(rnorm(10), 2)
  b <- torch_tensor(base, dtype = torch_double())$t()  # 5 x 2, a transposed view
  b$requires_grad_(TRUE)
  w <- array(rnorm(5 * 2 * 2), c(5, 2, 2))
  out <- nn_utils_rnn_pad_sequence(list(a, b))
  expect_equal(as_array(out[, 2, ]), t(base))
  (out * torch_tensor(w, dtype = torch_double()))$sum()$backward()
  expect_equal(as_array(a$grad), w[1:3, 1, ])
  expect_equal(as_array(b$grad), w[, 2, ])
})

test_that("pad_sequence refuses bad input", {
  expect_error(nn_utils_rnn_pad_sequence(list()), "nn_utils_rnn_pad_sequence.*non-empty",
               class = "rcuda_value_error")
  expect_error(nn_utils_rnn_pad_sequence(list(torch_ones(2, 3), torch_ones(2, 4))),
               "sequence 2 has shape \\(2, 4\\)", class = "rcuda_shape_error")
  expect_error(nn_utils_rnn_pad_sequence(list(torch_ones(2)), padding_value = c(1, 2)),
               "padding_value", class = "rcuda_value_error")
  expect_error(nn_utils_rnn_pad_sequence(list(torch_ones(2)), batch_first = NA),
               "batch_first", class = "rcuda_value_error")
})

test_that("cuda_amp_grad_scaler() says it steps engine optimizers only", {
  p <- torch_tensor(c(1, 2), requires_grad = TRUE)
  opt <- optim_adadelta(list(p))
  scaler <- cuda_amp_grad_scaler(enabled = FALSE)
  expect_error(scaler$step(opt), class = "value_error",
               regexp = "optim_adadelta steps in R .* engine optimizers only")
})
