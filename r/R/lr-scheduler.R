# Learning-rate schedulers, as torch for R's (R/optim-lr_scheduler.R there, PyTorch's
# torch.optim.lr_scheduler): R code that writes each group's lr through the optimizer's
# param_groups (Note [Param groups in R and in the engine] in optim.R), so the next step uses it.
#
# As torch for R, creating a scheduler steps it once (last_epoch goes from -1 to 0, which sets
# every group's lr to its epoch-0 value), and `$step()` is called once per epoch (or batch)
# after the optimizer's step.

LRScheduler <- R6::R6Class(
  "LRScheduler",
  lock_objects = FALSE,
  public = list(
    initialize = function(optimizer, last_epoch = -1, verbose = FALSE) {
      check_scheduler_optimizer(optimizer)
      self$optimizer <- optimizer
      groups <- optimizer$param_groups
      if (last_epoch == -1) {
        for (i in seq_along(groups)) {
          if (is.null(groups[[i]]$initial_lr)) groups[[i]]$initial_lr <- groups[[i]]$lr
        }
        optimizer$param_groups <- groups
      } else {
        for (i in seq_along(groups)) {
          if (is.null(groups[[i]]$initial_lr)) {
            value_error("lr_scheduler: param group ", i, " has no initial_lr, which resuming ",
                        "a schedule (last_epoch = ", last_epoch, ") needs")
          }
        }
      }
      self$base_lrs <- lapply(groups, function(g) g$initial_lr)
      self$last_epoch <- last_epoch
      self$verbose <- verbose
      self$.step_count <- 0L
      self$step()
    },
    # The scheduler's fields, without the optimizer and functions (as torch for R).
    state_dict = function() {
      names <- setdiff(ls(self, all.names = TRUE), c("optimizer", ".__enclos_env__"))
      dict <- mget(names, envir = self)
      Filter(function(x) !is.function(x) && !is.environment(x), dict)
    },
    load_state_dict = function(state_dict) {
      for (name in names(state_dict)) self[[name]] <- state_dict[[name]]
      invisible(self)
    },
    get_last_lr = function() self$.last_lr,
    get_lr = function() {
      rcuda_abort("rcuda_not_implemented_error",
                  "lr_scheduler: a scheduler must define get_lr()")
    },
    print_lr = function(is_verbose, group, lr) {
      if (is_verbose) message(sprintf("Adjusting learning rate of group %s to %.4f", group, lr))
    },
    step = function() {
      self$.step_count <- self$.step_count + 1L
      self$last_epoch <- self$last_epoch + 1
      values <- self$get_lr()
      # get_lr may have changed the groups (lr_one_cycle's momentum): read them after it, and
      # write them back once.
      groups <- self$optimizer$param_groups
      for (i in seq_along(groups)) {
        groups[[i]]$lr <- values[[i]]
        self$print_lr(self$verbose, i, values[[i]])
      }
      self$optimizer$param_groups <- groups
      self$.last_lr <- vapply(groups, function(g) g$lr, numeric(1))
      invisible(self)
    }
  )
)

check_scheduler_optimizer <- function(optimizer) {
  if (!is_optimizer(optimizer)) {
    value_error("lr_scheduler: optimizer must be an optimizer (optim_sgd(), ...), got ",
                class(optimizer)[[1]])
  }
}

#' @export
lr_scheduler <- function(classname = NULL, inherit = LRScheduler, ...,
                         parent_env = parent.frame()) {
  if (inherits(inherit, "lr_scheduler")) inherit <- attr(inherit, "scheduler")
  env <- new.env(parent = parent_env)
  env$inherit <- inherit
  classes <- c(classname, "lr_scheduler")
  Scheduler <- R6::R6Class(
    classname = classname,
    inherit = inherit,
    lock_objects = FALSE,
    public = list(.classes = classes, ...),
    parent_env = env
  )
  # The constructor takes initialize's arguments (the nearest class that defines it).
  init <- NULL
  generator <- Scheduler
  while (is.null(init) && !is.null(generator)) {
    init <- generator$public_methods$initialize
    generator <- generator$get_inherit()
  }
  args <- formals(init)
  fun <- function() NULL
  formals(fun) <- args
  body(fun) <- as.call(c(list(quote(Scheduler$new)), lapply(names(args), as.name)))
  environment(fun) <- list2env(list(Scheduler = Scheduler), parent = parent_env)
  structure(fun, class = c(classes, "lr_scheduler_generator"), scheduler = Scheduler)
}

