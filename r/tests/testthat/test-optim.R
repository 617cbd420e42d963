# Optimizers: trajectories against PyTorch's documented updates in plain R (helper-optim-
# reference.R), param groups, options changed between steps, state dicts, and errors.

expect_trajectory <- function(make_optimizer, reference, steps = 5, dtype = torch_double(),
                              tolerance = 1e-12, device = "cpu") {
  params <- random_params()
  grads <- random_grads(params, steps)
  got <- run_optimizer(make_optimizer, params, grads, dtype = dtype, device = device)
  want <- run_reference(reference, params, grads)
  for (t in seq_len(steps)) expect_equal(got[[t]], want[[t]], tolerance = tolerance)
}

# Each optimizer with its defaults and with every option away from its default.
optimizer_cases <- list(
  sgd = list(
    function(p) optim_sgd(p, lr = 0.1), reference_sgd(lr = 0.1)),
  sgd_momentum = list(
    function(p) optim_sgd(p, lr = 0.05, momentum = 0.9, dampening = 0.1, weight_decay = 0.01),
    reference_sgd(lr = 0.05, momentum = 0.9, dampening = 0.1, weight_decay = 0.01)),
  sgd_nesterov = list(
    function(p) optim_sgd(p, lr = 0.05, momentum = 0.8, weight_decay = 0.1, nesterov = TRUE),
    reference_sgd(lr = 0.05, momentum = 0.8, weight_decay = 0.1, nesterov = TRUE)),
  adam = list(function(p) optim_adam(p, lr = 0.01), reference_adam(lr = 0.01)),
  adam_options = list(
    function(p) optim_adam(p, lr = 0.02, betas = c(0.8, 0.99), eps = 1e-6, weight_decay = 0.1,
                           amsgrad = TRUE),
    reference_adam(lr = 0.02, betas = c(0.8, 0.99), eps = 1e-6, weight_decay = 0.1,
                   amsgrad = TRUE)),
  adamw = list(function(p) optim_adamw(p, lr = 0.01),
               reference_adam(lr = 0.01, weight_decay = 1e-2, decoupled = TRUE)),
  adamw_options = list(
    function(p) optim_adamw(p, lr = 0.03, betas = c(0.5, 0.9), weight_decay = 0.2, amsgrad = TRUE),
    reference_adam(lr = 0.03, betas = c(0.5, 0.9), weight_decay = 0.2, amsgrad = TRUE,
                   decoupled = TRUE)),
  rmsprop = list(function(p) optim_rmsprop(p), reference_rmsprop()),
  rmsprop_options = list(
    function(p) optim_rmsprop(p, lr = 0.03, alpha = 0.9, eps = 1e-6, weight_decay = 0.1,
                              momentum = 0.5, centered = TRUE),
    reference_rmsprop(lr = 0.03, alpha = 0.9, eps = 1e-6, weight_decay = 0.1, momentum = 0.5,
                      centered = TRUE)),
  adagrad = list(function(p) optim_adagrad(p), reference_adagrad()),
  adagrad_options = list(
    function(p) optim_adagrad(p, lr = 0.1, lr_decay = 0.1, weight_decay = 0.1,
                              initial_accumulator_value = 0.5, eps = 1e-8),
    reference_adagrad(lr = 0.1, lr_decay = 0.1, weight_decay = 0.1,
                      initial_accumulator_value = 0.5, eps = 1e-8))
)

for (name in names(optimizer_cases)) {
  local({
    case <- optimizer_cases[[name]]
    test_that(paste(name, "follows PyTorch's update in float64"), {
      expect_trajectory(case[[1]], case[[2]])
    })
    test_that(paste(name, "follows PyTorch's update in float32"), {
      expect_trajectory(case[[1]], case[[2]], dtype = torch_float(), tolerance = 1e-5)
    })
    test_that(paste(name, "on CUDA agrees with the CPU"), {
      skip_if_cuda_not_available()
      params <- random_params()
      grads <- random_grads(params, 5)
      for (dtype in list(torch_float(), torch_double())) {
        cpu <- run_optimizer(case[[1]], params, grads, dtype = dtype)
        gpu <- run_optimizer(case[[1]], params, grads, dtype = dtype, device = "cuda")
        tol <- if (dtype == torch_float()) 1e-5 else 1e-12
        for (t in seq_along(grads)) expect_equal(gpu[[t]], cpu[[t]], tolerance = tol)
      }
    })
  })
}

