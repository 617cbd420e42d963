# Learning-rate schedulers: each lr sequence against its closed form in base R, the lr reaching
# the optimizer's next step, and torch for R's first-step behaviour (creating a scheduler sets
# the epoch-0 lr).

# Creates the scheduler, then returns the lr of every group at epochs 0..epochs.
lr_sequence <- function(opt, make_scheduler, epochs) {
  s <- make_scheduler(opt)
  lrs <- list(vapply(opt$param_groups, function(g) g$lr, numeric(1)))
  for (e in seq_len(epochs)) {
    s$step()
    lrs[[e + 1]] <- vapply(opt$param_groups, function(g) g$lr, numeric(1))
    expect_equal(s$get_last_lr(), lrs[[e + 1]])
  }
  do.call(rbind, lrs)
}

two_groups <- function(make = optim_sgd, lr1 = 0.5, lr2 = 0.02, ...) {
  make(list(list(params = torch_randn(2), lr = lr1), list(params = torch_randn(3), lr = lr2)),
       lr = 1, ...)
}

test_that("lr_step decays by gamma every step_size epochs", {
  opt <- two_groups()
  got <- lr_sequence(opt, function(o) lr_step(o, step_size = 3, gamma = 0.3), 12)
  e <- 0:12
  expect_equal(got, cbind(0.5 * 0.3^(e %/% 3), 0.02 * 0.3^(e %/% 3)))
})

test_that("lr_lambda scales the initial lr by lr_lambda(epoch), one function per group", {
  opt <- two_groups()
  f1 <- function(e) 1 / (1 + e)
  f2 <- function(e) 0.9^e
  got <- lr_sequence(opt, function(o) lr_lambda(o, list(f1, f2)), 8)
  e <- 0:8
  expect_equal(got, cbind(0.5 / (1 + e), 0.02 * 0.9^e))
  expect_equal(opt$param_groups[[1]]$initial_lr, 0.5)
  expect_error(lr_lambda(opt, list(f1)), "list of 2 functions", class = "rcuda_value_error")
})

test_that("lr_multiplicative multiplies by lr_lambda(epoch) from epoch 1 on", {
  opt <- two_groups()
  f <- function(e) 0.9 + 0.01 * e
  got <- lr_sequence(opt, function(o) lr_multiplicative(o, f), 8)
  factors <- cumprod(c(1, f(1:8)))
  expect_equal(got, cbind(0.5 * factors, 0.02 * factors))
})

test_that("lr_cosine_annealing follows eta_min + (base - eta_min) (1 + cos(pi t / T_max)) / 2", {
  opt <- two_groups()
  T_max <- 5
  got <- lr_sequence(opt, function(o) lr_cosine_annealing(o, T_max = T_max, eta_min = 0.001), 15)
  e <- 0:15
  closed <- function(base) 0.001 + (base - 0.001) * (1 + cos(pi * e / T_max)) / 2
  expect_equal(got, cbind(closed(0.5), closed(0.02)), tolerance = 1e-12)
})

test_that("lr_cosine_annealing resumed at last_epoch starts from the closed form", {
  opt <- optim_sgd(list(torch_randn(2)), lr = 0.1)
  opt$param_groups[[1]]$initial_lr <- 0.4
  s <- lr_cosine_annealing(opt, T_max = 10, last_epoch = 2)
  expect_equal(opt$param_groups[[1]]$lr, 0.4 * (1 + cos(pi * 3 / 10)) / 2)
  s$step()
  expect_equal(opt$param_groups[[1]]$lr, 0.4 * (1 + cos(pi * 4 / 10)) / 2)
  fresh <- optim_sgd(list(torch_randn(2)), lr = 0.1)
  expect_error(lr_step(fresh, 2, last_epoch = 3), "initial_lr", class = "rcuda_value_error")
})

# PyTorch's OneCycleLR with torch for R's phase ends: warm-up to step pct_start * total - 1,
# then down to total - 1.
one_cycle_closed <- function(step, total, max_lr, pct_start = 0.3, div_factor = 25,
                             final_div_factor = 1e4, start = max_lr / div_factor,
                             end = start / final_div_factor, linear = FALSE) {
  anneal <- if (linear) function(a, b, p) (b - a) * p + a else
    function(a, b, p) b + (a - b) / 2 * (cos(pi * p) + 1)
  up <- pct_start * total - 1
  down <- total - up - 1
  ifelse(step <= up, anneal(start, max_lr, step / up), anneal(max_lr, end, (step - up) / down))
}

