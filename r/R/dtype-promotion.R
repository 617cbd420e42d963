# torch_result_type: the dtype torch's type promotion gives for two operands.

# The dtype torch's type promotion gives for an op on both: the engine's own promotion run on
# empty stand-ins (a 0-d tensor ranks below a dimensioned one, as in torch). R numbers are
# torch's wrapped scalars: doubles rank as the default dtype, integers as int64.
#' @export
torch_result_type <- function(tensor1, tensor2) {
  stand_in <- function(x, arg) {
    if (is_torch_tensor(x)) {
      if (x$ndim == 0) return(torch_zeros(1, dtype = x$dtype)$squeeze())
      return(torch_empty(0, dtype = x$dtype))
    }
    if ((!is.numeric(x) && !is.logical(x)) || length(x) != 1 || is.object(x)) {
      value_error("torch_result_type: ", arg, " must be a tensor or a number, got ", describe(x))
    }
    x
  }
  a <- stand_in(tensor1, "tensor1")
  b <- stand_in(tensor2, "tensor2")
  if (!is_torch_tensor(a) && !is_torch_tensor(b)) {
    if (is.double(a) || is.double(b)) return(torch_get_default_dtype())
    if (is.integer(a) || is.integer(b)) return(torch_long())
    return(torch_bool())
  }
  if (!is_torch_tensor(a)) return(torch_add(b, a)$dtype)
  torch_add(a, b)$dtype
}
