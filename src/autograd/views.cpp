// Entry points for views and copies, and the view hook the tensor layer calls (Note [Views
// record through a hook] in rcuda/tensor/autograd_meta.h).
#include "grads/views.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"

namespace rcuda {
namespace {

using autograd::below_autograd;
using autograd::make_node;
using autograd::OpCall;
using autograd::set_history;

// The public op of a view: what an observer hears of and what the view's node names.
OpId view_op(ViewKind kind) {
  switch (kind) {
    case ViewKind::View:
      return OpId::View;
    case ViewKind::Permute:
      return OpId::Permute;
    case ViewKind::Transpose:
      return OpId::Transpose;
    case ViewKind::Slice:
      return OpId::Slice;
    case ViewKind::Select:
      return OpId::Select;
    case ViewKind::Expand:
      return OpId::Expand;
    case ViewKind::Diagonal:
      return OpId::Diagonal;
    case ViewKind::AsStrided:
      return OpId::AsStrided;
  }
  return OpId::View;
}

// A view's call as an observer hears it: the view method's own arguments (docs/graph.md).
void report_view(const Tensor& base, const Tensor& view, const ViewSpec& spec) {
  Attributes attrs;
  switch (spec.kind) {
    case ViewKind::View:
      attrs.set("shape", std::vector<int64_t>(view.shape().begin(), view.shape().end()));
      break;
    case ViewKind::Permute:
      attrs.set("dims", std::vector<int64_t>(spec.dims.begin(), spec.dims.end()));
      break;
    case ViewKind::Transpose:
      attrs.set("dim0", spec.dim0);
      attrs.set("dim1", spec.dim1);
      break;
    case ViewKind::Slice:
      attrs.set("dim", spec.dim0);
      attrs.set("start", spec.start);
      attrs.set("end", spec.end);
      attrs.set("step", spec.step);
      break;
    case ViewKind::Select:
      attrs.set("dim", spec.dim0);
      attrs.set("index", spec.start);
      break;
    case ViewKind::Expand:
      attrs.set("shape", std::vector<int64_t>(view.shape().begin(), view.shape().end()));
      break;
    case ViewKind::Diagonal:
      attrs.set("offset", spec.start);
      attrs.set("dim1", spec.dim0);
      attrs.set("dim2", spec.dim1);
      break;
    case ViewKind::AsStrided:
      attrs.set("size", std::vector<int64_t>(view.shape().begin(), view.shape().end()));
      attrs.set("stride", std::vector<int64_t>(view.strides().begin(), view.strides().end()));
      attrs.set("storage_offset", view.offset());
      break;
  }
  autograd::report_op(view_op(spec.kind), {base}, attrs, {view});
}

void record_view_of(const Tensor& base, const Tensor& view, const ViewSpec& spec) {
  if (autograd::observed()) report_view(base, view, spec);
  if (!GradMode::is_enabled() || !base.requires_grad()) return;
  auto node = make_node<autograd::ViewBackward>(view_op(spec.kind), base);
  node->spec = spec;
  if (spec.kind == ViewKind::AsStrided) {
    RCUDA_CHECK(base.is_contiguous(), ValueError,
                "as_strided: autograd supports as_strided views of contiguous tensors only (the "
                "base has shape ",
                shape_str(base.shape()), " and strides ", shape_str(base.strides()), ")");
    node->spec.dims = view.strides();
    node->spec.start = view.offset() - base.offset();
  }
  set_history(view, node);
}

const bool view_hook_installed = [] {
  set_view_hook(&record_view_of);
  return true;
}();

// Records a node of type N with the single input t, for ops whose gradient needs nothing saved.
template <typename N, typename Forward>
Tensor record_simple(OpId op, const Tensor& t, Forward forward) {
  if (!OpCall::records(t)) return forward();
  Tensor out = below_autograd(forward);
  if (out.is_same(t)) return out;  // nothing changed (to() of the same dtype, contiguous())
  set_history(out, make_node<N>(op, t));
  return out;
}

// The funnel around record_simple: the call is reported with `attrs` (made only when asked).
template <typename N, typename Forward, typename MakeAttrs>
Tensor simple_call(OpId op, const Tensor& t, Forward forward, MakeAttrs attrs) {
  OpCall call(op, t);
  Tensor out = record_simple<N>(op, t, forward);
  if (call.reported()) call.report({t}, attrs(), {out});
  return out;
}

Attributes none() { return {}; }

std::vector<int64_t> dims_of(const Shape& shape) { return {shape.begin(), shape.end()}; }

}  // namespace

Tensor reshape(const Tensor& t, const Shape& shape) {
  return simple_call<autograd::ReshapeBackward>(
      OpId::Reshape, t, [&] { return ops::reshape(t, shape); },
      [&] {
        return Attributes{{"shape", dims_of(shape)}};
      });
}
Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  return simple_call<autograd::ReshapeBackward>(
      OpId::Flatten, t, [&] { return ops::flatten(t, start_dim, end_dim); },
      [&] {
        return Attributes{{"start_dim", start_dim}, {"end_dim", end_dim}};
      });
}
Tensor contiguous(const Tensor& t) {
  return simple_call<autograd::ToBackward>(
      OpId::Contiguous, t, [&] { return ops::contiguous(t); }, none);
}
Tensor contiguous(const Tensor& t, MemoryFormat format) {
  return simple_call<autograd::ToBackward>(
      OpId::Contiguous, t, [&] { return ops::contiguous(t, format); },
      [&] {
        return Attributes{
            {"memory_format",
             std::string(format == MemoryFormat::ChannelsLast ? "channels_last" : "contiguous")}};
      });
}
Tensor clone(const Tensor& t) {
  return simple_call<autograd::ToBackward>(
      OpId::Clone, t, [&] { return ops::clone(t); }, none);
}
Tensor to(const Tensor& t, DType dtype) {
  return simple_call<autograd::ToBackward>(
      OpId::To, t, [&] { return ops::to(t, dtype); },
      [&] {
        return Attributes{{"dtype", std::string(dtype_name(dtype))}};
      });
}
Tensor to(const Tensor& t, Device device) {
  return simple_call<autograd::ToBackward>(
      OpId::To, t, [&] { return ops::to(t, device); },
      [&] {
        return Attributes{{"device", device.str()}};
      });
}
Tensor to(const Tensor& t, Device device, DType dtype) {
  return simple_call<autograd::ToBackward>(
      OpId::To, t, [&] { return ops::to(t, device, dtype); },
      [&] {
        return Attributes{{"dtype", std::string(dtype_name(dtype))}, {"device", device.str()}};
      });
}