test_that("the optimizer classes and fields follow torch for R", {
  p <- torch_randn(3)
  opt <- optim_adam(list(p), lr = 0.1)
  expect_true(is_optimizer(opt))
  expect_false(is_optimizer(list()))
  expect_s3_class(opt, c("optim_adam", "torch_optimizer"))
  expect_equal(names(opt$param_groups[[1]]),
               c("params", "lr", "betas", "eps", "weight_decay", "amsgrad"))
  expect_equal(opt$param_groups[[1]]$betas, c(0.9, 0.999))
  expect_equal(opt$defaults$lr, 0.1)
  expect_equal(optim_adamw(list(p))$param_groups[[1]]$weight_decay, 1e-2)
  expect_equal(names(optim_sgd(p, lr = 1)$param_groups[[1]]),
               c("params", "lr", "momentum", "dampening", "weight_decay", "nesterov"))
  # A single tensor is one group of one parameter.
  expect_length(optim_sgd(p, lr = 1)$param_groups[[1]]$params, 1)
  expect_output(print(opt), "<optim_adam> 1 parameter in 1 param group")
  expect_error(opt$clone(), "optim_adam: an optimizer cannot be cloned")  # (not cloneable: optim.R)
})

test_that("param groups keep their own options", {
  params <- random_params()
  grads <- random_grads(params, 4)
  make <- function(p) {
    optim_adam(list(list(params = p[1:2], lr = 0.1, weight_decay = 0.5),
                    list(params = p[[3]], betas = c(0.5, 0.6))), lr = 0.01)
  }
  got <- run_optimizer(make, params, grads)
  first <- run_reference(reference_adam(lr = 0.1, weight_decay = 0.5), params[1:2],
                         lapply(grads, `[`, 1:2))
  second <- run_reference(reference_adam(lr = 0.01, betas = c(0.5, 0.6)), params[3],
                          lapply(grads, `[`, 3))
  for (t in seq_along(grads)) expect_equal(got[[t]], c(first[[t]], second[[t]]), tolerance = 1e-12)
  opt <- make(lapply(params, torch_tensor))
  expect_equal(opt$param_groups[[1]]$lr, 0.1)
  expect_equal(opt$param_groups[[2]]$lr, 0.01)
  expect_equal(opt$param_groups[[2]]$weight_decay, 0)
})

test_that("an lr or another option changed between steps applies to the next step", {
  params <- random_params()
  grads <- random_grads(params, 6)
  lrs <- c(0.1, 0.1, 0.01, 0.01, 0.5, 0.5)
  momenta <- c(0.9, 0.9, 0.9, 0.5, 0.5, 0.5)
  tensors <- lapply(params, torch_tensor, dtype = torch_double())
  opt <- optim_sgd(tensors, lr = 0.1, momentum = 0.9)
  want <- params
  buffers <- list()
  for (t in seq_along(grads)) {
    opt$param_groups[[1]]$lr <- lrs[t]
    opt$param_groups[[1]]$momentum <- momenta[t]
    for (i in seq_along(tensors)) {
      set_grad(tensors[[i]], torch_tensor(grads[[t]][[i]], dtype = torch_double()))
      g <- grads[[t]][[i]]
      buffers[[i]] <- if (t == 1) g else momenta[t] * buffers[[i]] + g
      want[[i]] <- want[[i]] - lrs[t] * buffers[[i]]
    }
    opt$step()
    expect_equal(lapply(tensors, as_values), want, tolerance = 1e-12)
  }
  expect_equal(opt$state_dict()$param_groups[[1]]$lr, 0.5)
  # Keys the optimizer does not know ride along in the R list.
  opt$param_groups[[1]]$my_tag <- "x"
  expect_equal(opt$param_groups[[1]]$my_tag, "x")
  opt$step()
})

