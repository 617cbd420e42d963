// Gradient of index_put_: self's gradient with the overwritten positions zeroed (they no longer
// depend on self), and values' gradient read at the positions they went to; the engine sums the
// latter back over values' broadcast.
#include "index_put.h"

#include "rcuda/ops/copy.h"
#include "rcuda/ops/indexing.h"

namespace rcuda::autograd {

TensorList IndexPutBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  const Tensor at = positions.unpack(*this);
  const Tensor flat_at = ops::reshape(at, {-1});
  const Tensor flat = ops::reshape(g, {-1});
  TensorList out(2);
  if (needs_input_grad(0))
    out[0] = accumulate ? g : ops::reshape(ops::scatter(flat, 0, flat_at, Scalar(0)), g.shape());
  if (needs_input_grad(1)) out[1] = ops::reshape(ops::index_select(flat, 0, flat_at), at.shape());
  return out;
}

}  // namespace rcuda::autograd