// In-place ops are reported with the changed tensor as their output: a trace takes that as a
// new value of the tensor (docs/graph.md).
const Tensor& copy_(const Tensor& dst, const Tensor& src) {
  autograd::check_inplace("copy_", dst);
  OpCall call(OpId::CopyInplace, dst);
  call.will_change(dst);
  if (!OpCall::records(dst, src)) {
    ops::copy_(dst, src);
  } else {
    autograd::check_not_view("copy_", dst);
    auto node = make_node<autograd::CopyBackward>(call.op(), dst, src);
    below_autograd([&] { return ops::copy_(dst, src); });
    set_history(dst, node);
  }
  if (call.reported()) call.report({dst, src}, {}, {dst});
  return dst;
}

namespace {

// fill_, uniform_, normal_: every element overwritten, so no gradient flows to the old values;
// the tensor takes a FillBackward into its history (refused for leaves and views as copy_).
template <typename Forward>
const Tensor& record_overwrite(OpId id, const Tensor& t, const Attributes& attrs, Forward forward) {
  const char* op = op_name(id);
  autograd::check_inplace(op, t);
  OpCall call(id, t);
  call.will_change(t);
  if (!OpCall::records(t)) {
    forward();
  } else {
    autograd::check_not_view(op, t);
    auto node = make_node<autograd::FillBackward>(id, t);
    below_autograd(forward);
    set_history(t, node);
  }
  if (call.reported()) call.report({t}, attrs, {t});
  return t;
}

}  // namespace

const Tensor& uniform_(const Tensor& t, double low, double high) {
  return record_overwrite(OpId::UniformInplace, t, {{"low", low}, {"high", high}},
                          [&]() -> const Tensor& { return ops::uniform_(t, low, high); });
}

const Tensor& normal_(const Tensor& t, double mean, double std) {
  return record_overwrite(OpId::NormalInplace, t, {{"mean", mean}, {"std", std}},
                          [&]() -> const Tensor& { return ops::normal_(t, mean, std); });
}

const Tensor& fill_(const Tensor& t, const Scalar& value) {
  return record_overwrite(OpId::FillInplace, t, {{"value", value.to_double()}},
                          [&]() -> const Tensor& { return ops::fill_(t, value); });
}

}  // namespace rcuda
