# torch's reduction enum (at::Reduction), whose values torch for R exports for the functions of
# its generated API that take `reduction` as a number. rcuda's loss functions take the strings
# ("none", "mean", "sum"); these give the numbers torch scripts compare or pass.

#' Reduction modes as torch's enum values
#'
#' `torch_reduction_none()` is 0, `torch_reduction_mean()` 1 and `torch_reduction_sum()` 2, the
#' values of LibTorch's `at::Reduction` that torch for R exports.
#' @export
torch_reduction_none <- function() 0

#' @rdname torch_reduction_none
#' @export
torch_reduction_mean <- function() 1

#' @rdname torch_reduction_none
#' @export
torch_reduction_sum <- function() 2
