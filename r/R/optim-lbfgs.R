# optim_lbfgs, stepped in R (Note [Optimizers stepped in R] in optim-r-base.R).
#
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
