// dropout and its backward: argument checks, the special cases p == 0 and p == 1, and one
// step of the default generator per drawn mask (Note [Dropout mask]).
#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/nn.h"
#include "rcuda/ops/random.h"

namespace rcuda::ops {

std::pair<Tensor, Tensor> dropout(const Tensor& x, double p, bool training) {
  check_not_float8("dropout", x);
  check_floating("dropout", "x", x);
  RCUDA_CHECK(p >= 0 && p <= 1, ValueError, "dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return {x, Tensor()};
  Tensor mask = Tensor::empty(x.shape(), DType::Bool, x.device());
  if (p == 1) {
    fill_(mask, false);
    return {zeros(x.shape(), {x.dtype(), x.device()}), mask};
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.numel() == 0) return {out, mask};
  const Tensor in = contiguous(x);
  with_next_philox(x.device(), [=](uint64_t seed, uint64_t offset) {
    backend_of(in).dropout(out, mask, in, p, seed, offset);
  });
  return {out, mask};
}

Tensor dropout_backward(const Tensor& grad, const Tensor& mask, double p) {
  constexpr const char* kOp = "dropout_backward";
  check_not_float8(kOp, grad);
  check_floating(kOp, "grad", grad);
  RCUDA_CHECK(p >= 0 && p <= 1, ValueError, kOp, ": p must be in [0, 1], got ", p);
  if (!mask.defined()) return grad;
  RCUDA_CHECK(mask.dtype() == DType::Bool, DTypeError, kOp, ": mask must be bool, got ",
              dtype_name(mask.dtype()));
  RCUDA_CHECK(mask.shape() == grad.shape(), ShapeError, kOp, ": mask has shape ",
              shape_str(mask.shape()), " but grad has ", shape_str(grad.shape()));
  check_same_device(kOp, {grad, mask});
  if (p == 1) return zeros(grad.shape(), {grad.dtype(), grad.device()});
  Tensor out = Tensor::empty(grad.shape(), grad.dtype(), grad.device());
  if (out.numel() > 0)
    backend_of(grad).masked_scale(out, contiguous(grad), contiguous(mask), 1.0 / (1.0 - p));
  return out;
}

}  // namespace rcuda::ops
