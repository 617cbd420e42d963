# cuda_amp_grad_scaler(): torch for R's gradient scaler (torch.amp.GradScaler) over the engine's
# amp::GradScaler (src/grad_scaler.cpp): the scale and the inf checks live on the loss's device;
# $step() reads the checks once (the one host synchronisation) and skips the optimizer's step
# when a gradient is inf or NaN.

# The engine optimizer behind an R optimizer (its private pointer).
optimizer_engine_ptr <- function(optimizer, who) {
  if (!is_optimizer(optimizer)) {
    value_error(who, ": optimizer must be an optimizer (optim_sgd(), optim_adam(), ...), got ",
                class(optimizer)[1])
  }
  ptr <- optimizer$.__enclos_env__$private$ptr
  if (is.null(ptr)) {
    value_error(who, ": ", class(optimizer)[1], " steps in R (Note [Optimizers stepped in R]) and ",
                "the scaler steps engine optimizers only: optim_sgd, optim_adam, optim_adamw, ",
                "optim_rmsprop, optim_adagrad")
  }
  ptr
}

# Documented in man/cuda_amp_grad_scaler.Rd.
#' @export
cuda_amp_grad_scaler <- function(init_scale = 2^16, growth_factor = 2, backoff_factor = 0.5,
                                 growth_interval = 2000, enabled = TRUE) {
  GradScaler$new(init_scale, growth_factor, backoff_factor, growth_interval, enabled)
}

GradScaler <- R6::R6Class(
  "cuda_amp_grad_scaler",
  cloneable = FALSE,
  public = list(
    initialize = function(init_scale, growth_factor, backoff_factor, growth_interval, enabled) {
      if (!is.logical(enabled) || length(enabled) != 1 || is.na(enabled)) {
        value_error("cuda_amp_grad_scaler", ": enabled must be TRUE or FALSE")
      }
      private$ptr <- .Call(rc_scaler_new, init_scale, growth_factor, backoff_factor,
                           growth_interval, enabled)
    },
    # outputs: a tensor, or a list of tensors (each scaled).
    scale = function(outputs) {
      if (is.list(outputs)) return(lapply(outputs, self$scale))
      .Call(rc_scaler_scale, private$ptr, outputs)
    },
    unscale_ = function(optimizer) {
      .Call(rc_scaler_unscale, private$ptr,
            optimizer_engine_ptr(optimizer, "cuda_amp_grad_scaler$unscale_"))
      invisible(self)
    },
    step = function(optimizer, ...) {
      ptr <- optimizer_engine_ptr(optimizer, "cuda_amp_grad_scaler$step")
      if (.Call(rc_scaler_prepare_step, private$ptr, ptr)) optimizer$step(...) else invisible(NULL)
    },
    update = function(new_scale = NULL) {
      .Call(rc_scaler_update, private$ptr, new_scale)
      invisible(self)
    },
    get_scale = function() .Call(rc_scaler_state, private$ptr)$scale,
    is_enabled = function() .Call(rc_scaler_state, private$ptr)$enabled,
    # torch for R's names; an empty list from a disabled scaler, as torch's.
    state_dict = function() {
      s <- .Call(rc_scaler_state, private$ptr)
      if (!s$enabled) return(list())
      list(scale = s$scale, growth_factor = s$growth_factor, backoff_factor = s$backoff_factor,
           growth_interval = s$growth_interval, `_growth_tracker` = s$growth_tracker)
    },
    load_state_dict = function(state_dict) {
      if (!self$is_enabled()) return(invisible(self))
      if (length(state_dict) == 0) {
        value_error("cuda_amp_grad_scaler$load_state_dict", ": the state dict is empty, ",
                    "possibly because it was saved from a disabled scaler")
      }
      need <- c("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
      missing <- setdiff(need, names(state_dict))
      if (length(missing) > 0) {
        value_error("cuda_amp_grad_scaler$load_state_dict", ": the state dict lacks ",
                    paste(missing, collapse = ", "))
      }
      .Call(rc_scaler_load_state, private$ptr, state_dict$scale, state_dict$growth_factor,
            state_dict$backoff_factor, state_dict$growth_interval, state_dict$`_growth_tracker`)
      invisible(self)
    },
    print = function(...) {
      cat("<cuda_amp_grad_scaler> scale ", format(self$get_scale()),
          if (!self$is_enabled()) " (disabled)", "\n", sep = "")
      invisible(self)
    }
  ),
  private = list(ptr = NULL)
)
