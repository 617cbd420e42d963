// ONNX import: the normalisations: LayerNormalization, BatchNormalization,
// InstanceNormalization, GroupNormalization, LRN and MeanVarianceNormalization (kernel.h, Note
// [Kernels run the public ops]). Where rcuda has the op (nn::layer_norm, nn::batch_norm, ...) and
// its rules are ONNX's, the kernel calls it; the other cases are composed of means and
// arithmetic, which record for autograd as well.
#include <cmath>

#include "io/onnx/import/kernel.h"
#include "io/onnx/import/ops_reduce.h"
#include "rcuda/autograd/api.h"
#include "rcuda/nn/layers.h"
#include "rcuda/nn/norm.h"

namespace rcuda::io::onnx_import {
namespace {

bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

// (x - mean) / sqrt(var + eps) over dims, the biased variance, and its two statistics.
struct Normalized {
  Tensor y, mean, invstd;
};
Normalized normalize_over(const Tensor& x, const std::vector<int64_t>& dims, double eps) {
  const Tensor mean = rcuda::mean(x, dims, true);
  const Tensor centered = rcuda::sub(x, mean);
  const Tensor var = rcuda::mean(rcuda::mul(centered, centered), dims, true);
  const Tensor invstd = rcuda::rsqrt(rcuda::add(var, eps));
  return {rcuda::mul(centered, invstd), mean, invstd};
}

// A per-channel tensor [C] shaped to broadcast along dim 1 of a rank-`rank` input.
Tensor along_channels(const Tensor& t, int64_t rank) {
  Shape shape(static_cast<size_t>(rank), 1);
  shape[1] = t.numel();
  return rcuda::reshape(t, shape);
}

// ---- LayerNormalization ---------------------------------------------------------------------

// Inputs X, Scale, optional B; outputs Y and, optionally, Mean and InvStdDev (X's shape with 1
// for each normalised dim), computed in stash_type.
Kernel make_layer_norm(NodeReader& node) {
  const int64_t axis = node.i("axis", -1);
  const double eps = node.f("epsilon", 1e-5);
  const DType stash =
      dtype_from_onnx(static_cast<int32_t>(node.i("stash_type", 1)), node.where() + ": stash_type");
  if (!is_floating(stash)) node.fail("stash_type must be a floating type");
  const bool wants_stats = node.has_output(1) || node.has_output(2);
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    const Tensor& scale = in.at(1);
    const Tensor bias = optional_input(in, 2);
    const int64_t d = normalize_axis(axis, x.dim(), where + ": axis");
    const Shape normalized_shape(x.shape().begin() + d, x.shape().end());
    // rcuda's layer_norm computes float32 and half types in float32, as stash_type 1 asks.
    const bool fits_layer_norm =
        stash == DType::Float32 && (x.dtype() == DType::Float32 || is_half(x.dtype())) &&
        scale.shape() == normalized_shape && (!bias.defined() || bias.shape() == normalized_shape);
    if (fits_layer_norm && !wants_stats)
      return {nn::layer_norm(x, normalized_shape, scale, bias, eps)};
    std::vector<int64_t> dims;
    for (int64_t i = d; i < x.dim(); ++i) dims.push_back(i);
    const Normalized n = normalize_over(rcuda::to(x, stash), dims, eps);
    Tensor y = rcuda::mul(rcuda::to(n.y, x.dtype()), scale);
    if (bias.defined()) y = rcuda::add(y, bias);
    return {y, n.mean, n.invstd};
  };
}

// ---- BatchNormalization ---------------------------------------------------------------------

// Per-channel statistics as rcuda's batch_norm takes them: float32 for half inputs, else the
// input's dtype (ONNX 15 allows them in another dtype than X).
Tensor statistic(const Tensor& t, const Tensor& x) {
  return rcuda::to(t, is_half(x.dtype()) ? DType::Float32 : x.dtype());
}

// Training mode (version 14 on): normalised with the batch's mean and biased variance; the
// running statistics come out as input * momentum + batch * (1 - momentum) (ONNX's momentum is
// the weight of the old value, the reverse of torch's).
std::vector<Tensor> batch_norm_training(const std::vector<Tensor>& in, double eps,
                                        double momentum) {
  const Tensor& x = in.at(0);
  std::vector<int64_t> dims{0};
  for (int64_t i = 2; i < x.dim(); ++i) dims.push_back(i);
  const Normalized n = normalize_over(x, dims, eps);
  const Tensor y = rcuda::add(rcuda::mul(n.y, along_channels(in.at(1), x.dim())),
                              along_channels(in.at(2), x.dim()));
  const Tensor batch_mean = rcuda::reshape(n.mean, {x.size(1)});
  const Tensor batch_var = rcuda::var(x, dims, 0);
  auto blend = [momentum](const Tensor& running, const Tensor& batch) {
    return rcuda::add(rcuda::mul(running, momentum),
                      rcuda::mul(rcuda::to(batch, running.dtype()), 1 - momentum));
  };
  return {y, blend(in.at(3), batch_mean), blend(in.at(4), batch_var)};
}

// Before version 9, spatial = 0 gives each element of (C, D1, ...) its own statistics: X's
// shape without N for scale, bias, mean and var. An inference-mode composition.
Tensor batch_norm_per_element(const std::vector<Tensor>& in, double eps) {
  const Tensor& x = in.at(0);
  auto lift = [](const Tensor& t) { return t.unsqueeze(0); };
  const Tensor invstd = rcuda::rsqrt(rcuda::add(lift(in.at(4)), eps));
  const Tensor y = rcuda::mul(rcuda::sub(x, lift(in.at(3))), rcuda::mul(invstd, lift(in.at(1))));
  return rcuda::add(y, lift(in.at(2)));
}

// Inputs X, scale, B, mean, var. Inference uses the given statistics (rcuda's batch_norm
// without training); training mode (14 on) composes. Versions before 14 are run in inference
// only: the outputs of their training mode are refused.
Kernel make_batch_norm(NodeReader& node) {
  const double eps = node.f("epsilon", 1e-5);
  const double momentum = node.f("momentum", 0.9);
  const bool training = node.version() >= 14 && node.i("training_mode", 0) != 0;
  const bool spatial = node.version() >= 9 || node.i("spatial", 1) != 0;
  if (node.version() < 14 && node.num_outputs() > 1)
    node.unsupported(
        "BatchNormalization before version 14 with its training outputs (mean, "
        "var, saved_mean, saved_var)");
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    if (training) return batch_norm_training(in, eps, momentum);
    if (!spatial) return {batch_norm_per_element(in, eps)};
    const Tensor& x = in.at(0);
    return {nn::batch_norm(x, statistic(in.at(3), x), statistic(in.at(4), x), in.at(1), in.at(2),
                           false, 0.1, eps)};
  };
}

