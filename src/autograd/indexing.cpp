// Entry points of joining and indexing (Note [Recording] in rcuda/autograd/record.h). split and
// chunk are the ops themselves: their pieces are views, recorded by the view hook.
#include "grads/indexing.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::IndexBackward;
using autograd::IndexKind;

// Records an IndexBackward with inputs (x) or (x, src); `saved` is the index or the mask.
template <typename Forward>
Tensor record_index(IndexKind kind, const Tensor& x, const Tensor& src, int64_t dim,
                    const Tensor& saved, Forward forward) {
  if (!autograd::should_record(x, src)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = src.defined() ? autograd::make_node<IndexBackward>(x, src)
                            : autograd::make_node<IndexBackward>(x);
  node->kind = kind;
  node->dim = dim;
  node->index = autograd::SavedTensor(saved);
  autograd::set_history(out, node);
  return out;
}

bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (!autograd::should_record_list(tensors)) return ops::cat(tensors, dim);
  Tensor out = autograd::below_autograd([&] { return ops::cat(tensors, dim); });
  auto node = autograd::make_node_list<autograd::JoinBackward>(tensors);
  // ops::cat wraps dim against the first input it does not skip.
  int64_t ndim = -1;
  for (const Tensor& t : tensors) {
    node->sizes.push_back(skipped_by_cat(t) ? -1 : 0);
    if (skipped_by_cat(t)) continue;
    if (ndim < 0) ndim = t.dim();
  }
  if (ndim >= 0) node->dim = wrap_dim(dim, ndim, "cat");
  for (size_t i = 0; i < tensors.size(); ++i)
    if (node->sizes[i] == 0) node->sizes[i] = tensors[i].size(node->dim);
  autograd::set_history(out, node);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (!autograd::should_record_list(tensors)) return ops::stack(tensors, dim);
  Tensor out = autograd::below_autograd([&] { return ops::stack(tensors, dim); });
  auto node = autograd::make_node_list<autograd::JoinBackward>(tensors);
  node->stack = true;
  node->dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  autograd::set_history(out, node);
  return out;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return record_index(IndexKind::IndexSelect, x, Tensor(), dim, index,
                      [&] { return ops::index_select(x, dim, index); });
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return record_index(IndexKind::Gather, x, Tensor(), dim, index,
                      [&] { return ops::gather(x, dim, index); });
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return record_index(IndexKind::Scatter, x, src, dim, index,
                      [&] { return ops::scatter(x, dim, index, src); });
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  return record_index(IndexKind::ScatterValue, x, Tensor(), dim, index,
                      [&] { return ops::scatter(x, dim, index, value); });
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return record_index(IndexKind::ScatterAdd, x, src, dim, index,
                      [&] { return ops::scatter_add(x, dim, index, src); });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  return record_index(IndexKind::MaskedFill, x, Tensor(), 0, mask,
                      [&] { return ops::masked_fill(x, mask, value); });
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  if (!autograd::should_record(x)) return ops::masked_select(x, mask);
  Tensor out = autograd::below_autograd([&] { return ops::masked_select(x, mask); });
  auto node = autograd::make_node<IndexBackward>(x);
  node->kind = IndexKind::MaskedSelect;
  node->index = autograd::SavedTensor(mask);
  node->shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  autograd::set_history(out, node);
  return out;
}

}  // namespace rcuda
