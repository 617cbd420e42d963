// Gradients of the sort family and the cumulative ops.
#include "sorting.h"

#include "rcuda/ops/creation.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/sorting.h"

namespace rcuda::autograd {

const char* IndexedBackward::name() const {
  switch (kind) {
    case IndexedKind::Sort:
      return "SortBackward";
    case IndexedKind::Topk:
      return "TopkBackward";
    case IndexedKind::Kthvalue:
      return "KthvalueBackward";
    case IndexedKind::Median:
      return "MedianBackward";
    case IndexedKind::Mode:
      return "ModeBackward";
    case IndexedKind::Cummax:
      return "CummaxBackward";
    case IndexedKind::Cummin:
      return "CumminBackward";
  }
  return "IndexedBackward";
}

TensorList IndexedBackward::apply(TensorList&& grads) {
  const Tensor& grad = grads[0];
  const InputMeta& meta = input_meta(0);
  if (meta.sizes.empty()) return {grad.view({})};  // a 0-dim input is its own result
  const Tensor index = indices.unpack(*this);
  const Tensor g = keepdim ? grad : grad.unsqueeze(dim);
  const Tensor where = keepdim ? index : index.unsqueeze(dim);
  const Tensor zeros = ops::zeros(meta.shape(), TensorOptions(grad.dtype(), meta.device));
  return {ops::scatter_add(zeros, dim, where, g)};
}

TensorList CumulativeBackward::apply(TensorList&& grads) {
  const Tensor xv = x.unpack(*this), outv = out.unpack(*this);
  if (is_prod) return {ops::cumprod_backward(grads[0], xv, outv, dim)};
  return {ops::logcumsumexp_backward(grads[0], xv, outv, dim)};
}

}  // namespace rcuda::autograd
