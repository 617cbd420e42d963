# Initialisers (torch for R's nn_init_*): each fills its tensor in place with grad mode off, so
# parameters that require grad can be initialised, and returns it invisibly. Random ones draw
# from the default generator: torch_manual_seed() makes them repeatable, on the CPU and the GPU
# alike (rcuda/nn/init.h).

init_tensor <- function(kind, tensor, ...) {
  if (!is_torch_tensor(tensor)) value_error("nn_init_", kind, "_: tensor must be a tensor, got ", describe(tensor))
  invisible(.Call(rc_nn_init, kind, tensor, list(...)))
}

init_string <- function(fn, name, value) {
  if (!is.character(value) || length(value) != 1) value_error(fn, ": ", name, " must be a string, got ", deparse(value)[1])
  value
}

# torch for R's $uniform_(from, to) and $normal_(mean, std): fill self from the engine's random
# streams. As every in-place op, refused on a leaf that requires grad while grad mode is on.
random_fill_ <- function(fn, kind, self, a, b, generator) {
  if (!is.null(generator)) value_error(fn, ": generator is not supported; seed with torch_manual_seed()")
  if (.Call(rc_grad_mode, NULL) && .Call(rc_requires_grad, self) && .Call(rc_is_leaf, self)) {
    value_error(fn, ": a leaf Variable that requires grad is being used in an in-place operation ",
                "(wrap it in with_no_grad())")
  }
  init_tensor(kind, self, a, b)
  invisible(self)
}
tensor_methods$uniform_ <- function(self, from = 0, to = 1, generator = NULL) {
  random_fill_("uniform_", "uniform", self, from, to, generator)
}
tensor_methods$normal_ <- function(self, mean = 0, std = 1, generator = NULL) {
  random_fill_("normal_", "normal", self, mean, std, generator)
}

#' @export
nn_init_uniform_ <- function(tensor, a = 0, b = 1) init_tensor("uniform", tensor, a, b)

#' @export
nn_init_normal_ <- function(tensor, mean = 0, std = 1) init_tensor("normal", tensor, mean, std)

#' @export
nn_init_constant_ <- function(tensor, val) init_tensor("constant", tensor, val)

#' @export
nn_init_zeros_ <- function(tensor) init_tensor("zeros", tensor)

#' @export
nn_init_ones_ <- function(tensor) init_tensor("ones", tensor)

#' @export
nn_init_eye_ <- function(tensor) init_tensor("eye", tensor)

#' @export
nn_init_kaiming_uniform_ <- function(tensor, a = 0, mode = "fan_in", nonlinearity = "leaky_relu") {
  init_tensor("kaiming_uniform", tensor, a, init_string("nn_init_kaiming_uniform_", "mode", mode),
              init_string("nn_init_kaiming_uniform_", "nonlinearity", nonlinearity))
}

#' @export
nn_init_kaiming_normal_ <- function(tensor, a = 0, mode = "fan_in", nonlinearity = "leaky_relu") {
  init_tensor("kaiming_normal", tensor, a, init_string("nn_init_kaiming_normal_", "mode", mode),
              init_string("nn_init_kaiming_normal_", "nonlinearity", nonlinearity))
}

#' @export
nn_init_xavier_uniform_ <- function(tensor, gain = 1) init_tensor("xavier_uniform", tensor, gain)

#' @export
nn_init_xavier_normal_ <- function(tensor, gain = 1) init_tensor("xavier_normal", tensor, gain)

#' @export
nn_init_trunc_normal_ <- function(tensor, mean = 0, std = 1, a = -2, b = 2) {
  init_tensor("trunc_normal", tensor, mean, std, a, b)
}

#' @export
nn_init_calculate_gain <- function(nonlinearity, param = NULL) {
  .Call(rc_nn_calculate_gain, init_string("nn_init_calculate_gain", "nonlinearity", nonlinearity), param)
}

# fan_in and fan_out of a weight [out, in, k...], as a list (torch for R's internal helper).
nn_init_calculate_fan_in_and_fan_out <- function(tensor) {
  fans <- .Call(rc_nn_fans, tensor)
  list(fans[1], fans[2])
}
