#include "layer_layout.h"

#include <memory>
#include <vector>

#include "ops_util.h"

namespace rcuda::ops {
namespace {

// Every element at its channels-last offset (size-1 dims' strides do not matter).
bool has_channels_last_offsets(const Tensor& t) {
  if (t.dim() < 3) return false;
  const Strides expected = channels_last_strides(t.shape());
  for (int64_t i = 0; i < t.dim(); ++i)
    if (t.shape()[i] != 1 && t.strides()[i] != expected[i]) return false;
  return true;
}

}  // namespace

Strides channels_last_strides(const Shape& shape) {
  const size_t d = shape.size();
  Strides strides(d);
  int64_t expected = 1;
  strides[1] = expected;
  expected *= shape[1];
  for (size_t i = d; i-- > 2;) {
    strides[i] = expected;
    expected *= shape[i];
  }
  strides[0] = expected;
  return strides;
}

bool is_channels_last(const Tensor& t) {
  return !t.is_contiguous() && has_channels_last_offsets(t);
}

Tensor empty_in_format(const Shape& shape, DType dtype, Device device, bool channels_last) {
  Tensor t = Tensor::empty(shape, dtype, device);
  if (channels_last) t.impl()->strides = channels_last_strides(shape);  // same bytes, new order
  return t;
}

Tensor without_unit_dims(const Tensor& t, const std::vector<int64_t>& dims) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->autograd = nullptr;
  impl->is_view = false;
  for (size_t k = dims.size(); k-- > 0;) {
    impl->shape.erase(impl->shape.begin() + dims[k]);
    impl->strides.erase(impl->strides.begin() + dims[k]);
  }
  return Tensor(std::move(impl));
}

Tensor in_format(const Tensor& t, bool channels_last) {
  if (t.numel() == 0 || (channels_last ? has_channels_last_offsets(t) : t.is_contiguous()))
    return t;
  Tensor out = empty_in_format(t.shape(), t.dtype(), t.device(), channels_last);
  backend_of(t).copy(out, t);
  return out;
}

}  // namespace rcuda::ops