test_that("add_param_group adds a group with the defaults filled in", {
  params <- random_params()
  grads <- random_grads(params, 3)
  tensors <- lapply(params, torch_tensor, dtype = torch_double())
  opt <- optim_rmsprop(tensors[1:2], lr = 0.01)
  opt$add_param_group(list(params = tensors[[3]], lr = 0.05, centered = TRUE))
  expect_length(opt$param_groups, 2)
  expect_equal(opt$param_groups[[2]]$alpha, 0.99)
  for (t in seq_along(grads)) {
    for (i in 1:3) set_grad(tensors[[i]], torch_tensor(grads[[t]][[i]], dtype = torch_double()))
    opt$step()
  }
  want <- c(run_reference(reference_rmsprop(lr = 0.01), params[1:2], lapply(grads, `[`, 1:2))[[3]],
            run_reference(reference_rmsprop(lr = 0.05, centered = TRUE), params[3],
                          lapply(grads, `[`, 3))[[3]])
  expect_equal(lapply(tensors, as_values), want, tolerance = 1e-12)
  expect_error(opt$add_param_group(list(params = tensors[[1]])), "only once",
               class = "rcuda_value_error")
  expect_error(opt$add_param_group(list(tensors[[1]])), "params", class = "rcuda_value_error")
  expect_error(opt$add_param_group(list(params = torch_randn(2), lr = -1)), "learning rate",
               class = "rcuda_value_error")
  expect_length(opt$param_groups, 2)
})

test_that("parameters without a gradient are skipped; zero_grad clears or zeroes", {
  a <- torch_tensor(c(1, 2), dtype = torch_double())
  b <- torch_tensor(c(3, 4), dtype = torch_double())
  opt <- optim_sgd(list(a, b), lr = 0.5)
  set_grad(a, torch_tensor(c(1, -1), dtype = torch_double()))
  opt$step()
  expect_equal(as_values(a), c(0.5, 2.5))
  expect_equal(as_values(b), c(3, 4))
  opt$zero_grad()
  expect_equal(as_values(get_grad(a)), c(0, 0))
  expect_null(get_grad(b))
  opt$zero_grad(set_to_none = TRUE)
  expect_null(get_grad(a))
  opt$step()
  expect_equal(as_values(a), c(0.5, 2.5))
})

test_that("step(closure) runs the closure first and returns its loss", {
  p <- torch_tensor(c(1, -2, 3), dtype = torch_double())
  opt <- optim_sgd(list(p), lr = 0.25)
  closure <- function() {
    x <- as_values(p)
    set_grad(p, torch_tensor(2 * x, dtype = torch_double()))
    sum(x^2)
  }
  expect_equal(opt$step(closure), 14)
  expect_equal(as_values(p), c(0.5, -1, 1.5))
  expect_null(opt$step())
})

test_that("a strided parameter (a transposed view) is updated in place", {
  base <- random_array(3, 4)
  g <- random_array(4, 3)
  x <- torch_tensor(base, dtype = torch_double())
  view <- x$t()
  opt <- optim_adam(list(view), lr = 0.1)
  set_grad(view, torch_tensor(g, dtype = torch_double()))
  opt$step()
  want <- run_reference(reference_adam(lr = 0.1), list(t(base)), list(list(g)))[[1]][[1]]
  expect_equal(as_values(view), want, tolerance = 1e-12)
  expect_equal(as_values(x), t(want), tolerance = 1e-12)
})

test_that("an empty parameter steps without error", {
  p <- torch_zeros(0, dtype = torch_double())
  opt <- optim_adam(list(p, torch_randn(2)))
  set_grad(p, torch_zeros(0, dtype = torch_double()))
  expect_null(opt$step())
  expect_equal(p$numel(), 0)
})