// ---- InstanceNormalization, GroupNormalization -------------------------------------------

// Inputs input [N, C, D1, ...], scale [C], B [C]: each (sample, channel) normalised over its
// spatial elements.
Kernel make_instance_norm(NodeReader& node) {
  const double eps = node.f("epsilon", 1e-5);
  return [eps](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    const int64_t spatial =
        x.dim() > 2 ? x.numel() / std::max<int64_t>(1, x.size(0) * x.size(1)) : 1;
    // rcuda's instance_norm wants more than one spatial element; one normalises to 0 in ONNX.
    if (spatial > 1) return {nn::instance_norm(x, {}, {}, in.at(1), in.at(2), true, 0.1, eps)};
    std::vector<int64_t> dims;
    for (int64_t i = 2; i < x.dim(); ++i) dims.push_back(i);
    const Tensor y = dims.empty() ? rcuda::zeros_like(x) : normalize_over(x, dims, eps).y;
    return {rcuda::add(rcuda::mul(y, along_channels(in.at(1), x.dim())),
                       along_channels(in.at(2), x.dim()))};
  };
}

// Inputs X [N, C, D1, ...], scale and bias: one value per group in version 18, per channel
// from 21 (where 18's were repeated over each group's channels).
Kernel make_group_norm(NodeReader& node) {
  const double eps = node.f("epsilon", 1e-5);
  const int64_t groups = node.i("num_groups");
  if (groups <= 0) node.fail("num_groups must be positive, got " + std::to_string(groups));
  const bool per_group = node.version() < 21;
  if (!per_group && node.i("stash_type", 1) != onnx::TensorProto::FLOAT)
    node.unsupported("GroupNormalization with stash_type " +
                     std::to_string(node.i("stash_type", 1)) + " (only 1, float)");
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    RCUDA_CHECK(x.dim() >= 2 && x.size(1) % groups == 0, ShapeError, where,
                ": the channels (dim 1 of X) must split into num_groups = ", groups, " groups");
    Tensor scale = in.at(1), bias = in.at(2);
    if (per_group) {
      const int64_t width = x.size(1) / groups;
      auto per_channel = [&](const Tensor& t) {
        return rcuda::reshape(rcuda::reshape(t, {groups, 1}).expand({groups, width}), {-1});
      };
      scale = per_channel(scale);
      bias = per_channel(bias);
    }
    return {nn::group_norm(x, groups, scale, bias, eps)};
  };
}

