// linear, dropout, layer_norm and embedding: each one node whose forward and backward are fused
// primitives of rcuda/ops (linear: one GEMM with the bias in its epilogue; its backward two
// GEMMs and a column sum), so that a training step runs a kernel or two for each. Nothing here
// reads a value back on the GPU; the index_select of embedding's forward reads its bounds flag
// there (Note [Index bounds on the GPU]), and its backward is an index_add_ that reads nothing.
#include <algorithm>
#include <array>
#include <cmath>

#include "nn_util.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"
#include "rcuda/nn/layers.h"
#include "rcuda/ops/linalg.h"
#include "rcuda/ops/nn.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::nn {

using autograd::OpCall;
using autograd::SavedTensor;
using detail::check_floating;
using detail::check_same_device;

namespace {

// Inputs x [M,K], weight [N,K], bias [N]. The weight's gradient g^T x comes out as a fresh
// contiguous [N,K] (not the transpose of a [K,N] product, which the gradient's owner would have
// to copy), and nothing is computed for an input that needs no gradient (a network's input).
struct LinearBackward final : autograd::Node {
  SavedTensor x, weight;
  const char* name() const override { return "LinearBackward"; }
  // In a backward pass that creates a graph (grad mode on only then), the same products as
  // recorded ops (Note [Gradients of gradients] in docs/autograd.md).
  bool supports_create_graph() const override { return true; }
  autograd::TensorList apply(autograd::TensorList&& grads) override {
    const Tensor& g = grads[0];
    Tensor gx, gw, gb;
    if (GradMode::is_enabled()) {
      if (needs_input_grad(0)) gx = rcuda::mm(g, weight.unpack(*this));
      if (needs_input_grad(1)) gw = rcuda::mm(g.t(), x.unpack(*this));
      if (needs_input_grad(2)) gb = rcuda::sum(g, {0});
      return {gx, gw, gb};
    }
    if (needs_input_grad(0)) gx = ops::mm(g, weight.unpack(*this));
    if (needs_input_grad(1) && needs_input_grad(2)) {
      ops::LinearWeightGrads both = ops::linear_weight_grads(g, x.unpack(*this));
      return {gx, both.weight, both.bias};
    }
    if (needs_input_grad(1)) gw = ops::mm(g.t(), x.unpack(*this));
    if (needs_input_grad(2)) gb = ops::sum(g, {0});
    return {gx, gw, gb};
  }
  void release_saved() override {
    x.release();
    weight.release();
  }
};

// Input x; the mask the forward drew.
struct DropoutBackward final : autograd::Node {
  double p = 0.5;
  SavedTensor mask;
  const char* name() const override { return "DropoutBackward"; }
  bool supports_create_graph() const override { return true; }
  autograd::TensorList apply(autograd::TensorList&& grads) override {
    // Creating a graph (grad mode on only then): the same scaling by the mask, recorded.
    if (GradMode::is_enabled() && p < 1)
      return {rcuda::where(mask.unpack(*this), rcuda::mul(grads[0], 1 / (1 - p)), 0.0)};
    return {ops::dropout_backward(grads[0], mask.unpack(*this), p)};
  }
  void release_saved() override { mask.release(); }
};

// layer_norm's gradients written with public ops, for a backward pass that creates a graph
// (Note [Gradients of gradients] in docs/autograd.md): the statistics are recomputed from x, so
// that they carry x's history (the forward's mean and rstd do not).
//   dx = rstd * (gw - mean(gw) - x_hat * mean(gw * x_hat)),  gw = g * weight
std::array<Tensor, 3> layer_norm_recorded_grads(const Tensor& g, const Tensor& x, const Tensor& w,
                                                const Shape& normalized_shape, double eps,
                                                const std::array<bool, 3>& wanted) {
  const int64_t lead = x.dim() - static_cast<int64_t>(normalized_shape.size());
  Dims normalized, leading;
  for (int64_t d = 0; d < x.dim(); ++d) (d < lead ? leading : normalized).push_back(d);
  const Tensor centred = rcuda::sub(x, rcuda::mean(x, normalized, /*keepdim=*/true));
  const Tensor rstd = rcuda::rsqrt(rcuda::add(
      rcuda::mean(rcuda::mul(centred, centred), normalized, /*keepdim=*/true), Scalar(eps)));
  const Tensor x_hat = rcuda::mul(centred, rstd);
  std::array<Tensor, 3> out;
  if (wanted[0]) {
    const Tensor gw = w.defined() ? rcuda::mul(g, w) : g;
    const Tensor inner = rcuda::sub(
        rcuda::sub(gw, rcuda::mean(gw, normalized, /*keepdim=*/true)),
        rcuda::mul(x_hat, rcuda::mean(rcuda::mul(gw, x_hat), normalized, /*keepdim=*/true)));
    out[0] = rcuda::mul(rstd, inner);
  }
  if (wanted[1])
    out[1] = leading.empty() ? rcuda::mul(g, x_hat) : rcuda::sum(rcuda::mul(g, x_hat), leading);
  if (wanted[2]) out[2] = leading.empty() ? g : rcuda::sum(g, leading);
  return out;
}

// Inputs (x, weight, bias), the last two possibly undefined; mean and rstd from the forward.
struct LayerNormBackward final : autograd::Node {
  Shape normalized_shape;
  double eps = 1e-5;
  SavedTensor x, weight, bias, mean, rstd;
  const char* name() const override { return "LayerNormBackward"; }
  bool supports_create_graph() const override { return true; }
  autograd::TensorList apply(autograd::TensorList&& grads) override {
    if (GradMode::is_enabled()) {  // creating a graph: grad mode is on only then
      const std::array<bool, 3> wanted = {needs_input_grad(0), needs_input_grad(1),
                                          needs_input_grad(2)};
      const std::array<Tensor, 3> g = layer_norm_recorded_grads(
          grads[0], x.unpack(*this), weight.unpack(*this), normalized_shape, eps, wanted);
      return {g[0], g[1], g[2]};
    }
    const Tensor w = weight.unpack(*this), b = bias.unpack(*this);
    const std::array<bool, 3> wanted = {needs_input_grad(0), needs_input_grad(1),
                                        needs_input_grad(2)};
    ops::LayerNormGrads g =
        ops::layer_norm_backward(grads[0], x.unpack(*this), normalized_shape, mean.unpack(*this),
                                 rstd.unpack(*this), w, b, wanted);
    return {g.grad_input, g.grad_weight, g.grad_bias};
  }
  void release_saved() override {
    for (SavedTensor* t : {&x, &weight, &bias, &mean, &rstd}) t->release();
  }
};

// Input weight; the int64 indices looked up (indices' shape).
struct EmbeddingBackward final : autograd::Node {
  int64_t num_embeddings = 0;
  std::optional<int64_t> padding_idx;
  SavedTensor index;
  const char* name() const override { return "EmbeddingBackward"; }
  autograd::TensorList apply(autograd::TensorList&& grads) override {
    return {ops::embedding_backward(grads[0], index.unpack(*this), num_embeddings, padding_idx)};
  }
  void release_saved() override { index.release(); }
};

// linear of a checked 2-D x: one GEMM, and its node when the call records.
Tensor linear_2d(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (!OpCall::records(x, weight, bias)) return ops::linear(x, weight, bias);
  const Tensor out = autograd::below_autograd([&] { return ops::linear(x, weight, bias); });
  auto node = autograd::make_node<LinearBackward>(OpId::Linear, x, weight, bias);
  node->x = SavedTensor(x, SavedTensor::kInput);
  node->weight = SavedTensor(weight, SavedTensor::kInput);
  autograd::set_history(out, node);
  return out;
}

// layer_norm of checked arguments, weight and bias in x's dtype: one fused pass, and its node
// when the call records.
Tensor layer_norm_forward(const Tensor& x, const Shape& normalized_shape, const Tensor& w,
                          const Tensor& b, double eps) {
  if (!OpCall::records(x, w, b)) return ops::layer_norm(x, normalized_shape, w, b, eps);
  const ops::LayerNormForward forward = autograd::below_autograd(
      [&] { return ops::layer_norm_forward(x, normalized_shape, w, b, eps); });
  auto node = autograd::make_node<LayerNormBackward>(OpId::LayerNorm, x, w, b);
  node->normalized_shape = normalized_shape;
  node->eps = eps;
  node->x = SavedTensor(x, SavedTensor::kInput);
  node->weight = SavedTensor(w, SavedTensor::kInput);
  node->bias = SavedTensor(b, SavedTensor::kInput);
  node->mean = SavedTensor(forward.mean);
  node->rstd = SavedTensor(forward.rstd);
  autograd::set_history(forward.out, node);
  return forward.out;
}

// dropout of checked arguments.
Tensor dropout_forward(const Tensor& x, double p, bool training) {
  if (!training || p == 0) return x;
  if (p == 1) return mul(x, 0.0);  // as torch: zeros, NaN and inf inputs giving NaN
  // One fused pass draws the mask (Philox, Note [Dropout mask]) and scales; the backward scales
  // the gradient by the same mask.
  if (!OpCall::records(x)) return ops::dropout(x, p).first;
  const auto [out, mask] = autograd::below_autograd([&] { return ops::dropout(x, p); });
  auto node = autograd::make_node<DropoutBackward>(OpId::Dropout, x);
  node->p = p;
  node->mask = SavedTensor(mask);
  autograd::set_history(out, node);
  return out;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  OpCall call(OpId::Linear, x);
  if (call.autocasts()) return linear(call.cast(x), call.cast(weight), call.cast(bias));
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
  // Other ranks are the 2-D product of a recorded reshape: [..., K] as [-1, K]. The inner
  // calls are this one's implementation: the call is reported once, with x as given.
  Tensor out;
  if (x.dim() != 2) {
    Shape out_shape = x.shape();
    out_shape.back() = out_features;
    out = reshape(linear(reshape(x, {-1, in_features}), weight, bias), out_shape);
  } else {
    out = linear_2d(x, weight, bias);
  }
  if (call.reported()) call.report({x, weight, bias}, {}, {out});
  return out;
}

Tensor dropout(const Tensor& x, double p, bool training) {
  OpCall call(OpId::Dropout, x);
  if (call.autocasts()) return dropout(call.cast(x), p, training);
  RCUDA_CHECK(p >= 0 && p <= 1, ValueError, "dropout: p must be in [0, 1], got ", p);
  check_floating("dropout", "input", x);
  const Tensor out = dropout_forward(x, p, training);
  if (call.reported()) call.report({x}, {{"p", p}, {"training", training}}, {out});
  return out;
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  OpCall call(OpId::LayerNorm, x);
  if (call.autocasts())
    return layer_norm(call.cast(x), normalized_shape, call.cast(weight), call.cast(bias), eps);
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
  // The primitive takes weight and bias in x's dtype; a cast of another records its own node.
  const Tensor w = weight.defined() && weight.dtype() != x.dtype() ? to(weight, x.dtype()) : weight;
  const Tensor b = bias.defined() && bias.dtype() != x.dtype() ? to(bias, x.dtype()) : bias;
  const Tensor out = layer_norm_forward(x, normalized_shape, w, b, eps);
  if (call.reported())
    call.report({x, weight, bias}, {{"normalized_shape", normalized_shape}, {"eps", eps}}, {out});
  return out;
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  OpCall call(OpId::Embedding, indices);
  if (call.autocasts()) return embedding(call.cast(indices), call.cast(weight), padding_idx);
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
  // Forward: one index_select of rows. Backward: ops::embedding_backward, an index_add_ of the
  // gradient's rows that skips padding_idx (torch's padding_idx).
  const auto lookup = [&] {
    return ops::reshape(ops::index_select(weight, 0, ops::reshape(index, {-1})), out_shape);
  };
  Tensor rows;
  if (!OpCall::records(weight)) {
    rows = lookup();
  } else {
    rows = autograd::below_autograd(lookup);
    auto node = autograd::make_node<EmbeddingBackward>(call.op(), weight);
    node->num_embeddings = num_embeddings;
    node->padding_idx = padding_idx;
    node->index = SavedTensor(index, SavedTensor::kInput);
    autograd::set_history(rows, node);
  }
  if (call.reported()) {
    Attributes attrs;
    if (padding_idx) attrs.set("padding_idx", *padding_idx);
    call.report({indices, weight}, attrs, {rows});
  }
  return rows;
}

}  // namespace rcuda::nn