test_that("state_dict has torch for R's layout", {
  tensors <- lapply(random_params(), torch_tensor, dtype = torch_double())
  opt <- optim_adam(list(list(params = tensors[1:2]), list(params = tensors[3], lr = 0.1)))
  sd <- opt$state_dict()
  expect_equal(names(sd), c("param_groups", "state"))
  expect_length(sd$state, 0)
  set_grad(tensors[[1]], torch_ones_like(tensors[[1]]))
  set_grad(tensors[[3]], torch_ones_like(tensors[[3]]))
  opt$step()
  sd <- opt$state_dict()
  expect_equal(sd$param_groups[[1]]$params, 1:2)
  expect_equal(sd$param_groups[[2]]$params, 3L)
  expect_equal(sd$param_groups[[2]]$lr, 0.1)
  expect_equal(names(sd$state), c("1", "3"))
  expect_equal(sort(names(sd$state[["1"]])), c("exp_avg", "exp_avg_sq", "step"))
  expect_equal(sd$state[["3"]]$step, 1)
  # exp_avg after one step of gradient 1: (1 - beta1) * 1.
  expect_equal(as_values(sd$state[["1"]]$exp_avg), array(0.1, c(3, 4)), tolerance = 1e-12)
  sgd <- optim_sgd(tensors, lr = 1, momentum = 0.9)
  sgd$step()
  expect_equal(names(sgd$state_dict()$state[["1"]]), "momentum_buffer")
})

for (name in names(optimizer_cases)) {
  local({
    make <- optimizer_cases[[name]][[1]]
    test_that(paste(name, "state_dict round trip: a fresh optimizer continues identically"), {
      params <- random_params()
      grads <- random_grads(params, 6)
      tensors <- lapply(params, torch_tensor, dtype = torch_double())
      opt <- make(tensors)
      feed <- function(ts, t) {
        for (i in seq_along(ts)) set_grad(ts[[i]], torch_tensor(grads[[t]][[i]], dtype = torch_double()))
      }
      for (t in 1:3) {
        feed(tensors, t)
        opt$step()
      }
      copies <- lapply(tensors, function(x) torch_tensor(as_values(x), dtype = torch_double()))
      fresh <- make(copies)
      fresh$param_groups[[1]]$lr <- 123  # overwritten by the loaded options
      fresh$load_state_dict(opt$state_dict())
      expect_equal(fresh$param_groups[[1]]$lr, opt$param_groups[[1]]$lr)
      for (t in 4:6) {
        feed(tensors, t)
        feed(copies, t)
        opt$step()
        fresh$step()
        expect_identical(lapply(copies, as_values), lapply(tensors, as_values))
      }
    })
  })
}

test_that("load_state_dict copies the state and refuses a dict that does not fit", {
  a <- torch_tensor(c(1, 2), dtype = torch_double())
  opt <- optim_sgd(list(a), lr = 0.1, momentum = 0.9)
  set_grad(a, torch_tensor(c(1, 1), dtype = torch_double()))
  opt$step()
  sd <- opt$state_dict()
  b <- torch_tensor(c(1, 2), dtype = torch_float())
  other <- optim_sgd(list(b), lr = 0.1, momentum = 0.9)
  other$load_state_dict(sd)
  # Loaded state is a copy in the parameter's dtype.
  buf <- other$state_dict()$state[["1"]]$momentum_buffer
  expect_equal(buf$dtype, torch_float())
  opt$step()
  expect_equal(as_values(buf), c(1, 1))
  two <- optim_sgd(list(torch_randn(2), torch_randn(2)), lr = 0.1)
  expect_error(two$load_state_dict(sd), "parameters", class = "rcuda_value_error")
  expect_error(opt$load_state_dict(list(state = list())), "param_groups",
               class = "rcuda_value_error")
  bad <- sd
  bad$state[["1"]]$momentum_buffer <- torch_zeros(3, dtype = torch_double())
  expect_error(opt$load_state_dict(bad), "shape", class = "rcuda_shape_error")
  bad <- sd
  names(bad$state[["1"]]) <- "exp_avg"
  expect_error(opt$load_state_dict(bad), "unknown state 'exp_avg'", class = "rcuda_value_error")
  bad <- sd
  bad$param_groups[[1]]$lr <- -1
  expect_error(opt$load_state_dict(bad), "learning rate", class = "rcuda_value_error")
  # Nothing changed by the refused loads.
  expect_equal(opt$param_groups[[1]]$lr, 0.1)
  before <- as_values(a)
  opt$step()
  expect_equal(as_values(a), before - 0.1 * (0.9 * 1.9 + 1))
})