# One function per group: a function, or a list of them (one per group).
lr_lambdas_for <- function(optimizer, lr_lambda, who) {
  n <- length(optimizer$param_groups)
  if (is.function(lr_lambda)) return(rep(list(lr_lambda), n))
  if (!is.list(lr_lambda) || length(lr_lambda) != n ||
        !all(vapply(lr_lambda, is.function, logical(1)))) {
    value_error(who, ": lr_lambda must be a function or a list of ", n,
                " functions (one per param group)")
  }
  lr_lambda
}

# A value per group: one for all, or a vector or list with one per group.
per_group <- function(optimizer, value, name, who) {
  n <- length(optimizer$param_groups)
  if (length(value) == 1) return(rep(list(value[[1]]), n))
  if (length(value) != n) {
    value_error(who, ": expected ", n, " values for ", name, " (one per param group), got ",
                length(value))
  }
  as.list(value)
}

current_lrs <- function(optimizer) vapply(optimizer$param_groups, function(g) g$lr, numeric(1))

#' @export
lr_lambda <- lr_scheduler(
  "lr_lambda",
  initialize = function(optimizer, lr_lambda, last_epoch = -1, verbose = FALSE) {
    check_scheduler_optimizer(optimizer)
    self$lr_lambdas <- lr_lambdas_for(optimizer, lr_lambda, "lr_lambda")
    super$initialize(optimizer, last_epoch, verbose)
  },
  get_lr = function() {
    vapply(seq_along(self$base_lrs), function(i) {
      self$base_lrs[[i]] * self$lr_lambdas[[i]](self$last_epoch)
    }, numeric(1))
  }
)

#' @export
lr_multiplicative <- lr_scheduler(
  "lr_multiplicative",
  initialize = function(optimizer, lr_lambda, last_epoch = -1, verbose = FALSE) {
    check_scheduler_optimizer(optimizer)
    self$lr_lambdas <- lr_lambdas_for(optimizer, lr_lambda, "lr_multiplicative")
    super$initialize(optimizer, last_epoch, verbose)
  },
  get_lr = function() {
    lrs <- current_lrs(self$optimizer)
    if (self$last_epoch <= 0) return(lrs)
    vapply(seq_along(lrs), function(i) lrs[[i]] * self$lr_lambdas[[i]](self$last_epoch),
           numeric(1))
  }
)

#' @export
lr_step <- lr_scheduler(
  "lr_step",
  initialize = function(optimizer, step_size, gamma = 0.1, last_epoch = -1) {
    if (!is.numeric(step_size) || length(step_size) != 1 || !(step_size >= 1)) {
      value_error("lr_step: step_size must be a whole number >= 1, got ", format(step_size))
    }
    self$step_size <- step_size
    self$gamma <- gamma
    super$initialize(optimizer, last_epoch)
  },
  get_lr = function() {
    lrs <- current_lrs(self$optimizer)
    if (self$last_epoch == 0 || self$last_epoch %% self$step_size != 0) return(lrs)
    lrs * self$gamma
  }
)

#' @export
lr_cosine_annealing <- lr_scheduler(
  "lr_cosine_annealing",
  initialize = function(optimizer, T_max, eta_min = 0, last_epoch = -1, verbose = FALSE) {
    if (!is.numeric(T_max) || length(T_max) != 1 || !(T_max > 0)) {
      value_error("lr_cosine_annealing: T_max must be a number > 0, got ", format(T_max))
    }
    self$T_max <- T_max
    self$eta_min <- eta_min
    super$initialize(optimizer, last_epoch, verbose)
  },
  # PyTorch's recursive form, which follows changes made to lr by others between steps; from
  # an untouched start it equals eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2.
  get_lr = function() {
    t <- self$last_epoch
    T_max <- self$T_max
    eta_min <- self$eta_min
    lrs <- current_lrs(self$optimizer)
    base <- as.numeric(self$base_lrs)
    if (t == 0) return(lrs)
    if (self$.step_count == 1 && t > 0) {
      return(eta_min + (base - eta_min) * (1 + cos(t * pi / T_max)) / 2)
    }
    if ((t - 1 - T_max) %% (2 * T_max) == 0) {
      return(lrs + (base - eta_min) * (1 - cos(pi / T_max)) / 2)
    }
    (1 + cos(pi * t / T_max)) / (1 + cos(pi * (t - 1) / T_max)) * (lrs - eta_min) + eta_min
  }
)