test_that("lr_one_cycle follows the one-cycle closed form and cycles SGD's momentum", {
  opt <- two_groups(momentum = 0.9)
  total <- 20
  s <- lr_one_cycle(opt, max_lr = c(1, 0.1), total_steps = total)
  lrs <- opt$param_groups[[1]]$lr
  momenta <- opt$param_groups[[1]]$momentum
  lrs2 <- opt$param_groups[[2]]$lr
  for (i in seq_len(total)) {
    s$step()
    lrs <- c(lrs, opt$param_groups[[1]]$lr)
    lrs2 <- c(lrs2, opt$param_groups[[2]]$lr)
    momenta <- c(momenta, opt$param_groups[[1]]$momentum)
  }
  step <- 0:total
  expect_equal(lrs, one_cycle_closed(step, total, 1), tolerance = 1e-12)
  expect_equal(lrs2, one_cycle_closed(step, total, 0.1), tolerance = 1e-12)
  # Momentum runs opposite to the lr, between max_momentum and base_momentum.
  up <- 0.3 * total - 1
  down <- total - up - 1
  anneal <- function(a, b, p) b + (a - b) / 2 * (cos(pi * p) + 1)
  expect_equal(momenta, ifelse(step <= up, anneal(0.95, 0.85, step / up),
                               anneal(0.85, 0.95, (step - up) / down)), tolerance = 1e-12)
  expect_error(s$step(), "tried to step", class = "rcuda_value_error")
})

test_that("lr_one_cycle with epochs, linear annealing, and Adam's beta1 as momentum", {
  opt <- optim_adam(list(torch_randn(3)), lr = 1)
  s <- lr_one_cycle(opt, max_lr = 0.5, epochs = 2, steps_per_epoch = 5, pct_start = 0.4,
                    anneal_strategy = "linear", div_factor = 10, final_div_factor = 100)
  lrs <- opt$param_groups[[1]]$lr
  beta1 <- opt$param_groups[[1]]$betas[[1]]
  for (i in 1:10) {
    s$step()
    lrs <- c(lrs, opt$param_groups[[1]]$lr)
    beta1 <- c(beta1, opt$param_groups[[1]]$betas[[1]])
  }
  closed <- one_cycle_closed(0:10, 10, 0.5, pct_start = 0.4, div_factor = 10,
                             final_div_factor = 100, linear = TRUE)
  # The last step is past the decay's end, where the line goes below 0: the lr stays at 0.
  expect_lt(closed[11], 0)
  expect_equal(lrs, pmax(closed, 0), tolerance = 1e-12)
  expect_equal(beta1[1], 0.95)
  expect_equal(opt$param_groups[[1]]$betas[[2]], 0.999)
  up <- 0.4 * 10 - 1
  step <- 0:10
  expect_equal(beta1, ifelse(step <= up, 0.95 + (0.85 - 0.95) * step / up,
                             0.85 + (0.95 - 0.85) * (step - up) / (10 - up - 1)),
               tolerance = 1e-12)
})

test_that("lr_one_cycle matches torch for R's expected value and refuses bad arguments", {
  # torch for R's test (tests/testthat/test-optim-lr_scheduler.R there).
  opt <- optim_adam(list(torch_randn(10, 10)), lr = 1)
  s <- lr_one_cycle(opt, max_lr = 1, steps_per_epoch = 2, epochs = 3, cycle_momentum = TRUE,
                    div_factor = 1)
  for (i in 1:6) s$step()
  expect_equal(opt$param_groups[[1]]$lr, 0.1335607, tolerance = 1e-6)
  expect_error(lr_one_cycle(opt, max_lr = 1), "total_steps", class = "rcuda_value_error")
  expect_error(lr_one_cycle(opt, max_lr = 1, total_steps = 10, anneal_strategy = "nope"),
               "anneal_strategy", class = "rcuda_value_error")
  expect_error(lr_one_cycle(opt, max_lr = 1, total_steps = 10, pct_start = 2), "pct_start",
               class = "rcuda_value_error")
  expect_error(lr_one_cycle(opt, max_lr = c(1, 2), total_steps = 10), "expected 1 values",
               class = "rcuda_value_error")
  ada <- optim_adagrad(list(torch_randn(2)))
  expect_error(lr_one_cycle(ada, max_lr = 1, total_steps = 10), "cycle_momentum",
               class = "rcuda_value_error")
  expect_silent(lr_one_cycle(ada, max_lr = 1, total_steps = 10, cycle_momentum = FALSE))
})

plateau_lr <- function(metrics, ...) {
  opt <- optim_adam(list(torch_randn(2)), lr = 1)
  s <- lr_reduce_on_plateau(opt, ...)
  vapply(metrics, function(m) {
    s$step(m)
    opt$param_groups[[1]]$lr
  }, numeric(1))
}

