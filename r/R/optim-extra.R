# The less used optimizers of torch for R (optim_adadelta, optim_asgd, optim_rprop and
# optim_lbfgs).
#
# Note [Optimizers stepped in R]
# rcuda's own optimizers (optim.R) run one fused engine call per step. These four are used too
# seldom to earn engine code: each steps in R, parameter by parameter, with in-place tensor ops
# under no-grad mode, as torch for R does. They share the engine optimizers' R face (the
# torch_optimizer class, param_groups with its checks, state_dict()'s layout), so schedulers,
# zero_grad() and load_state_dict() work the same on both; only their state lives in R.
# cuda_amp_grad_scaler() steps engine optimizers only.

OptimizerR <- R6::R6Class(
  NULL,
  inherit = Optimizer,
  lock_objects = FALSE,
  cloneable = FALSE,
  public = list(
    initialize = function(params, defaults) {
      self$defaults <- defaults
      groups <- param_groups_from(params, private$who)
      groups <- lapply(seq_along(groups), function(i) private$complete(groups[[i]], i))
      check_r_params(groups, private$who)
      private$groups <- groups
      private$state <- list()
    },
    # Runs the closure with grad mode on, then updates every parameter that has a gradient.
    step = function(closure = NULL) {
      local_no_grad()
      loss <- if (!is.null(closure)) with_enable_grad(closure())
      k <- 0L
      for (group in private$groups) {
        for (param in group$params) {
          k <- k + 1L
          grad <- param$grad
          if (is_undefined_tensor(grad)) next
          private$state[[k]] <- private$update(group, param, grad, private$state_of(k))
        }
      }
      if (is.null(closure)) invisible(NULL) else loss
    },
    zero_grad = function(set_to_none = FALSE) {
      for (p in all_params(private$groups)) {
        if (is_undefined_tensor(p$grad)) next
        if (isTRUE(set_to_none)) p$grad <- NULL else p$grad$zero_()
      }
      invisible(self)
    },
    # As the engine optimizers' (optim.R): params as 1-based numbers, state named by them.
    state_dict = function() {
      groups <- private$numbered_groups()
      has <- which(!vapply(private$state, is.null, logical(1)))
      state <- private$state[has]
      names(state) <- as.character(has)
      list(param_groups = groups, state = state)
    },
    # Copies the state's tensors to each parameter's device and dtype; nothing changes when
    # the dict does not fit.
    load_state_dict = function(state_dict) {
      who <- paste0(private$who, "$load_state_dict")
      groups <- private$groups_from_state_dict(state_dict, who)
      params <- all_params(groups)
      state <- list()
      for (key in names(state_dict$state)) {
        k <- suppressWarnings(as.integer(key))
        if (is.na(k) || k < 1 || k > length(params)) {
          value_error(who, ": state '", key, "' names no parameter (1 to ", length(params), ")")
        }
        state[[k]] <- private$load_state(state_dict$state[[key]], params[[k]], who)
      }
      private$groups <- groups
      private$state <- state
      invisible(self)
    }
  ),
  private = list(
    state = NULL,
    # A new group's parameters must be new to the optimizer (check_r_params).
    add_group = function(group) {
      groups <- c(private$groups, list(group))
      check_r_params(groups, private$who)
      private$groups <- groups
    },
    # Groups may change their options, not their parameters: the state is kept per parameter.
    set_groups = function(groups) {
      for (i in seq_along(groups)) {
        mine <- private$groups[[i]]$params
        same <- length(groups[[i]]$params) == length(mine) &&
          all(vapply(seq_along(mine), function(j) identical(groups[[i]]$params[[j]], mine[[j]]),
                     logical(1)))
        if (!same) {
          value_error(private$who, ": the params of param group ", i, " differ from the ",
                      "optimizer's; param_groups may change options only (use ",
                      "add_param_group() for new parameters)")
        }
      }
      private$groups <- groups
    },
    # The names of a parameter's state; those in param_shaped are tensors shaped as it.
    state_names = character(),
    param_shaped = character(),
    state_of = function(k) if (k <= length(private$state)) private$state[[k]],
    update = function(group, param, grad, state) NULL,
    load_state = function(entry, param, who) {
      unknown <- setdiff(names(entry), private$state_names)
      if (length(unknown) > 0) value_error(who, ": unknown state '", unknown[[1]], "'")
      for (name in intersect(names(entry), private$param_shaped)) {
        if (!is_torch_tensor(entry[[name]]) || !identical(entry[[name]]$shape, param$shape)) {
          shape_error(who, ": state '", name, "' must be a tensor of the parameter's shape (",
                      paste(param$shape, collapse = ", "), ")")
        }
      }
      copy_state(entry, param)
    }
  )
)

