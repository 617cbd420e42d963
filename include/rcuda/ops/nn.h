// Neural-network ops without autograd: activations, and the forward and backward halves that
// the autograd layer calls for training.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "rcuda/backend/backend.h"
#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// ---- activations (floating input; hardtanh also integral, with bounds truncated) ----------
// x > 0 ? x : negative_slope * x
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// x > 0 ? x : alpha * (exp(x) - 1)
Tensor elu(const Tensor& x, double alpha = 1.0);
// log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (as torch)
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// x clamped to [min_val, max_val]; its gradient is 0 on the bounds (clamp's passes there)
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);

// ---- gradients of elementwise functions -------------------------------------------------
// What unary_grad reads besides grad_out: the forward input, the forward output, or neither
// (torch's choice for each formula), so that the autograd layer saves only that tensor.
enum class UnaryGradSaves { Nothing, Input, Output };
UnaryGradSaves unary_grad_saves(UnaryOp op);

// grad_out * f'(x) in one pass for a floating UnaryOp (every op but LogicalNot), where x is the
// forward input and out = f(x) the forward output; the one unary_grad_saves does not name may
// be undefined. At kinks torch's convention holds (Note [Unary formulas] in
// src/backend/unary_math.h): relu, sign and the rounding ops give 0, clamp passes the gradient
// where min <= x <= max, hardtanh only inside (min, max). All tensors share one shape, one
// floating dtype and one device.
Tensor unary_grad(UnaryOp op, const Tensor& grad_out, const Tensor& x, const Tensor& out,
                  const UnaryArgs& args = {});

// ---- layer normalisation ------------------------------------------------------------------
// Over the last normalized_shape.size() dims of x, which must equal normalized_shape (as
// torch.nn.functional.layer_norm); weight and bias have normalized_shape, or are undefined.
// mean and rstd (1 / sqrt(biased var + eps)) have x's leading dims followed by 1s, float64
// for float64 x and float32 otherwise (half inputs keep float32 statistics); the backward
// reads them.
struct LayerNormForward {
  Tensor out, mean, rstd;
};
LayerNormForward layer_norm_forward(const Tensor& x, const Shape& normalized_shape,
                                    const Tensor& weight = {}, const Tensor& bias = {},
                                    double eps = 1e-5);
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// The gradients wanted by output_mask (input, weight, bias); grad_weight and grad_bias only
// where weight and bias are defined. The others are undefined.
struct LayerNormGrads {
  Tensor grad_input, grad_weight, grad_bias;
};
LayerNormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                                   const Shape& normalized_shape, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, const Tensor& bias,
                                   std::array<bool, 3> output_mask = {true, true, true});

// ---- cross-entropy --------------------------------------------------------------------------
// As torch.nn.functional.cross_entropy: input (C), (N, C) or (N, C, d1, ...) of logits;
// target either class indices (integral, input's shape without the class dim, each in
// [0, C) or ignore_index) or probabilities (input's shape and dtype). weight: [C] or
// undefined. reduction "none", "mean" or "sum"; "mean" divides by the summed weights of the
// non-ignored targets (class indices) or by the number of rows (probabilities).
// label_smoothing in [0, 1]. The loss has input's dtype; on CUDA nothing synchronises: an
// out-of-range class index gives NaN there (backend.h, cross_entropy) where the CPU throws
// IndexError.
struct CrossEntropyOptions {
  Tensor weight;
  std::string reduction = "mean";
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
};
// What the backward reads: the rows' logsumexp, and the mean's divisor (0-dim, or undefined).
struct CrossEntropyForward {
  Tensor loss, logsumexp, divisor;
};
CrossEntropyForward cross_entropy_forward(const Tensor& input, const Tensor& target,
                                          const CrossEntropyOptions& options = {});
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options = {});
// d loss / d input for the upstream grad (the loss's shape: 0-dim unless reduction "none").
Tensor cross_entropy_backward(const Tensor& grad, const Tensor& input, const Tensor& target,
                              const CrossEntropyForward& saved,
                              const CrossEntropyOptions& options = {});

// ---- dropout ---------------------------------------------------------------------------------
// {x * mask / (1 - p), mask} with mask (bool) drawn from the default generator's Philox stream
// (Note [Dropout mask] in src/backend/dropout_mask.h: one seed, one mask on every backend).
// p in [0, 1]; p == 1 gives zeros (and an all-false mask). When nothing is dropped (training
// false or p == 0) the result is {x itself, undefined mask}: the backward is the identity.
std::pair<Tensor, Tensor> dropout(const Tensor& x, double p = 0.5, bool training = true);
// grad * mask / (1 - p) (grad itself when mask is undefined, zeros when p == 1).
Tensor dropout_backward(const Tensor& grad, const Tensor& mask, double p);

// ---- scatter-add of rows ---------------------------------------------------------------------
// self[.., index[i], ..] += alpha * source[.., i, ..] along dim, in place (torch's index_add_):
// index 1-D (or 0-dim) integral with source.size(dim) entries, each in [0, self.size(dim));
// source has self's dims and dtype. On CUDA the adds are atomic: floating sums over repeated
// indices may differ in their last bits between runs, and an out-of-range index is skipped
// (the CPU throws IndexError).
const Tensor& index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha = 1);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);
// The gradient of embedding(weight [num_weights, D], indices): grad_weight[indices[i]] +=
// grad_out[i], rows at padding_idx (negative counts from the end) getting none.
Tensor embedding_backward(const Tensor& grad_out, const Tensor& indices, int64_t num_weights,
                          std::optional<int64_t> padding_idx = std::nullopt);

}  // namespace rcuda::ops
