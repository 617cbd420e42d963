# PyTorch's documented update rules (torch.optim's algorithm boxes) in plain double-precision
# R, one parameter at a time: each returns a function(p, g, state, t) for run_reference().

reference_sgd <- function(lr, momentum = 0, dampening = 0, weight_decay = 0, nesterov = FALSE) {
  function(p, g, state, t) {
    g <- g + weight_decay * p
    if (momentum != 0) {
      b <- if (t == 1) g else momentum * state$b + (1 - dampening) * g
      state$b <- b
      g <- if (nesterov) g + momentum * b else b
    }
    list(p = p - lr * g, state = state)
  }
}

reference_adam <- function(lr = 1e-3, betas = c(0.9, 0.999), eps = 1e-8, weight_decay = 0,
                           amsgrad = FALSE, decoupled = FALSE) {
  function(p, g, state, t) {
    if (t == 1) state <- list(m = 0 * p, v = 0 * p, vmax = 0 * p)
    if (decoupled) p <- p * (1 - lr * weight_decay) else g <- g + weight_decay * p
    state$m <- betas[1] * state$m + (1 - betas[1]) * g
    state$v <- betas[2] * state$v + (1 - betas[2]) * g^2
    m_hat <- state$m / (1 - betas[1]^t)
    v <- state$v
    if (amsgrad) {
      state$vmax <- pmax(state$vmax, state$v)
      v <- state$vmax
    }
    v_hat <- v / (1 - betas[2]^t)
    list(p = p - lr * m_hat / (sqrt(v_hat) + eps), state = state)
  }
}

reference_rmsprop <- function(lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0,
                              momentum = 0, centered = FALSE) {
  function(p, g, state, t) {
    if (t == 1) state <- list(v = 0 * p, b = 0 * p, g_avg = 0 * p)
    g <- g + weight_decay * p
    state$v <- alpha * state$v + (1 - alpha) * g^2
    v <- state$v
    if (centered) {
      state$g_avg <- alpha * state$g_avg + (1 - alpha) * g
      v <- v - state$g_avg^2
    }
    if (momentum > 0) {
      state$b <- momentum * state$b + g / (sqrt(v) + eps)
      p <- p - lr * state$b
    } else {
      p <- p - lr * g / (sqrt(v) + eps)
    }
    list(p = p, state = state)
  }
}

reference_adagrad <- function(lr = 1e-2, lr_decay = 0, weight_decay = 0,
                              initial_accumulator_value = 0, eps = 1e-10) {
  function(p, g, state, t) {
    if (t == 1) state <- list(sum = 0 * p + initial_accumulator_value)
    g <- g + weight_decay * p
    clr <- lr / (1 + (t - 1) * lr_decay)
    state$sum <- state$sum + g^2
    list(p = p - clr * g / (sqrt(state$sum) + eps), state = state)
  }
}
