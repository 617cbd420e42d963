// The functional forms of torch's layers: linear, dropout, layer_norm, embedding, one_hot.
// Differentiable with respect to every floating tensor argument that requires grad.
#pragma once

#include <optional>

#include "rcuda/ops/indexing.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

// x @ weight^T + bias. weight is [out_features, in_features]; x is [..., in_features] (1-D
// included); bias, when defined, is [out_features]. 2-D x takes one addmm (bias folded into the
// GEMM). ShapeError naming both shapes when x's last dim is not in_features.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// Zeroes each element with probability p and scales the rest by 1 / (1 - p), drawing from the
// default generator (Note [Philox stream] in rcuda/core/philox.h); x itself when !training or
// p == 0, zeros (x * 0) when p == 1. ValueError for p outside [0, 1]; floating x only.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

// Normalises over the trailing dims given by normalized_shape (mean 0, variance 1 with the
// biased variance, eps added to it), then scales by weight and shifts by bias (each of
// normalized_shape, optional). float16/bfloat16 are computed in float32.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

// Rows of weight [num_embeddings, embedding_dim] picked by integer indices (int64 or int32, any
// shape): result [*indices.shape, embedding_dim]. Rows at padding_idx (negative counts from the
// end) get no gradient. IndexError for an index outside [0, num_embeddings).
Tensor embedding(const Tensor& indices, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt);

// int64 class indices -> int64 one-hot in a new last dim (rcuda/ops/indexing.h).
using ops::one_hot;

}  // namespace rcuda::nn
