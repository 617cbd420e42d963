// Tensor construction and metadata queries.
#include "rcuda/tensor/tensor.h"

#include <algorithm>
#include <atomic>
#include <limits>

#include "rcuda/core/error.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda {

Tensor Tensor::empty(Shape shape, DType dtype, Device device) {
  const int64_t n = checked_numel(shape, "empty");
  const int64_t max_elements = std::numeric_limits<int64_t>::max() / 8;
  RCUDA_CHECK(n <= max_elements, ShapeError, "empty: shape ", shape_str(shape),
              " needs more bytes than int64 can count");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(n) * rcuda::element_size(dtype),
                                            allocator_for(device));
  impl->strides = contiguous_strides(shape);
  impl->shape = std::move(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

// A 0-dim tensor has no size to give (wrap_dim accepts dim 0 for it, as ops that take a dim do).
int64_t Tensor::size(int64_t d) const {
  RCUDA_CHECK(dim() > 0, IndexError, "size: dim ", d, " of a 0-dim tensor (it has no dims)");
  return impl_->shape[wrap_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int64_t d) const {
  RCUDA_CHECK(dim() > 0, IndexError, "stride: dim ", d, " of a 0-dim tensor (it has no dims)");
  return impl_->strides[wrap_dim(d, dim(), "stride")];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = impl_->shape.size(); i-- > 0;) {
    const int64_t size = impl_->shape[i];
    if (size == 0) return true;
    if (size != 1 && impl_->strides[i] != expected) return false;
    expected *= size;
  }
  return true;
}

bool Tensor::is_non_overlapping_and_dense() const {
  if (is_contiguous()) return true;
  // Sort dims by stride; dense when each stride equals the product of the smaller dims' sizes.
  std::vector<size_t> order(impl_->shape.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return impl_->strides[a] < impl_->strides[b]; });
  int64_t expected = 1;
  for (size_t i : order) {
    if (impl_->shape[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->shape[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  char* base = static_cast<char*>(impl_->storage->data());
  return base == nullptr ? nullptr : base + impl_->offset * static_cast<int64_t>(element_size());
}

Tensor Tensor::alias() const { return alias(impl_->shape, impl_->strides, impl_->offset); }

void Tensor::set_data(const Tensor& other) const {
  if (other.impl_ == impl_) return;
  impl_->storage = other.impl_->storage;
  impl_->shape = other.impl_->shape;
  impl_->strides = other.impl_->strides;
  impl_->offset = other.impl_->offset;
  impl_->dtype = other.impl_->dtype;
  impl_->is_view = false;
}

Tensor Tensor::alias(Shape shape, Strides strides, int64_t offset) const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

// ---- autograd state ----------------------------------------------------------------------

namespace {
thread_local bool grad_mode_enabled = true;
ViewHook view_hook = nullptr;
// Observers of op calls alive on any thread (a trace): views go to the hook for them too.
std::atomic<int> view_observers{0};
const std::shared_ptr<autograd::Node> no_node;
}  // namespace

bool GradMode::is_enabled() { return grad_mode_enabled; }
void GradMode::set_enabled(bool enabled) { grad_mode_enabled = enabled; }
void set_view_hook(ViewHook hook) { view_hook = hook; }
void observe_views(bool on) { view_observers.fetch_add(on ? 1 : -1, std::memory_order_relaxed); }

Tensor record_view(const Tensor& base, Tensor view, const ViewSpec& spec) {
  if (view_hook == nullptr) return view;
  if ((base.autograd_meta() != nullptr && grad_mode_enabled) ||
      view_observers.load(std::memory_order_relaxed) > 0)
    view_hook(base, view, spec);
  return view;
}

AutogradMeta& Tensor::ensure_autograd_meta() const {
  if (!impl_->autograd) impl_->autograd = std::make_shared<AutogradMeta>();
  return *impl_->autograd;
}

bool Tensor::requires_grad() const {
  const AutogradMeta* m = impl_->autograd.get();
  return m != nullptr && (m->requires_grad || m->grad_fn != nullptr);
}

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  if (requires_grad) {
    RCUDA_CHECK(is_floating(dtype()), DTypeError,
                "requires_grad_: only floating point tensors can require gradients, got ",
                dtype_name(dtype()));
    RCUDA_CHECK(dtype() != DType::Float8E4M3FN && dtype() != DType::Float8E5M2, DTypeError,
                "requires_grad_: float8 tensors cannot require gradients (", dtype_name(dtype()),
                " is a storage dtype)");
  }
  AutogradMeta* m = impl_->autograd.get();
  if (m != nullptr && m->grad_fn != nullptr) {
    RCUDA_CHECK(requires_grad, ValueError,
                "requires_grad_: you can only change requires_grad of leaf tensors; this one "
                "was produced by an op that recorded a gradient (use detach())");
    return *this;
  }
  if (m == nullptr && !requires_grad) return *this;
  ensure_autograd_meta().requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  return impl_->autograd == nullptr || impl_->autograd->grad_fn == nullptr;
}

Tensor Tensor::grad() const { return impl_->autograd ? impl_->autograd->grad : Tensor(); }

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined()) {
    RCUDA_CHECK(grad.shape() == shape(), ShapeError, "set_grad: gradient of shape ",
                shape_str(grad.shape()), " for a tensor of shape ", shape_str(shape()));
    RCUDA_CHECK(grad.device() == device(), DeviceError, "set_grad: gradient on ",
                grad.device().str(), " for a tensor on ", device().str());
  }
  if (!grad.defined() && impl_->autograd == nullptr) return;
  ensure_autograd_meta().grad = grad;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  return impl_->autograd ? impl_->autograd->grad_fn : no_node;
}

}  // namespace rcuda