test_that("lr_reduce_on_plateau reduces after patience bad epochs, as PyTorch", {
  # torch for R's cases, there matched to PyTorch: a constant metric of 5 epochs.
  flat <- rep(1, 5)
  expect_equal(plateau_lr(flat, factor = 0.1, patience = 1)[5], 1e-2)
  expect_equal(plateau_lr(flat, factor = 0.1, patience = 1, cooldown = 1)[5], 0.1)
  expect_equal(plateau_lr(flat, factor = 0.1, patience = 0)[5], 1e-4)
  expect_equal(plateau_lr(flat, factor = 0.1, mode = "max", patience = 1)[5], 1e-2)
  expect_equal(plateau_lr(flat, factor = 0.1, threshold_mode = "abs", patience = 1)[5], 1e-2)
  # By hand: patience 2; epochs 3..5 fail to beat 0.5 by the relative threshold, so the lr
  # drops at epoch 5 (the third bad epoch); 0.3 is better; then three bad ones again.
  metrics <- c(1, 0.5, 0.6, 0.5, 0.49999, 0.3, 0.31, 0.32, 0.33, 0.1)
  expect_equal(plateau_lr(metrics, factor = 0.5, patience = 2),
               c(1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25))
  # min_lr bounds the reduction; a tensor metric is read as a number.
  expect_equal(plateau_lr(rep(1, 6), factor = 0.1, patience = 0, min_lr = 0.05),
               c(1, 0.1, 0.05, 0.05, 0.05, 0.05))
  opt <- optim_sgd(list(torch_randn(2)), lr = 1)
  s <- lr_reduce_on_plateau(opt, patience = 0)
  expect_equal(s$get_last_lr(), 1)
  s$step(torch_tensor(2))
  s$step(torch_tensor(3))
  expect_equal(s$get_last_lr(), 0.1)
  expect_error(lr_reduce_on_plateau(opt, factor = 1), "factor", class = "rcuda_value_error")
  expect_error(lr_reduce_on_plateau(opt, mode = "up"), "mode", class = "rcuda_value_error")
})

test_that("a scheduler's lr is the one the next optimizer step uses", {
  p <- torch_tensor(c(1, 2), dtype = torch_double())
  opt <- optim_sgd(list(p), lr = 1)
  s <- lr_step(opt, step_size = 1, gamma = 0.5)
  want <- c(1, 2)
  for (e in 0:4) {
    set_grad(p, torch_tensor(c(1, -1), dtype = torch_double()))
    opt$step()
    want <- want - 0.5^e * c(1, -1)
    expect_equal(as_values(p), want, tolerance = 1e-12)
    s$step()
  }
})

test_that("lr_scheduler() makes custom schedulers; state_dict resumes a schedule", {
  halving <- lr_scheduler(
    "halving",
    initialize = function(optimizer, every = 1, last_epoch = -1) {
      self$every <- every
      super$initialize(optimizer, last_epoch)
    },
    get_lr = function() as.numeric(self$base_lrs) * 0.5^(self$last_epoch %/% self$every)
  )
  expect_true(inherits(halving, "lr_scheduler_generator"))
  expect_equal(names(formals(halving)), c("optimizer", "every", "last_epoch"))
  opt <- two_groups()
  got <- lr_sequence(opt, function(o) halving(o, every = 2), 6)
  e <- 0:6
  expect_equal(got, cbind(0.5 * 0.5^(e %/% 2), 0.02 * 0.5^(e %/% 2)))
  s <- halving(opt)
  expect_s3_class(s, "halving")

  opt <- optim_sgd(list(torch_randn(2)), lr = 1)
  s <- lr_step(opt, step_size = 2, gamma = 0.1)
  for (i in 1:3) s$step()
  saved <- s$state_dict()
  expect_false("optimizer" %in% names(saved))
  expect_equal(saved$last_epoch, 3)
  opt2 <- optim_sgd(list(torch_randn(2)), lr = opt$param_groups[[1]]$lr)
  s2 <- lr_step(opt2, step_size = 2, gamma = 0.1)
  s2$load_state_dict(saved)
  s$step()
  s2$step()
  expect_equal(opt2$param_groups[[1]]$lr, opt$param_groups[[1]]$lr)
  expect_equal(opt2$param_groups[[1]]$lr, 0.01)
  expect_error(lr_step(list(), 2), "optimizer", class = "rcuda_value_error")
  expect_error(lr_scheduler("nothing")(opt), "get_lr", class = "rcuda_not_implemented_error")
})

test_that("verbose schedulers report the lr", {
  opt <- optim_sgd(list(torch_randn(2)), lr = 1)
  expect_message(lr_lambda(opt, function(e) 1, verbose = TRUE), "group 1 to 1.0000")
  expect_message(lr_reduce_on_plateau(opt, patience = 0, verbose = TRUE)$step(1)$step(2),
                 "reducing learning rate of group 1")
})
