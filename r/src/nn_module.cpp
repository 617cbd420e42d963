// What an nn_module does to all its tensors at once: move them ($to, $cuda, $cpu), clear their
// gradients ($zero_grad) and copy a state dict into them ($load_state_dict), one call each.
//
// Note [Module to() in place]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// model$to(device =, dtype =) changes each parameter's data in place, as PyTorch's `param.data =
// param.to(...)`: the tensor object (its TensorImpl) keeps its identity, its requires_grad flag,
// its hooks and its leaf status, and takes the converted copy's storage, shape, strides and
// dtype. So every R handle to a parameter, and anything holding the engine tensor (an optimizer
// built before the move), sees the moved parameter. A gradient is converted with it. A graph
// recorded before the move must not be run backward after it: its nodes recorded the old dtype
// and device.
#include <cstring>

#include "nn_glue.h"
#include "rcuda/tensor/memory_format.h"

using namespace rcuda;
using namespace rcuda::r;

// tensors: a list of leaves. dtype applies to the floating ones only (integer buffers keep
// theirs); NULL keeps each tensor's dtype or device.
// format: NULL, "contiguous" or "channels_last" (for the 4-D tensors; the others keep theirs).
extern "C" SEXP rc_module_to(SEXP tensors, SEXP dtype, SEXP device, SEXP format) {
  RCUDA_BEGIN
  const std::optional<DType> want_dtype = dtype_arg(dtype);
  const bool move = !Rf_isNull(device);
  const Device target = move ? device_arg(device) : Device();
  std::optional<MemoryFormat> want_format;
  if (!Rf_isNull(format))
    want_format = std::strcmp(CHAR(STRING_ELT(format, 0)), "channels_last") == 0
                      ? MemoryFormat::ChannelsLast
                      : MemoryFormat::Contiguous;
  NoGradGuard no_grad;
  for (R_xlen_t i = 0; i < Rf_xlength(tensors); ++i) {
    const Tensor& t = unwrap(VECTOR_ELT(tensors, i));
    const DType d = want_dtype && is_floating(t.dtype()) ? *want_dtype : t.dtype();
    const Device dev = move ? target : t.device();
    const bool relayout = want_format && t.dim() == 4 &&
                          t.strides() != memory_format_strides(t.shape(), *want_format);
    if (d == t.dtype() && dev == t.device() && !relayout) continue;
    RCUDA_CHECK(t.is_leaf(), ValueError,
                "nn_module$to: a parameter or buffer was produced by an op that recorded a "
                "gradient (not a leaf), so it cannot be moved in place; detach() it first");
    const auto convert = [&](const Tensor& x) {
      const Tensor moved = to(x, dev, d);
      return relayout ? contiguous(moved, *want_format) : moved;
    };
    const Tensor grad = t.grad();
    t.set_data(convert(t));
    if (grad.defined()) t.set_grad(convert(grad));
  }
  return R_NilValue;
  RCUDA_END
}

// Zeroes each gradient in place, or with set_to_none drops it (the next backward allocates).
extern "C" SEXP rc_zero_grad(SEXP tensors, SEXP set_to_none) {
  RCUDA_BEGIN
  const bool drop = Rf_asLogical(set_to_none) == TRUE;
  NoGradGuard no_grad;
  for (R_xlen_t i = 0; i < Rf_xlength(tensors); ++i) {
    const Tensor& t = unwrap(VECTOR_ELT(tensors, i));
    const Tensor grad = t.grad();
    if (!grad.defined()) continue;
    if (drop) {
      t.set_grad(Tensor());
    } else {
      fill_(grad, Scalar(0.0));
    }
  }
  return R_NilValue;
  RCUDA_END
}

// dst[[i]] <- src[[i]] with grad mode off (converting dtype and device); the R side has matched
// names and shapes.
extern "C" SEXP rc_copy_all(SEXP dst, SEXP src) {
  RCUDA_BEGIN
  NoGradGuard no_grad;
  for (R_xlen_t i = 0; i < Rf_xlength(dst); ++i)
    as_r_function("load_state_dict", "copy_",
                  [&] { copy_(unwrap(VECTOR_ELT(dst, i)), unwrap(VECTOR_ELT(src, i))); });
  return R_NilValue;
  RCUDA_END
}
