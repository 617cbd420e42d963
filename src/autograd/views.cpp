// Entry points for views and copies, and the view hook the tensor layer calls (Note [Views
// record through a hook] in rcuda/tensor/autograd_meta.h).
#include "grads/views.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"

namespace rcuda {
namespace {

using autograd::below_autograd;
using autograd::make_node;
using autograd::set_history;
using autograd::should_record;

void record_view_of(const Tensor& base, const Tensor& view, const ViewSpec& spec) {
  if (!base.requires_grad()) return;
  auto node = make_node<autograd::ViewBackward>(base);
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
Tensor record_simple(const Tensor& t, Forward forward) {
  if (!should_record(t)) return forward();
  Tensor out = below_autograd(forward);
  if (out.is_same(t)) return out;  // nothing changed (to() of the same dtype, contiguous())
  set_history(out, make_node<N>(t));
  return out;
}

}  // namespace

Tensor reshape(const Tensor& t, const Shape& shape) {
  return record_simple<autograd::ReshapeBackward>(t, [&] { return ops::reshape(t, shape); });
}
Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  return record_simple<autograd::ReshapeBackward>(
      t, [&] { return ops::flatten(t, start_dim, end_dim); });
}
Tensor contiguous(const Tensor& t) {
  return record_simple<autograd::ToBackward>(t, [&] { return ops::contiguous(t); });
}
Tensor contiguous(const Tensor& t, MemoryFormat format) {
  return record_simple<autograd::ToBackward>(t, [&] { return ops::contiguous(t, format); });
}
Tensor clone(const Tensor& t) {
  return record_simple<autograd::ToBackward>(t, [&] { return ops::clone(t); });
}
Tensor to(const Tensor& t, DType dtype) {
  return record_simple<autograd::ToBackward>(t, [&] { return ops::to(t, dtype); });
}
Tensor to(const Tensor& t, Device device) {
  return record_simple<autograd::ToBackward>(t, [&] { return ops::to(t, device); });
}
Tensor to(const Tensor& t, Device device, DType dtype) {
  return record_simple<autograd::ToBackward>(t, [&] { return ops::to(t, device, dtype); });
}

const Tensor& copy_(const Tensor& dst, const Tensor& src) {
  autograd::check_inplace("copy_", dst);
  if (!should_record(dst, src)) return ops::copy_(dst, src);
  autograd::check_not_view("copy_", dst);
  auto node = make_node<autograd::CopyBackward>(dst, src);
  below_autograd([&] { return ops::copy_(dst, src); });
  set_history(dst, node);
  return dst;
}

namespace {

// fill_, uniform_, normal_: every element overwritten, so no gradient flows to the old values;
// the tensor takes a FillBackward into its history (refused for leaves and views as copy_).
template <typename Forward>
const Tensor& record_overwrite(const char* op, const Tensor& t, Forward forward) {
  autograd::check_inplace(op, t);
  if (!should_record(t)) return forward();
  autograd::check_not_view(op, t);
  auto node = make_node<autograd::FillBackward>(t);
  below_autograd(forward);
  set_history(t, node);
  return t;
}

}  // namespace

const Tensor& uniform_(const Tensor& t, double low, double high) {
  return record_overwrite("uniform_", t,
                          [&]() -> const Tensor& { return ops::uniform_(t, low, high); });
}

const Tensor& normal_(const Tensor& t, double mean, double std) {
  return record_overwrite("normal_", t,
                          [&]() -> const Tensor& { return ops::normal_(t, mean, std); });
}

const Tensor& fill_(const Tensor& t, const Scalar& value) {
  return record_overwrite("fill_", t, [&]() -> const Tensor& { return ops::fill_(t, value); });
}

}  // namespace rcuda
