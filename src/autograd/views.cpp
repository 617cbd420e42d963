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
  RCUDA_CHECK(!dst.is_view(), ValueError,
              "copy_: in-place changes of a view are not recorded by autograd (the tensor it "
              "views would not see them); use the out-of-place op");
  auto node = make_node<autograd::CopyBackward>(dst, src);
  below_autograd([&] { return ops::copy_(dst, src); });
  set_history(dst, node);
  return dst;
}

// Random fills overwrite every element: a tensor that records (not a leaf) would need a node
// like fill_'s; refused the same way for leaves, and for views.
const Tensor& uniform_(const Tensor& t, double low, double high) {
  autograd::check_inplace("uniform_", t);
  if (!should_record(t)) return ops::uniform_(t, low, high);
  RCUDA_CHECK(!t.is_view(), ValueError,
              "uniform_: in-place changes of a view are not recorded by autograd (the tensor it "
              "views would not see them); use the out-of-place op");
  auto node = make_node<autograd::FillBackward>(t);
  below_autograd([&] { return ops::uniform_(t, low, high); });
  set_history(t, node);
  return t;
}

const Tensor& normal_(const Tensor& t, double mean, double std) {
  autograd::check_inplace("normal_", t);
  if (!should_record(t)) return ops::normal_(t, mean, std);
  RCUDA_CHECK(!t.is_view(), ValueError,
              "normal_: in-place changes of a view are not recorded by autograd (the tensor it "
              "views would not see them); use the out-of-place op");
  auto node = make_node<autograd::FillBackward>(t);
  below_autograd([&] { return ops::normal_(t, mean, std); });
  set_history(t, node);
  return t;
}

const Tensor& fill_(const Tensor& t, const Scalar& value) {
  autograd::check_inplace("fill_", t);
  if (!should_record(t)) return ops::fill_(t, value);
  RCUDA_CHECK(!t.is_view(), ValueError,
              "fill_: in-place changes of a view are not recorded by autograd (the tensor it "
              "views would not see them); use the out-of-place op");
  auto node = make_node<autograd::FillBackward>(t);
  below_autograd([&] { return ops::fill_(t, value); });
  set_history(t, node);
  return t;
}

}  // namespace rcuda
