// Tensor: a cheap refcounted handle to a TensorImpl (storage + shape + strides + offset + dtype).
// Views share storage and differ only in shape, strides and offset; every method here is a view
// or a metadata query and never touches the data. Ops that compute live in rcuda/ops/.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rcuda/core/device.h"
#include "rcuda/core/dtype.h"
#include "rcuda/core/shape.h"
#include "rcuda/tensor/storage.h"

namespace rcuda {

// Filled in by the autograd layer; the tensor layer only keeps the slot
// (rcuda/tensor/autograd_meta.h, Note [Autograd metadata]).
struct AutogradMeta;
struct ViewSpec;
namespace autograd {
class Node;
}

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;     // in elements
  int64_t offset = 0;  // in elements, from storage->data()
  DType dtype = DType::Float32;
  // Made by a view method (shares storage with the tensor it was taken from).
  bool is_view = false;
  std::shared_ptr<AutogradMeta> autograd;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // New uninitialised contiguous tensor; ShapeError for negative or overflowing sizes.
  static Tensor empty(Shape shape, DType dtype, Device device = Device());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->shape; }
  const Strides& strides() const { return impl_->strides; }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t offset() const { return impl_->offset; }
  int64_t numel() const { return rcuda::numel(impl_->shape); }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device(); }
  size_t element_size() const { return rcuda::element_size(impl_->dtype); }
  bool is_contiguous() const;
  // True when the elements occupy one dense block in some order (a permuted contiguous tensor).
  bool is_non_overlapping_and_dense() const;

  void* data_ptr() const;  // address of the first element (storage data + offset)
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  // A reference that does not keep the tensor alive (Tensor(weak.lock()) makes a handle again).
  std::weak_ptr<TensorImpl> weak_impl() const { return impl_; }
  TensorImpl* impl() const { return impl_.get(); }
  // Same tensor object (not equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  // How many handles share this TensorImpl (autograd steals a gradient nobody else holds).
  long use_count() const { return impl_.use_count(); }

  // ---- views (no copy) -------------------------------------------------------------------
  Tensor as_strided(const Shape& shape, const Strides& strides, int64_t offset) const;
  // Same elements, new shape (one -1 is inferred); ShapeError when the strides cannot express
  // it without a copy (use rcuda::reshape, which copies then).
  Tensor view(const Shape& shape) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // 0-, 1- and 2-D only, as torch
  // Elements start, start+step, ... below end along dim (start/end clamped like Python slices).
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // removes dim
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  // Size-1 dims stretch with stride 0; -1 keeps a size; new leading dims allowed.
  Tensor expand(const Shape& shape) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  // A new handle sharing this storage, shape, strides, offset and dtype, without autograd
  // metadata (internal use).
  Tensor alias() const;
  // The same over this storage and dtype with the layout given (views: no copy of this
  // tensor's shape and strides only to overwrite them).
  Tensor alias(Shape shape, Strides strides, int64_t offset) const;
  // Points this tensor at `other`'s storage, layout and dtype, in place (torch's `t.data =
  // other`): every handle to this tensor sees the new data, and its autograd state (a leaf's
  // requires_grad, its grad) stays. How a module's parameters move between devices and layouts
  // while optimizers keep their handles.
  void set_data(const Tensor& other) const;

  // ---- autograd state (the autograd layer records and runs backward: rcuda/autograd.h) ----
  // A leaf with requires_grad set, or the output of a recorded op.
  bool requires_grad() const;
  // Sets the flag on a leaf; DTypeError for non-floating tensors, ValueError for non-leaves
  // when turning it off (as torch). Returns *this.
  const Tensor& requires_grad_(bool requires_grad = true) const;
  bool is_leaf() const;
  bool is_view() const { return impl_->is_view; }
  // The accumulated gradient of a leaf (or of a non-leaf that retains its gradient).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  // The node that produced this tensor; null for leaves.
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  AutogradMeta* autograd_meta() const { return impl_->autograd.get(); }
  AutogradMeta& ensure_autograd_meta() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Returns the strides that `view(new_shape)` would give, or false when a copy is needed.
// The view hook's entry (Note [Views record through a hook] in autograd_meta.h).
Tensor record_view(const Tensor& base, Tensor view, const ViewSpec& spec);

bool compute_view_strides(const Shape& old_shape, const Strides& old_strides,
                          const Shape& new_shape, Strides* new_strides);
// Resolves one -1 in `shape` for `numel` elements; ShapeError naming `op` otherwise.
Shape infer_size(const Shape& shape, int64_t numel, const char* op);

}  // namespace rcuda