# A copy of the state's tensors (also inside lists: LBFGS's history) in the parameter's
# dtype and on its device, so that the loaded optimizer shares nothing with the dict.
copy_state <- function(x, param) {
  if (is_torch_tensor(x)) return(x$to(dtype = param$dtype, device = param$device, copy = TRUE))
  if (is.list(x)) return(lapply(x, copy_state, param = param))
  x
}

all_params <- function(groups) unlist(lapply(groups, `[[`, "params"), recursive = FALSE)

check_r_params <- function(groups, who) {
  params <- all_params(groups)
  for (i in seq_along(params)) {
    if (!is_torch_tensor(params[[i]])) {
      value_error(who, ": params must be tensors, parameter ", i, " is a ",
                  class(params[[i]])[[1]])
    }
    for (j in seq_len(i - 1)) {
      if (identical(params[[i]], params[[j]])) {
        value_error(who, ": parameter ", i, " is also parameter ", j,
                    "; a parameter may appear only once in an optimizer")
      }
    }
  }
}

option_pair <- function(group, name, who, index) {
  v <- group[[name]]
  if (!is.numeric(v) || length(v) != 2 || anyNA(v)) {
    value_error(who, ": param group ", index, ": ", name, " must be two numbers, got ",
                if (is.null(v)) "nothing" else paste(format(v), collapse = " "))
  }
  v
}

# ---- Adadelta ------------------------------------------------------------------------------

OptimAdadelta <- R6::R6Class(
  "optim_adadelta",
  inherit = OptimizerR,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_adadelta",
    state_names = c("step", "square_avg", "acc_delta"),
    param_shaped = c("square_avg", "acc_delta"),
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      rho <- option_number(group, "rho", who, index)
      if (rho < 0 || rho > 1) invalid_option(who, index, "rho value", "rho", rho, "0 <= rho <= 1")
      option_nonnegative(group, "eps", "epsilon value", who, index)
      option_nonnegative(group, "weight_decay", "weight_decay value", who, index)
    },
    update = function(group, param, grad, state) {
      if (is.null(state)) {
        state <- list(step = 0, square_avg = torch_zeros_like(param),
                      acc_delta = torch_zeros_like(param))
      }
      rho <- group$rho
      eps <- group$eps
      state$step <- state$step + 1
      if (group$weight_decay != 0) grad <- grad$add(param, alpha = group$weight_decay)
      state$square_avg$mul_(rho)$add_(grad * grad, alpha = 1 - rho)
      std <- state$square_avg$add(eps)$sqrt()
      delta <- state$acc_delta$add(eps)$sqrt()$div(std)$mul(grad)
      param$add_(delta, alpha = -group$lr)
      state$acc_delta$mul_(rho)$add_(delta * delta, alpha = 1 - rho)
      state
    }
  )
)

#' @export
optim_adadelta <- function(params, lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0) {
  OptimAdadelta$new(params, defaults = list(lr = lr, rho = rho, eps = eps,
                                            weight_decay = weight_decay))
}

# ---- ASGD ----------------------------------------------------------------------------------

OptimASGD <- R6::R6Class(
  "optim_asgd",
  inherit = OptimizerR,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_asgd",
    state_names = c("step", "eta", "mu", "ax"),
    param_shaped = "ax",
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      option_number(group, "lambda", who, index)
      option_number(group, "alpha", who, index)
      option_number(group, "t0", who, index)
      option_nonnegative(group, "weight_decay", "weight_decay value", who, index)
    },
    # PyTorch's ASGD: the average ax follows the parameter from step t0 on. (torch for R's
    # averaging adds to the number mu where PyTorch adds to ax, and fails once step > t0.)
    update = function(group, param, grad, state) {
      if (is.null(state)) {
        state <- list(step = 0, eta = group$lr, mu = 1, ax = torch_zeros_like(param))
      }
      state$step <- state$step + 1
      if (group$weight_decay != 0) grad <- grad$add(param, alpha = group$weight_decay)
      param$mul_(1 - group$lambda * state$eta)
      param$add_(grad, alpha = -state$eta)
      if (state$mu != 1) {
        state$ax$add_(param$sub(state$ax)$mul(state$mu))
      } else {
        state$ax$copy_(param)
      }
      state$eta <- group$lr / (1 + group$lambda * group$lr * state$step)^group$alpha
      state$mu <- 1 / max(1, state$step - group$t0)
      state
    }
  )
)