#' @export
lr_one_cycle <- lr_scheduler(
  "lr_one_cycle",
  initialize = function(optimizer, max_lr, total_steps = NULL, epochs = NULL,
                        steps_per_epoch = NULL, pct_start = 0.3, anneal_strategy = "cos",
                        cycle_momentum = TRUE, base_momentum = 0.85, max_momentum = 0.95,
                        div_factor = 25, final_div_factor = 1e4, last_epoch = -1,
                        verbose = FALSE) {
    who <- "lr_one_cycle"
    check_scheduler_optimizer(optimizer)
    positive <- function(x) is.numeric(x) && length(x) == 1 && !is.na(x) && x > 0
    if (!is.null(total_steps)) {
      if (!positive(total_steps)) {
        value_error(who, ": expected a positive integer total_steps, got ", format(total_steps))
      }
      self$total_steps <- total_steps
    } else if (is.null(epochs) || is.null(steps_per_epoch)) {
      value_error(who, ": give either total_steps or both epochs and steps_per_epoch")
    } else {
      if (!positive(epochs)) value_error(who, ": expected a positive integer epochs, got ", format(epochs))
      if (!positive(steps_per_epoch)) {
        value_error(who, ": expected a positive integer steps_per_epoch, got ",
                    format(steps_per_epoch))
      }
      self$total_steps <- epochs * steps_per_epoch
    }
    if (!is.numeric(pct_start) || length(pct_start) != 1 || !(pct_start >= 0 && pct_start <= 1)) {
      value_error(who, ": expected pct_start between 0 and 1, got ", format(pct_start))
    }
    # As torch for R: the warm-up ends at step pct_start * total_steps - 1, the decay at
    # total_steps - 1.
    self$step_size_up <- pct_start * self$total_steps - 1
    self$step_size_down <- self$total_steps - self$step_size_up - 1
    if (!is.character(anneal_strategy) || length(anneal_strategy) != 1 ||
          !anneal_strategy %in% c("cos", "linear")) {
      value_error(who, ": anneal_strategy must be 'cos' or 'linear', got ",
                  paste(format(anneal_strategy), collapse = " "))
    }
    self$anneal_func <- if (anneal_strategy == "cos") anneal_cos else anneal_linear

    groups <- optimizer$param_groups
    if (last_epoch == -1) {
      max_lrs <- per_group(optimizer, max_lr, "max_lr", who)
      for (i in seq_along(groups)) {
        groups[[i]]$initial_lr <- max_lrs[[i]] / div_factor
        groups[[i]]$max_lr <- max_lrs[[i]]
        groups[[i]]$min_lr <- groups[[i]]$initial_lr / final_div_factor
      }
    }
    self$cycle_momentum <- cycle_momentum
    if (cycle_momentum) {
      names <- names(optimizer$defaults)
      if (!"momentum" %in% names && !"betas" %in% names) {
        value_error(who, ": the optimizer has neither momentum nor betas, which ",
                    "cycle_momentum = TRUE changes; give cycle_momentum = FALSE")
      }
      self$use_beta1 <- "betas" %in% names
      max_momentums <- per_group(optimizer, max_momentum, "max_momentum", who)
      base_momentums <- per_group(optimizer, base_momentum, "base_momentum", who)
      if (last_epoch == -1) {
        for (i in seq_along(groups)) {
          groups[[i]] <- set_momentum(groups[[i]], max_momentums[[i]], self$use_beta1)
          groups[[i]]$max_momentum <- max_momentums[[i]]
          groups[[i]]$base_momentum <- base_momentums[[i]]
        }
      }
    }
    optimizer$param_groups <- groups
    super$initialize(optimizer, last_epoch, verbose)
  },
  get_lr = function() {
    step <- self$last_epoch
    if (step > self$total_steps) {
      value_error("lr_one_cycle: tried to step ", step + 1, " times; the schedule has ",
                  "total_steps = ", self$total_steps)
    }
    groups <- self$optimizer$param_groups
    lrs <- numeric(length(groups))
    for (i in seq_along(groups)) {
      g <- groups[[i]]
      if (step <= self$step_size_up) {
        pct <- step / self$step_size_up
        lrs[[i]] <- self$anneal_func(g$initial_lr, g$max_lr, pct)
        momentum <- if (self$cycle_momentum) self$anneal_func(g$max_momentum, g$base_momentum, pct)
      } else {
        pct <- (step - self$step_size_up) / self$step_size_down
        lrs[[i]] <- self$anneal_func(g$max_lr, g$min_lr, pct)
        momentum <- if (self$cycle_momentum) self$anneal_func(g$base_momentum, g$max_momentum, pct)
      }
      if (self$cycle_momentum) groups[[i]] <- set_momentum(g, momentum, self$use_beta1)
    }
    if (self$cycle_momentum) self$optimizer$param_groups <- groups
    # The last step (step = total_steps) is past the decay's end (total_steps - 1), where
    # linear annealing goes below min_lr and can reach a negative lr, which PyTorch sets
    # silently and optimizers here refuse: 0 instead.
    pmax(lrs, 0)
  }
)

