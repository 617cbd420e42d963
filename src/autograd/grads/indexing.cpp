// Gradients of joining and indexing (PyTorch's formulas of derivatives.yaml): what an index read
// is added back at the same index (scatter_add), what an index wrote is read back (gather), and
// masks zero or pick elements with where(). None reads values back to the host; the index
// primitives themselves check their indices (Note [Index bounds on the GPU]).
#include "indexing.h"

#include "../formula.h"

#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::autograd {
namespace {

Tensor zeros_of(const Shape& shape, const Tensor& like) {
  return ops::zeros(shape, TensorOptions(like.dtype(), like.device()));
}

// t written into the leading corner of zeros of `shape`: src of scatter may be larger than the
// index, and only the part the index reads gets a gradient.
Tensor pad_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  if (formula::recording()) {
    // The same as a recorded constant pad at the end of each dim.
    const Tensor part = t.dim() == 0 ? t.view({1}) : t;
    std::vector<int64_t> padding;
    for (int64_t d = part.dim() - 1; d >= 0; --d) {
      padding.push_back(0);
      padding.push_back(shape[static_cast<size_t>(d)] - part.size(d));
    }
    return rcuda::pad(part, padding);
  }
  const Tensor out = zeros_of(shape, t);
  const Tensor part = t.dim() == 0 ? t.view({1}) : t;
  Tensor corner = out;
  for (int64_t d = 0; d < part.dim(); ++d) corner = corner.narrow(d, 0, part.size(d));
  ops::copy_(corner, part);
  return out;
}

// index_select's gradient: grad added into zeros of x's shape at index along dim (index_add),
// as a scatter_add whose index is the 1-D index expanded over the other dims.
Tensor index_add_into_zeros(const Tensor& g, const Shape& x_shape, int64_t dim,
                            const Tensor& index) {
  const int64_t n = static_cast<int64_t>(x_shape.size());
  if (n == 0) return g;  // a 0-dim input takes exactly one index: the gradient passes through
  const int64_t d = wrap_dim(dim, n, "index_select");
  Shape along(static_cast<size_t>(n), 1);
  along[d] = index.numel();
  const Tensor spread = ops::reshape(index, along).expand(g.shape());
  return formula::scatter_add(zeros_of(x_shape, g), d, spread, g);
}

// masked_select's gradient: element k of grad goes back to the k-th true position of the mask.
// A running count of the mask says which k each position takes, so that the size of the result
// (known to the host only after the forward's synchronisation) is never needed again.
Tensor masked_scatter_into_zeros(const Tensor& g, const Tensor& mask, const Shape& shape) {
  if (g.numel() == 0) return zeros_of(shape, g);
  const Tensor flat_mask = ops::reshape(mask.expand(shape), {-1});
  const Tensor place = ops::sub(ops::cumsum(flat_mask, 0), 1);
  const Tensor picked = formula::index_select(g, 0, ops::where(flat_mask, place, 0));
  return formula::reshape(formula::where(flat_mask, picked, 0.0), shape);
}

}  // namespace

TensorList JoinBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  TensorList out(input_meta().size());
  int64_t offset = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t size = stack ? 1 : sizes[i];
    if (size < 0) {
      if (needs_input_grad(i)) out[i] = zeros_of({0}, g);
      continue;
    }
    if (needs_input_grad(i))
      out[i] = stack ? g.select(dim, static_cast<int64_t>(i)) : g.narrow(dim, offset, size);
    offset += size;
  }
  return out;
}

const char* IndexBackward::name() const {
  switch (kind) {
    case IndexKind::IndexSelect:
      return "IndexSelectBackward";
    case IndexKind::Gather:
      return "GatherBackward";
    case IndexKind::Scatter:
    case IndexKind::ScatterValue:
      return "ScatterBackward";
    case IndexKind::ScatterAdd:
      return "ScatterAddBackward";
    case IndexKind::MaskedFill:
      return "MaskedFillBackward";
    case IndexKind::MaskedSelect:
      return "MaskedSelectBackward";
  }
  return "IndexBackward";
}

TensorList IndexBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  const Shape& x_shape = input_meta()[0].shape();
  const Tensor idx = index.unpack(*this);
  // src's gradient: what the index wrote, read back from the gradient.
  const auto src_grad = [&] {
    return needs_input_grad(1) ? pad_to(formula::gather(g, dim, idx), input_meta()[1].shape())
                               : Tensor();
  };
  switch (kind) {
    case IndexKind::IndexSelect:
      return {index_add_into_zeros(g, x_shape, dim, idx)};
    case IndexKind::Gather:
      return {formula::scatter_add(zeros_of(x_shape, g), dim, idx, g)};
    case IndexKind::Scatter: {
      // x's values at the written positions were overwritten: their gradient is 0.
      const Tensor gx = needs_input_grad(0) ? formula::scatter(g, dim, idx, 0.0) : Tensor();
      return {gx, src_grad()};
    }
    case IndexKind::ScatterValue:
      return {formula::scatter(g, dim, idx, 0.0)};
    case IndexKind::ScatterAdd:
      return {needs_input_grad(0) ? g : Tensor(), src_grad()};
    case IndexKind::MaskedFill:
      return {formula::where(idx, 0.0, g)};
    case IndexKind::MaskedSelect:
      return {masked_scatter_into_zeros(g, idx, shape)};
  }
  throw InternalError("internal error in autograd: IndexBackward of an unknown kind");
}

}  // namespace rcuda::autograd