#' @export
optim_asgd <- function(params, lr = 1e-2, lambda = 1e-4, alpha = 0.75, t0 = 1e6,
                       weight_decay = 0) {
  OptimASGD$new(params, defaults = list(lr = lr, lambda = lambda, alpha = alpha, t0 = t0,
                                        weight_decay = weight_decay))
}

# ---- Rprop ---------------------------------------------------------------------------------

OptimRprop <- R6::R6Class(
  "optim_rprop",
  inherit = OptimizerR,
  lock_objects = FALSE,
  cloneable = FALSE,
  private = list(
    who = "optim_rprop",
    state_names = c("step", "prev", "step_size"),
    param_shaped = c("prev", "step_size"),
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      etas <- option_pair(group, "etas", who, index)
      if (etas[[1]] < 0 || etas[[1]] > 1 || etas[[2]] < 1) {
        invalid_option(who, index, "eta values", "etas", paste(etas, collapse = ", "),
                       "0 <= etaminus <= 1 <= etaplus")
      }
      option_pair(group, "step_sizes", who, index)
    },
    update = function(group, param, grad, state) {
      if (is.null(state)) {
        state <- list(step = 0, prev = torch_zeros_like(param),
                      step_size = torch_full_like(param, group$lr))
      }
      etaminus <- group$etas[[1]]
      etaplus <- group$etas[[2]]
      state$step <- state$step + 1
      # In PyTorch's order, so that an eta of 0 or 1 maps as it does there.
      sign <- grad$mul(state$prev)$sign()
      sign$masked_fill_(sign$gt(0), etaplus)
      sign$masked_fill_(sign$lt(0), etaminus)
      sign$masked_fill_(sign$eq(0), 1)
      state$step_size$mul_(sign)$clamp_(group$step_sizes[[1]], group$step_sizes[[2]])
      # After a sign change the step is skipped, and the next step sees no previous gradient.
      grad <- grad$clone()
      grad$masked_fill_(sign$eq(etaminus), 0)
      param$add_(grad$sign()$mul(state$step_size), alpha = -1)
      state$prev$copy_(grad)
      state
    }
  )
)

#' @export
optim_rprop <- function(params, lr = 1e-2, etas = c(0.5, 1.2), step_sizes = c(1e-6, 50)) {
  OptimRprop$new(params, defaults = list(lr = lr, etas = etas, step_sizes = step_sizes))
}

# ---- L-BFGS --------------------------------------------------------------------------------