anneal_cos <- function(start, end, pct) end + (start - end) / 2 * (cos(pi * pct) + 1)
anneal_linear <- function(start, end, pct) (end - start) * pct + start

# Momentum is betas[1] for Adam-like optimizers, `momentum` for the others.
set_momentum <- function(group, value, use_beta1) {
  if (use_beta1) group$betas <- c(value, group$betas[[2]]) else group$momentum <- value
  group
}

#' @export
lr_reduce_on_plateau <- lr_scheduler(
  "lr_reduce_on_plateau",
  initialize = function(optimizer, mode = "min", factor = 0.1, patience = 10, threshold = 1e-4,
                        threshold_mode = "rel", cooldown = 0, min_lr = 0, eps = 1e-8,
                        verbose = FALSE) {
    who <- "lr_reduce_on_plateau"
    check_scheduler_optimizer(optimizer)
    if (!is.numeric(factor) || length(factor) != 1 || !(factor < 1)) {
      value_error(who, ": factor should be < 1.0, got ", format(factor))
    }
    if (!identical(mode, "min") && !identical(mode, "max")) {
      value_error(who, ": mode must be 'min' or 'max', got ", paste(format(mode), collapse = " "))
    }
    if (!identical(threshold_mode, "rel") && !identical(threshold_mode, "abs")) {
      value_error(who, ": threshold_mode must be 'rel' or 'abs', got ",
                  paste(format(threshold_mode), collapse = " "))
    }
    self$optimizer <- optimizer
    self$factor <- factor
    self$min_lrs <- per_group(optimizer, min_lr, "min_lr", who)
    self$patience <- patience
    self$verbose <- verbose
    self$cooldown <- cooldown
    self$mode <- mode
    self$threshold <- threshold
    self$threshold_mode <- threshold_mode
    self$eps <- eps
    self$last_epoch <- 0
    self$mode_worse <- if (mode == "min") Inf else -Inf
    self$best <- self$mode_worse
    self$cooldown_counter <- 0
    self$num_bad_epochs <- 0
    self$.last_lr <- current_lrs(optimizer)
  },
  # One epoch's metric (a number or a one-element tensor), lower is better in mode "min".
  step = function(metrics) {
    current <- if (is_torch_tensor(metrics)) metrics$item() else as.numeric(metrics)
    if (length(current) != 1 || is.na(current)) {
      value_error("lr_reduce_on_plateau$step: metrics must be a single number")
    }
    self$last_epoch <- self$last_epoch + 1
    if (self$is_better(current, self$best)) {
      self$best <- current
      self$num_bad_epochs <- 0
    } else {
      self$num_bad_epochs <- self$num_bad_epochs + 1
    }
    if (self$cooldown_counter > 0) {
      self$cooldown_counter <- self$cooldown_counter - 1
      self$num_bad_epochs <- 0
    }
    if (self$num_bad_epochs > self$patience) {
      self$reduce_lr(self$last_epoch)
      self$cooldown_counter <- self$cooldown
      self$num_bad_epochs <- 0
    }
    self$.last_lr <- current_lrs(self$optimizer)
    invisible(self)
  },
  reduce_lr = function(epoch) {
    groups <- self$optimizer$param_groups
    changed <- FALSE
    for (i in seq_along(groups)) {
      old_lr <- groups[[i]]$lr
      new_lr <- max(old_lr * self$factor, self$min_lrs[[i]])
      if (old_lr - new_lr > self$eps) {
        groups[[i]]$lr <- new_lr
        changed <- TRUE
        if (self$verbose) {
          message(sprintf("Epoch %s: reducing learning rate of group %s to %.4e", epoch, i, new_lr))
        }
      }
    }
    if (changed) self$optimizer$param_groups <- groups
  },
  is_better = function(a, best) {
    rel <- self$threshold_mode == "rel"
    if (self$mode == "min") {
      if (rel) a < best * (1 - self$threshold) else a < best - self$threshold
    } else {
      if (rel) a > best * (1 + self$threshold) else a > best + self$threshold
    }
  }
)
