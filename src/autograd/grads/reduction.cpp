// Gradients of reductions.
#include "reduction.h"

#include <algorithm>

#include "rcuda/ops/elementwise.h"

namespace rcuda::autograd {

Tensor unsqueeze_reduced(const Tensor& grad, const Shape& input_shape,
                         const std::vector<int64_t>& dims, bool keepdim) {
  const int64_t n = static_cast<int64_t>(input_shape.size());
  if (keepdim || n == 0) return grad;
  std::vector<int64_t> wrapped;
  if (dims.empty()) {
    for (int64_t d = 0; d < n; ++d) wrapped.push_back(d);
  } else {
    for (int64_t d : dims) wrapped.push_back(wrap_dim(d, n, "sum"));
  }
  std::sort(wrapped.begin(), wrapped.end());
  Tensor g = grad;
  for (int64_t d : wrapped) g = g.unsqueeze(d);
  return g;
}

TensorList SumBackward::apply(TensorList&& grads) {
  const Shape& shape = input_meta()[0].shape;
  Tensor g = unsqueeze_reduced(grads[0], shape, dims, keepdim);
  if (mean) {
    int64_t count = 1;
    const int64_t n = static_cast<int64_t>(shape.size());
    if (dims.empty()) {
      count = numel(shape);
    } else {
      for (int64_t d : dims) count *= shape[wrap_dim(d, n, "mean")];
    }
    g = ops::div(g, static_cast<double>(count));
  }
  return {g.expand(shape)};
}

}  // namespace rcuda::autograd