// ---- LRN, MeanVarianceNormalization -------------------------------------------------------

// x / (bias + alpha / size * sum of x^2 over the `size` nearest channels)^beta, the window
// floor((size - 1) / 2) channels before and ceil((size - 1) / 2) after, cut at the edges.
Kernel make_lrn(NodeReader& node) {
  const double alpha = node.f("alpha", 1e-4), beta = node.f("beta", 0.75);
  const double bias = node.f("bias", 1.0);
  const int64_t size = node.i("size");
  if (size <= 0) node.fail("size must be positive, got " + std::to_string(size));
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    const int64_t before = (size - 1) / 2, after = size - 1 - before, channels = x.size(1);
    auto zeros = [&](int64_t n) {
      Shape shape = x.shape();
      shape[1] = n;
      return rcuda::zeros(shape, TensorOptions(x.dtype(), x.device()));
    };
    const Tensor padded = rcuda::cat({zeros(before), rcuda::mul(x, x), zeros(after)}, 1);
    Tensor window = padded.narrow(1, 0, channels);
    for (int64_t i = 1; i < size; ++i) window = rcuda::add(window, padded.narrow(1, i, channels));
    const Tensor scale = rcuda::add(rcuda::mul(window, alpha / static_cast<double>(size)), bias);
    return {rcuda::div(x, rcuda::pow(scale, beta))};
  };
}

// (X - mean) / (sqrt(variance) + 1e-9) over axes (default [0, 2, 3]), as ONNX's function body.
Kernel make_mean_variance_normalization(NodeReader& node) {
  const std::vector<int64_t> axes = node.ints("axes", {0, 2, 3});
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    const std::vector<int64_t> dims = reduce_detail::sorted_axes(where, axes, x.dim());
    const Tensor mean = rcuda::mean(x, dims, true);
    // E[X^2] - E[X]^2 as ONNX's body; clamped at 0, where rounding could make it negative.
    const Tensor var =
        rcuda::clamp(rcuda::sub(rcuda::mean(rcuda::mul(x, x), dims, true), rcuda::mul(mean, mean)),
                     0.0, std::nullopt);
    return {rcuda::div(rcuda::sub(x, mean), rcuda::add(rcuda::sqrt(var), 1e-9))};
  };
}

}  // namespace

std::vector<ImportOp> norm_ops() {
  return {
      {"LayerNormalization", make_layer_norm, 17},
      {"BatchNormalization", make_batch_norm, 6},
      {"InstanceNormalization", make_instance_norm, 6},
      {"GroupNormalization", make_group_norm, 18},
      {"LRN", make_lrn},
      {"MeanVarianceNormalization", make_mean_variance_normalization, 9},
  };
}

}  // namespace rcuda::io::onnx_import
