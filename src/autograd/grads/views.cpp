// Gradients of views and copies. A view's gradient is the view undone: reshaped, permuted back,
// summed over expanded dims, or written into zeros of the base's shape through the same view.
#include "views.h"

#include "../formula.h"
#include "rcuda/autograd/record.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"

namespace rcuda::autograd {

const char* ViewBackward::name() const {
  switch (spec.kind) {
    case ViewKind::AsStrided:
      return "AsStridedBackward";
    case ViewKind::View:
      return "ViewBackward";
    case ViewKind::Permute:
      return "PermuteBackward";
    case ViewKind::Transpose:
      return "TransposeBackward";
    case ViewKind::Slice:
      return "SliceBackward";
    case ViewKind::Select:
      return "SelectBackward";
    case ViewKind::Expand:
      return "ExpandBackward";
    case ViewKind::Diagonal:
      return "DiagonalBackward";
  }
  return "ViewBackward";
}

namespace {

// The same view taken of `t`, a tensor of the base's shape.
Tensor replay(const ViewSpec& s, const Tensor& t, const Shape& view_shape,
              const Strides& view_strides, int64_t view_offset) {
  switch (s.kind) {
    case ViewKind::Slice:
      return t.slice(s.dim0, s.start, s.end, s.step);
    case ViewKind::Select:
      return t.select(s.dim0, s.start);
    case ViewKind::Diagonal:
      return t.diagonal(s.start, s.dim0, s.dim1);
    case ViewKind::AsStrided:
      return t.as_strided(view_shape, view_strides, view_offset);
    case ViewKind::View:
    case ViewKind::Permute:
    case ViewKind::Transpose:
    case ViewKind::Expand:
      break;
  }
  return t;
}

}  // namespace

TensorList ViewBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  const Shape& base = input_meta()[0].shape();
  switch (spec.kind) {
    case ViewKind::View:
      return {formula::reshape(g, base)};
    case ViewKind::Permute: {
      std::vector<int64_t> inverse(spec.dims.size());
      for (size_t i = 0; i < spec.dims.size(); ++i) {
        int64_t d = spec.dims[i];
        if (d < 0) d += static_cast<int64_t>(spec.dims.size());
        inverse[d] = static_cast<int64_t>(i);
      }
      return {g.permute(inverse)};
    }
    case ViewKind::Transpose:
      return {g.transpose(spec.dim0, spec.dim1)};
    case ViewKind::Expand:
      return {g};  // the engine sums it back to the base's shape
    case ViewKind::AsStrided:
    case ViewKind::Slice:
    case ViewKind::Select:
    case ViewKind::Diagonal:
      break;
  }
  // Written through the same view into zeros of the base's (contiguous) shape. as_strided
  // addresses storage, so it replays on a contiguous base only (checked when recorded).
  const auto write_into_zeros = [&] {
    Tensor zeros = ops::zeros(base, TensorOptions(g.dtype(), g.device()));
    ops::copy_(replay(spec, zeros, g.shape(), spec.dims, spec.start), g);
    return zeros;
  };
  if (!formula::recording()) return {write_into_zeros()};
  // Creating a graph: the write is linear in g, and its gradient is the view itself.
  Tensor out = below_autograd(write_into_zeros);
  if (g.requires_grad()) {
    auto node = make_node<ViewScatterBackward>(op(), g);
    node->spec = spec;
    set_history(out, std::move(node));
  }
  return {out};
}

TensorList ViewScatterBackward::apply(TensorList&& grads) {
  // as_strided addresses storage: it replays on a contiguous tensor of the base's shape.
  const Tensor g = spec.kind == ViewKind::AsStrided ? formula::contiguous(grads[0]) : grads[0];
  const InputMeta& view = input_meta(0);
  return {replay(spec, g, view.shape(), spec.dims, spec.start)};
}

TensorList ReshapeBackward::apply(TensorList&& grads) {
  return {formula::reshape(grads[0], input_meta()[0].shape())};
}

TensorList ToBackward::apply(TensorList&& grads) {
  const InputMeta& in = input_meta(0);
  const Tensor& g = grads[0];
  return {g.device() == in.device ? g : formula::to(g, in.device, in.dtype)};
}

TensorList CopyBackward::apply(TensorList&& grads) {
  const InputMeta& src = input_meta(1);
  const Tensor& g = grads[0];
  return {Tensor(), g.device() == src.device ? g : formula::to(g, src.device, src.dtype)};
}

}  // namespace rcuda::autograd
