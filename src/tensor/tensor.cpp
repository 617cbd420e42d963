// Tensor construction and metadata queries.
#include "rcuda/tensor/tensor.h"

#include <algorithm>
#include <limits>

#include "rcuda/core/error.h"

namespace rcuda {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  const int64_t n = checked_numel(shape, "empty");
  const int64_t max_elements = std::numeric_limits<int64_t>::max() / 8;
  RCUDA_CHECK(n <= max_elements, ShapeError, "empty: shape ", shape_str(shape),
              " needs more bytes than int64 can count");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(n) * rcuda::element_size(dtype),
                                            allocator_for(device));
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

int64_t Tensor::size(int64_t d) const { return impl_->shape[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return impl_->strides[wrap_dim(d, dim(), "stride")]; }

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

Tensor Tensor::alias() const { return Tensor(std::make_shared<TensorImpl>(*impl_)); }

}  // namespace rcuda
