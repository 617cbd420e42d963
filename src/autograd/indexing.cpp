// Entry points of joining and indexing (Note [Recording] in rcuda/autograd/record.h). split and
// chunk are the ops themselves: their pieces are views, recorded by the view hook.
#include "grads/indexing.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::IndexBackward;
using autograd::IndexKind;
using autograd::OpCall;

// Records an IndexBackward with inputs (x) or (x, src); `saved` is the index or the mask.
template <typename Forward>
Tensor record_index(OpId op, IndexKind kind, const Tensor& x, const Tensor& src, int64_t dim,
                    const Tensor& saved, Forward forward) {
  if (!OpCall::records(x, src)) return forward();
  Tensor out = autograd::below_autograd(forward);
  auto node = src.defined() ? autograd::make_node<IndexBackward>(op, x, src)
                            : autograd::make_node<IndexBackward>(op, x);
  node->kind = kind;
  node->dim = dim;
  node->index = autograd::SavedTensor(saved);
  autograd::set_history(out, node);
  return out;
}

bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

// A number operand as its Scalar's kind: an integer stays an integer, so that a replay fills
// an integer tensor with the same value.
AttributeValue number_attribute(const Scalar& number) {
  if (number.kind() == Scalar::Kind::Float) return number.to_double();
  if (number.kind() == Scalar::Kind::Int) return number.to_int();
  return number.to_bool();
}

// The tensor whose device type picks autocast's region: a list's first, none when empty.
Tensor first_of(const std::vector<Tensor>& tensors) {
  return tensors.empty() ? Tensor() : tensors.front();
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  OpCall call(OpId::Cat, first_of(tensors));
  Tensor out;
  if (!OpCall::records_list(tensors)) {
    out = ops::cat(tensors, dim);
  } else {
    out = autograd::below_autograd([&] { return ops::cat(tensors, dim); });
    auto node = autograd::make_node_list<autograd::JoinBackward>(call.op(), tensors);
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
  }
  if (call.reported()) call.report(tensors, {{"dim", dim}}, {out});
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  OpCall call(OpId::Stack, first_of(tensors));
  Tensor out;
  if (!OpCall::records_list(tensors)) {
    out = ops::stack(tensors, dim);
  } else {
    out = autograd::below_autograd([&] { return ops::stack(tensors, dim); });
    auto node = autograd::make_node_list<autograd::JoinBackward>(call.op(), tensors);
    node->stack = true;
    node->dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
    autograd::set_history(out, node);
  }
  if (call.reported()) call.report(tensors, {{"dim", dim}}, {out});
  return out;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  OpCall call(OpId::IndexSelect, x);
  Tensor out = record_index(call.op(), IndexKind::IndexSelect, x, Tensor(), dim, index,
                            [&] { return ops::index_select(x, dim, index); });
  if (call.reported()) call.report({x, index}, {{"dim", dim}}, {out});
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  OpCall call(OpId::Gather, x);
  Tensor out = record_index(call.op(), IndexKind::Gather, x, Tensor(), dim, index,
                            [&] { return ops::gather(x, dim, index); });
  if (call.reported()) call.report({x, index}, {{"dim", dim}}, {out});
  return out;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  OpCall call(OpId::Scatter, x);
  Tensor out = record_index(call.op(), IndexKind::Scatter, x, src, dim, index,
                            [&] { return ops::scatter(x, dim, index, src); });
  if (call.reported()) call.report({x, index, src}, {{"dim", dim}}, {out});
  return out;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  OpCall call(OpId::Scatter, x);
  Tensor out = record_index(call.op(), IndexKind::ScatterValue, x, Tensor(), dim, index,
                            [&] { return ops::scatter(x, dim, index, value); });
  if (call.reported())
    call.report({x, index}, {{"dim", dim}, {"value", number_attribute(value)}}, {out});
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  OpCall call(OpId::ScatterAdd, x);
  Tensor out = record_index(call.op(), IndexKind::ScatterAdd, x, src, dim, index,
                            [&] { return ops::scatter_add(x, dim, index, src); });
  if (call.reported()) call.report({x, index, src}, {{"dim", dim}}, {out});
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  OpCall call(OpId::MaskedFill, x);
  Tensor out = record_index(call.op(), IndexKind::MaskedFill, x, Tensor(), 0, mask,
                            [&] { return ops::masked_fill(x, mask, value); });
  if (call.reported()) call.report({x, mask}, {{"value", number_attribute(value)}}, {out});
  return out;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  OpCall call(OpId::MaskedSelect, x);
  Tensor out;
  if (!OpCall::records(x)) {
    out = ops::masked_select(x, mask);
  } else {
    out = autograd::below_autograd([&] { return ops::masked_select(x, mask); });
    auto node = autograd::make_node<IndexBackward>(call.op(), x);
    node->kind = IndexKind::MaskedSelect;
    node->index = autograd::SavedTensor(mask);
    node->shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
    autograd::set_history(out, node);
  }
  if (call.reported()) call.report({x, mask}, {}, {out});
  return out;
}

// Index results record nothing; a trace sees the call.
Tensor nonzero(const Tensor& x) {
  OpCall call(OpId::Nonzero, x);
  Tensor out = ops::nonzero(x);
  if (call.reported()) call.report({x}, {}, {out});
  return out;
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  OpCall call(OpId::OneHot, x);
  Tensor out = ops::one_hot(x, num_classes);
  if (call.reported()) call.report({x}, {{"num_classes", num_classes}}, {out});
  return out;
}

}  // namespace rcuda
