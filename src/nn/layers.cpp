// linear, dropout, layer_norm and embedding, composed from the recording ops of
// rcuda/autograd/api.h. Where a fused primitive will take over, the comment says which.
#include <algorithm>
#include <cmath>

#include "nn_util.h"
#include "rcuda/autograd.h"
#include "rcuda/nn/layers.h"

namespace rcuda::nn {

using detail::check_floating;
using detail::check_same_device;

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  constexpr const char* kOp = "linear";
  check_floating(kOp, "input", x);
  check_floating(kOp, "weight", weight);
  RCUDA_CHECK(weight.dim() == 2, ShapeError,
              "linear: weight must be 2-D [out_features, in_features], got shape ",
              shape_str(weight.shape()));
  RCUDA_CHECK(x.dim() >= 1, ShapeError,
              "linear: input must have at least 1 dim (the last holds the in_features), got a "
              "0-dim tensor");
  const int64_t in_features = weight.size(1), out_features = weight.size(0);
  RCUDA_CHECK(x.size(-1) == in_features, ShapeError, "linear: input of shape ",
              shape_str(x.shape()), " has ", x.size(-1),
              " features in its last dim but weight of shape ", shape_str(weight.shape()),
              " expects ", in_features, " (in_features)");
  RCUDA_CHECK(weight.dtype() == x.dtype(), DTypeError, "linear: weight is ",
              dtype_name(weight.dtype()), " but input is ", dtype_name(x.dtype()));
  check_same_device(kOp, "weight", weight, "input", x);
  if (bias.defined()) {
    check_floating(kOp, "bias", bias);
    RCUDA_CHECK(bias.dim() == 1 && bias.size(0) == out_features, ShapeError,
                "linear: bias must have shape [out_features] = [", out_features, "], got ",
                shape_str(bias.shape()));
    RCUDA_CHECK(bias.dtype() == x.dtype(), DTypeError, "linear: bias is ", dtype_name(bias.dtype()),
                " but input is ", dtype_name(x.dtype()));
    check_same_device(kOp, "bias", bias, "input", x);
  }
  // One GEMM with the bias as its C operand; cuBLASLt's bias epilogue would save reading a
  // broadcast bias (a later optimisation inside addmm, not here).
  if (x.dim() == 2) return bias.defined() ? addmm(bias, x, weight.t()) : mm(x, weight.t());
  const Tensor product = matmul(x, weight.t());
  return bias.defined() ? add(product, bias) : product;
}

Tensor dropout(const Tensor& x, double p, bool training) {
  RCUDA_CHECK(p >= 0 && p <= 1, ValueError, "dropout: p must be in [0, 1], got ", p);
  check_floating("dropout", "input", x);
  if (!training || p == 0) return x;
  if (p == 1) return mul(x, 0.0);  // as torch: zeros, NaN and inf inputs giving NaN
  // Fused: a node whose forward is ops::dropout (x * mask / (1 - p) and the Philox mask) and
  // whose backward is ops::dropout_backward(grad, mask, p). Composed: keep each element where a
  // uniform draw is below 1 - p; float16/bfloat16 draw in float32 so that the keep probability is
  // not rounded to the half type's grid.
  const DType draw_dtype = is_reduced_float(x.dtype()) ? DType::Float32 : x.dtype();
  const Tensor keep = ops::lt(ops::rand(x.shape(), TensorOptions(draw_dtype, x.device())), 1.0 - p);
  const Tensor scale = ops::mul(ops::to(keep, x.dtype()), 1.0 / (1.0 - p));
  return mul(x, scale);
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  constexpr const char* kOp = "layer_norm";
  check_floating(kOp, "input", x);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  RCUDA_CHECK(k >= 1, ValueError, "layer_norm: normalized_shape must have at least one dim");
  RCUDA_CHECK(x.dim() >= k &&
                  std::equal(normalized_shape.begin(), normalized_shape.end(), x.shape().end() - k),
              ShapeError, "layer_norm: input of shape ", shape_str(x.shape()),
              " does not end with normalized_shape ", shape_str(normalized_shape));
  for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"weight", weight},
                                std::pair<const char*, const Tensor&>{"bias", bias}}) {
    if (!t.defined()) continue;
    check_floating(kOp, name, t);
    RCUDA_CHECK(t.shape() == normalized_shape, ShapeError, "layer_norm: ", name, " of shape ",
                shape_str(t.shape()), " must have normalized_shape ", shape_str(normalized_shape));
    check_same_device(kOp, name, t, "input", x);
  }
  Dims dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  // Fused: a node whose forward is ops::layer_norm_forward (saving mean and rstd) and whose
  // backward is ops::layer_norm_backward.
  // Composed: two passes (mean, then the biased variance of the centred values), float16 and
  // bfloat16 in float32 as torch computes them.
  const Tensor xf = is_reduced_float(x.dtype()) ? to(x, DType::Float32) : x;
  const Tensor centered = sub(xf, mean(xf, dims, /*keepdim=*/true));
  const Tensor variance = mean(mul(centered, centered), dims, /*keepdim=*/true);
  Tensor y = mul(centered, rsqrt(add(variance, eps)));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y.dtype() == x.dtype() ? y : to(y, x.dtype());
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  constexpr const char* kOp = "embedding";
  RCUDA_CHECK(weight.dim() == 2, ShapeError,
              "embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape ",
              shape_str(weight.shape()));
  RCUDA_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32, DTypeError,
              "embedding: indices must be int64 or int32, got ", dtype_name(indices.dtype()));
  check_same_device(kOp, "indices", indices, "weight", weight);
  const int64_t num_embeddings = weight.size(0);
  if (padding_idx) {
    RCUDA_CHECK(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings, IndexError,
                "embedding: padding_idx ", *padding_idx, " is out of range for ", num_embeddings,
                " embeddings (expected ", -num_embeddings, " to ", num_embeddings - 1, ")");
    if (*padding_idx < 0) *padding_idx += num_embeddings;
  }
  const Tensor index = ops::to(indices, DType::Int64);
  detail::check_index_range(kOp, "index", index, num_embeddings, "embeddings");
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  // Fused: a node with this forward whose backward is ops::embedding_backward(grad, index,
  // num_embeddings, padding_idx) (index_add_ of the gradient's rows, padding rows skipped).
  Tensor rows = reshape(index_select(weight, 0, ops::reshape(index, {-1})), out_shape);
  if (padding_idx && rows.requires_grad()) {
    // Same values; the rows looked up at padding_idx come through a detached alias, so no
    // gradient reaches weight[padding_idx] (torch's padding_idx).
    const Tensor at_padding = ops::eq(index, *padding_idx).unsqueeze(-1);
    rows = where(at_padding, autograd::detach(rows), rows);
  }
  return rows;
}

}  // namespace rcuda::nn
