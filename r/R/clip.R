# Gradient clipping, as torch for R's nn_utils_clip_grad_norm_ and nn_utils_clip_grad_value_,
# over rcuda::optim::clip_grad_norm_ / clip_grad_value_: in place on the gradients, one fused
# norm and one scaling per device, and nothing read back to the host (unless
# error_if_nonfinite asks). Parameters without a gradient are skipped.

clip_parameters <- function(parameters, who) {
  if (is_torch_tensor(parameters)) return(list(parameters))
  if (!is.list(parameters)) value_error(who, ": parameters must be a tensor or a list of tensors")
  parameters
}

#' @export
nn_utils_clip_grad_norm_ <- function(parameters, max_norm, norm_type = 2,
                                     error_if_nonfinite = FALSE) {
  who <- "nn_utils_clip_grad_norm_"
  parameters <- clip_parameters(parameters, who)
  if (!is.numeric(max_norm) || length(max_norm) != 1 || is.na(max_norm)) {
    value_error(who, ": max_norm must be a single number")
  }
  if (!is.numeric(norm_type) || length(norm_type) != 1 || !(norm_type > 0)) {
    value_error(who, ": norm_type must be a number > 0 (or Inf), got ", format(norm_type))
  }
  .Call(rc_clip_grad_norm, parameters, as.numeric(max_norm), as.numeric(norm_type),
        isTRUE(error_if_nonfinite))
}

#' @export
nn_utils_clip_grad_value_ <- function(parameters, clip_value) {
  who <- "nn_utils_clip_grad_value_"
  parameters <- clip_parameters(parameters, who)
  if (!is.numeric(clip_value) || length(clip_value) != 1 || is.na(clip_value)) {
    value_error(who, ": clip_value must be a single number")
  }
  .Call(rc_clip_grad_value, parameters, as.numeric(clip_value))
  invisible(NULL)
}