# PyTorch's LBFGS (torch/optim/lbfgs.py, minFunc's algorithm), on the parameters flattened
# into one vector; scalars (losses, directional derivatives, step lengths) are R numbers.
# Its state (history and counters) is global, kept as the first parameter's. Scaled vectors
# are added as x$add_(y$mul(a)), not with alpha = a, which must be finite: a NaN loss has to
# run through (as in PyTorch) rather than fail.
OptimLBFGS <- R6::R6Class(
  "optim_lbfgs",
  inherit = OptimizerR,
  lock_objects = FALSE,
  cloneable = FALSE,
  public = list(
    initialize = function(params, defaults) {
      super$initialize(params, defaults)
      if (length(private$groups) != 1) {
        value_error("optim_lbfgs: LBFGS doesn't support per-parameter options (parameter ",
                    "groups); got ", length(private$groups), " param groups")
      }
    },
    add_param_group = function(param_group) {
      value_error("optim_lbfgs$add_param_group: LBFGS doesn't support per-parameter options ",
                  "(parameter groups)")
    },
    step = function(closure) {
      if (missing(closure) || !is.function(closure)) {
        value_error("optim_lbfgs$step: closure must be a function that zeroes the gradients, ",
                    "computes the loss, calls $backward() on it and returns it")
      }
      local_no_grad()
      g <- private$groups[[1]]
      tolerance_change <- g$tolerance_change
      small <- function(x) !is.na(x) && x <= g$tolerance_grad
      st <- private$state_of(1L)
      if (is.null(st)) st <- list(func_evals = 0, n_iter = 0)

      orig_loss <- with_enable_grad(closure())
      loss <- as.numeric(orig_loss$item())
      current_evals <- 1
      st$func_evals <- st$func_evals + 1
      flat_grad <- private$flat_grad()
      opt_cond <- small(flat_grad$abs()$max()$item())
      if (opt_cond) {
        private$state[[1]] <- st
        return(orig_loss)
      }
      d <- st$d
      t <- st$t
      old_dirs <- st$old_dirs
      old_stps <- st$old_stps
      ro <- st$ro
      H_diag <- st$H_diag
      prev_flat_grad <- st$prev_flat_grad
      prev_loss <- st$prev_loss

      n_iter <- 0
      while (n_iter < g$max_iter) {
        n_iter <- n_iter + 1
        st$n_iter <- st$n_iter + 1
        # The descent direction: -H g, H the L-BFGS inverse Hessian of the history.
        if (st$n_iter == 1) {
          d <- flat_grad$neg()
          old_dirs <- list()
          old_stps <- list()
          ro <- numeric()
          H_diag <- 1
        } else {
          y <- flat_grad$sub(prev_flat_grad)
          s <- d$mul(t)
          ys <- flat_dot(y, s)
          if (!is.na(ys) && ys > 1e-10) {
            if (length(old_dirs) == g$history_size) {
              old_dirs <- old_dirs[-1]
              old_stps <- old_stps[-1]
              ro <- ro[-1]
            }
            old_dirs[[length(old_dirs) + 1]] <- y
            old_stps[[length(old_stps) + 1]] <- s
            ro[[length(ro) + 1]] <- 1 / ys
            H_diag <- ys / flat_dot(y, y)
          }
          num_old <- length(old_dirs)
          al <- numeric(num_old)
          q <- flat_grad$neg()
          for (i in rev(seq_len(num_old))) {
            al[[i]] <- flat_dot(old_stps[[i]], q) * ro[[i]]
            q$sub_(old_dirs[[i]]$mul(al[[i]]))
          }
          d <- q$mul(H_diag)
          for (i in seq_len(num_old)) {
            be_i <- flat_dot(old_dirs[[i]], d) * ro[[i]]
            d$add_(old_stps[[i]]$mul(al[[i]] - be_i))
          }
        }
        prev_flat_grad <- flat_grad$clone()
        prev_loss <- loss

        # The step length: a first guess, then the line search if any.
        t <- g$lr
        if (st$n_iter == 1) {
          # Python's min(1, x), which is 1 for a NaN x (R's min() would give NaN).
          shrink <- 1 / flat_grad$abs()$sum()$item()
          if (!is.na(shrink) && shrink < 1) t <- shrink * g$lr
        }
        gtd <- flat_dot(flat_grad, d)
        if (!is.na(gtd) && gtd > -tolerance_change) break
        ls_func_evals <- 0
        if (!is.null(g$line_search_fn)) {
          x_init <- lapply(private$params(), function(p) p$clone())
          obj_func <- function(t, d) private$directional_evaluate(closure, x_init, t, d)
          ret <- lbfgs_strong_wolfe(obj_func, t, d, loss, flat_grad, gtd,
                                    tolerance_change = tolerance_change)
          loss <- ret$f
          flat_grad <- ret$g
          t <- ret$t
          ls_func_evals <- ret$evals
          private$add_flat(t, d)
          opt_cond <- small(flat_grad$abs()$max()$item())
        } else {
          private$add_flat(t, d)
          # Not re-evaluated after the last iteration: stochastic losses gain nothing by it.
          if (n_iter != g$max_iter) {
            loss <- as.numeric(with_enable_grad(closure())$item())
            flat_grad <- private$flat_grad()
            opt_cond <- small(flat_grad$abs()$max()$item())
            ls_func_evals <- 1
          }
        }
        current_evals <- current_evals + ls_func_evals
        st$func_evals <- st$func_evals + ls_func_evals

        if (n_iter == g$max_iter || current_evals >= g$max_eval || opt_cond) break
        step_change <- d$mul(t)$abs()$max()$item()
        if (!is.na(step_change) && step_change <= tolerance_change) break
        if (!is.na(loss) && abs(loss - prev_loss) < tolerance_change) break
      }
      st[c("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")] <-
        list(d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss)
      private$state[[1]] <- st
      orig_loss
    }
  ),
  private = list(
    who = "optim_lbfgs",
    state_names = c("func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                    "prev_flat_grad", "prev_loss"),
    check_group = function(group, index) {
      who <- private$who
      option_nonnegative(group, "lr", "learning rate", who, index)
      for (name in c("max_iter", "max_eval", "history_size")) {
        v <- option_number(group, name, who, index)
        if (v < 1) invalid_option(who, index, name, name, v, paste(name, ">= 1"))
      }
      option_nonnegative(group, "tolerance_grad", "tolerance_grad value", who, index)
      option_nonnegative(group, "tolerance_change", "tolerance_change value", who, index)
      ls <- group$line_search_fn
      if (!is.null(ls) && !identical(ls, "strong_wolfe")) {
        value_error(who, ": line_search_fn must be NULL or \"strong_wolfe\", got ",
                    paste(format(ls), collapse = " "))
      }
    },
    params = function() private$groups[[1]]$params,
    flat_grad = function() {
      torch_cat(lapply(private$params(), function(p) {
        grad <- p$grad
        if (is_undefined_tensor(grad)) torch_zeros(p$numel(), dtype = p$dtype, device = p$device)
        else grad$reshape(-1)
      }), dim = 1)
    },
    # params += step * update, update a flat vector.
    add_flat = function(step, update) {
      offset <- 1
      for (p in private$params()) {
        n <- p$numel()
        p$add_(update$narrow(1, offset, n)$view(p$shape)$mul(step))
        offset <- offset + n
      }
    },
    # The loss and flat gradient at x + t * d; the parameters are back at x afterwards.
    directional_evaluate = function(closure, x, t, d) {
      private$add_flat(t, d)
      loss <- as.numeric(with_enable_grad(closure())$item())
      flat_grad <- private$flat_grad()
      for (i in seq_along(x)) private$params()[[i]]$copy_(x[[i]])
      list(loss, flat_grad)
    }
  )
)

#' @export
optim_lbfgs <- function(params, lr = 1, max_iter = 20, max_eval = NULL, tolerance_grad = 1e-7,
                        tolerance_change = 1e-9, history_size = 100, line_search_fn = NULL) {
  if (is.null(max_eval)) max_eval <- as.integer(max_iter * 5 / 4)
  OptimLBFGS$new(params, defaults = list(
    lr = lr, max_iter = max_iter, max_eval = max_eval, tolerance_grad = tolerance_grad,
    tolerance_change = tolerance_change, history_size = history_size,
    line_search_fn = line_search_fn
  ))
}

flat_dot <- function(a, b) as.numeric((a * b)$sum()$item())

# The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, within bounds
# (PyTorch's _cubic_interpolate); the middle of the bounds when the cubic has none.
lbfgs_cubic_interpolate <- function(x1, f1, g1, x2, f2, g2, bounds = sort(c(x1, x2))) {
  d1 <- g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
  d2_square <- d1^2 - g1 * g2
  if (is.na(d2_square) || d2_square < 0) return((bounds[[1]] + bounds[[2]]) / 2)
  d2 <- sqrt(d2_square)
  min_pos <- if (x1 <= x2) {
    x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
  } else {
    x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
  }
  min(max(min_pos, bounds[[1]]), bounds[[2]])
}

# PyTorch's _strong_wolfe line search along d from the current point (loss f, gradient g,
# directional derivative gtd), starting at step t. obj_func(t, d) gives list(loss, gradient)
# at step t. Returns the accepted step t, its loss f and gradient g, and evals (calls made).
lbfgs_strong_wolfe <- function(obj_func, t, d, f, g, gtd, c1 = 1e-4, c2 = 0.9,
                               tolerance_change = 1e-9, max_ls = 25) {
  d_norm <- d$abs()$max()$item()
  g <- g$clone()
  ret <- obj_func(t, d)
  f_new <- ret[[1]]
  g_new <- ret[[2]]
  evals <- 1
  gtd_new <- flat_dot(g_new, d)
  t_prev <- 0
  f_prev <- f
  g_prev <- g
  gtd_prev <- gtd
  done <- FALSE
  ls_iter <- 0
  true <- function(x) !is.na(x) && x

  # Bracketing: a step satisfying the conditions, or an interval holding one.
  while (ls_iter < max_ls) {
    # PyTorch's order of the three tests matters: a step both flat enough and uphill is taken.
    armijo_fails <- true(f_new > f + c1 * t * gtd) || (ls_iter > 1 && true(f_new >= f_prev))
    if (!armijo_fails && true(abs(gtd_new) <= -c2 * gtd)) {
      bracket <- t
      bracket_f <- f_new
      bracket_g <- list(g_new)
      done <- TRUE
      break
    }
    if (armijo_fails || true(gtd_new >= 0)) {
      bracket <- c(t_prev, t)
      bracket_f <- c(f_prev, f_new)
      bracket_g <- list(g_prev, g_new$clone())
      bracket_gtd <- c(gtd_prev, gtd_new)
      break
    }
    min_step <- t + 0.01 * (t - t_prev)
    max_step <- t * 10
    tmp <- t
    t <- lbfgs_cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                 bounds = c(min_step, max_step))
    t_prev <- tmp
    f_prev <- f_new
    g_prev <- g_new$clone()
    gtd_prev <- gtd_new
    ret <- obj_func(t, d)
    f_new <- ret[[1]]
    g_new <- ret[[2]]
    evals <- evals + 1
    gtd_new <- flat_dot(g_new, d)
    ls_iter <- ls_iter + 1
  }
  if (ls_iter == max_ls) {
    bracket <- c(0, t)
    bracket_f <- c(f, f_new)
    bracket_g <- list(g, g_new)
  }

  # Zoom: shrink the bracket until a point satisfies the strong Wolfe conditions.
  low <- if (true(bracket_f[[1]] <= bracket_f[[length(bracket_f)]])) 1 else 2
  high <- 3 - low
  insuf_progress <- FALSE
  while (!done && ls_iter < max_ls) {
    if (abs(bracket[[2]] - bracket[[1]]) * d_norm < tolerance_change) break
    t <- lbfgs_cubic_interpolate(bracket[[1]], bracket_f[[1]], bracket_gtd[[1]],
                                 bracket[[2]], bracket_f[[2]], bracket_gtd[[2]])
    # A trial near an end of the bracket twice in a row (or at it) moves 10% inside.
    eps <- 0.1 * (max(bracket) - min(bracket))
    if (min(max(bracket) - t, t - min(bracket)) < eps) {
      if (insuf_progress || t >= max(bracket) || t <= min(bracket)) {
        t <- if (abs(t - max(bracket)) < abs(t - min(bracket))) max(bracket) - eps else
          min(bracket) + eps
        insuf_progress <- FALSE
      } else {
        insuf_progress <- TRUE
      }
    } else {
      insuf_progress <- FALSE
    }
    ret <- obj_func(t, d)
    f_new <- ret[[1]]
    g_new <- ret[[2]]
    evals <- evals + 1
    gtd_new <- flat_dot(g_new, d)
    ls_iter <- ls_iter + 1

    if (true(f_new > f + c1 * t * gtd) || true(f_new >= bracket_f[[low]])) {
      bracket[[high]] <- t
      bracket_f[[high]] <- f_new
      bracket_g[[high]] <- g_new$clone()
      bracket_gtd[[high]] <- gtd_new
      low <- if (true(bracket_f[[1]] <= bracket_f[[2]])) 1 else 2
      high <- 3 - low
    } else {
      if (true(abs(gtd_new) <= -c2 * gtd)) {
        done <- TRUE
      } else if (true(gtd_new * (bracket[[high]] - bracket[[low]]) >= 0)) {
        bracket[[high]] <- bracket[[low]]
        bracket_f[[high]] <- bracket_f[[low]]
        bracket_g[[high]] <- bracket_g[[low]]
        bracket_gtd[[high]] <- bracket_gtd[[low]]
      }
      bracket[[low]] <- t
      bracket_f[[low]] <- f_new
      bracket_g[[low]] <- g_new$clone()
      bracket_gtd[[low]] <- gtd_new
    }
  }
  list(t = bracket[[low]], f = bracket_f[[low]], g = bracket_g[[low]], evals = evals)
}