test_that("optimizers refuse bad parameters and options with clear errors", {
  p <- torch_randn(3)
  q <- torch_randn(2)
  expect_error(optim_adam(list(p, q, p)), "parameter 3 of param group 1 is also parameter 1",
               class = "rcuda_value_error")
  expect_error(optim_adam(list(list(params = list(p)), list(params = list(q, p)))),
               "parameter 2 of param group 2 is also parameter 1 of param group 1",
               class = "rcuda_value_error")
  expect_error(optim_adam(list(p, "a")), "parameter 2 of param group 1 is an R character",
               class = "rcuda_value_error")
  expect_error(optim_adam(list()), "non-empty", class = "rcuda_value_error")
  expect_error(optim_adam(3), "params must be", class = "rcuda_value_error")
  expect_error(optim_sgd(list(p)), "has no lr", class = "rcuda_value_error")
  expect_error(optim_sgd(list(p), lr = -0.1), "invalid learning rate: lr = -0.1",
               class = "rcuda_value_error")
  expect_error(optim_adam(list(p), lr = -1), "invalid learning rate", class = "rcuda_value_error")
  expect_error(optim_adam(list(p), betas = c(1, 0.9)), "beta parameter at index 1",
               class = "rcuda_value_error")
  expect_error(optim_adamw(list(p), betas = c(0.9, -0.1)), "beta parameter at index 2",
               class = "rcuda_value_error")
  expect_error(optim_adam(list(p), betas = 0.9), "betas must be two numbers",
               class = "rcuda_value_error")
  expect_error(optim_adam(list(p), eps = -1), "epsilon", class = "rcuda_value_error")
  expect_error(optim_adam(list(p), amsgrad = NA), "TRUE or FALSE", class = "rcuda_value_error")
  expect_error(optim_sgd(list(p), lr = 0.1, nesterov = TRUE), "Nesterov",
               class = "rcuda_value_error")
  expect_error(optim_sgd(list(p), lr = 0.1, momentum = -1), "momentum",
               class = "rcuda_value_error")
  expect_error(optim_rmsprop(list(p), alpha = -1), "alpha", class = "rcuda_value_error")
  expect_error(optim_adagrad(list(p), lr_decay = -1), "lr_decay", class = "rcuda_value_error")
  expect_error(optim_sgd(list(p), lr = "0.1"), "single number", class = "rcuda_value_error")
  expect_error(optim_sgd(list(torch_tensor(1:3)), lr = 0.1), "dtype", class = "rcuda_dtype_error")

  opt <- optim_adam(list(p, q))
  expect_error(opt$param_groups[[1]]$lr <- -1, "invalid learning rate: lr = -1 in param group 1",
               class = "rcuda_value_error")
  expect_error(opt$param_groups[[1]]$betas <- c(0.9, 1), "index 2", class = "rcuda_value_error")
  expect_error(opt$param_groups[[1]]$params <- list(q, p), "differ",
               class = "rcuda_value_error")
  expect_error(opt$param_groups <- list(), "list of 1 groups", class = "rcuda_value_error")
  # A refused change leaves the optimizer as it was.
  expect_equal(opt$param_groups[[1]]$lr, 1e-3)
  expect_equal(opt$param_groups[[1]]$betas, c(0.9, 0.999))
  set_grad(p, torch_ones(3, dtype = torch_double()))
  expect_error(opt$step(), "dtype", class = "rcuda_dtype_error")
})
