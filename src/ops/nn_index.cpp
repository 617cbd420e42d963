// index_add_ (a scatter-add of rows along a dim) and the embedding gradient built on it.
#include <algorithm>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/nn.h"

namespace rcuda::ops {
namespace {

// 0-dim tensors take part as 1-element 1-D ones (the primitives want at least one dim).
Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

}  // namespace

const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) {
  constexpr const char* kOp = "index_add_";
  check_not_float8(kOp, self);
  check_not_float8(kOp, source);
  const int64_t ndim = std::max<int64_t>(1, self.dim());
  RCUDA_CHECK(dim >= -ndim && dim < ndim, IndexError, kOp, ": dim ", dim,
              " is out of range for a tensor of ", self.dim(), " dims");
  if (dim < 0) dim += ndim;
  RCUDA_CHECK(is_integral(index.dtype(), false), DTypeError, kOp, ": index must be integral, got ",
              dtype_name(index.dtype()));
  RCUDA_CHECK(index.dim() <= 1, ShapeError, kOp, ": index must be 1-D, got shape ",
              shape_str(index.shape()));
  RCUDA_CHECK(source.dtype() == self.dtype(), DTypeError, kOp, ": self (", dtype_name(self.dtype()),
              ") and source (", dtype_name(source.dtype()), ") must have the same dtype");
  const Tensor out = at_least_1d(self), src = at_least_1d(source);
  bool sizes_match = out.dim() == src.dim();
  for (int64_t d = 0; sizes_match && d < out.dim(); ++d)
    sizes_match = d == dim || out.shape()[d] == src.shape()[d];
  RCUDA_CHECK(sizes_match && src.shape()[dim] == index.numel(), ShapeError, kOp,
              ": source of shape ", shape_str(source.shape()), " does not fit self of shape ",
              shape_str(self.shape()), " with ", index.numel(), " indices along dim ", dim);
  check_same_device(kOp, {self, index, source});
  RCUDA_CHECK(is_floating(self.dtype()) || !alpha.is_floating(), DTypeError, kOp,
              ": alpha must not be a floating number for an integral self (got ", alpha.to_double(),
              ")");
  if (index.numel() == 0 || out.numel() == 0) return self;
  const Tensor scaled = alpha.to_double() == 1.0 ? src : cast(mul(src, alpha), self.dtype());
  const Tensor idx = contiguous(cast(index, DType::Int64)).view({index.numel()});
  const Tensor target = out.is_contiguous() ? out : contiguous(out);
  backend_of(self).index_add(target, dim, idx, contiguous(scaled));
  if (!target.is_same(out)) copy_(out, target);
  self.storage()->bump_version();
  return self;
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  Tensor out = clone(self);
  index_add_(out, dim, index, source, alpha);
  return out;
}

Tensor embedding_backward(const Tensor& grad_out, const Tensor& indices, int64_t num_weights,
                          std::optional<int64_t> padding_idx) {
  constexpr const char* kOp = "embedding_backward";
  RCUDA_CHECK(is_integral(indices.dtype(), false), DTypeError, kOp,
              ": indices must be integral, got ", dtype_name(indices.dtype()));
  RCUDA_CHECK(num_weights >= 0, ValueError, kOp, ": num_weights must be >= 0, got ", num_weights);
  bool shape_ok = grad_out.dim() == indices.dim() + 1;
  for (int64_t d = 0; shape_ok && d < indices.dim(); ++d)
    shape_ok = grad_out.shape()[d] == indices.shape()[d];
  RCUDA_CHECK(shape_ok, ShapeError, kOp, ": grad_out of shape ", shape_str(grad_out.shape()),
              " must be indices' shape ", shape_str(indices.shape()), " plus the embedding dim");
  if (padding_idx) {
    RCUDA_CHECK(*padding_idx >= -num_weights && *padding_idx < num_weights, IndexError, kOp,
                ": padding_idx ", *padding_idx, " is out of range for ", num_weights, " weights");
    if (*padding_idx < 0) *padding_idx += num_weights;
  }
  const int64_t dim = grad_out.shape().back(), n = indices.numel();
  Tensor grad_weight = zeros({num_weights, dim}, {grad_out.dtype(), grad_out.device()});
  index_add_(grad_weight, 0, reshape(indices, {n}), reshape(grad_out, {n, dim}));
  if (padding_idx) fill_(grad_weight.select(0, *padding_idx), 0);
  return grad_weight;
}

}  // namespace rcuda::ops
