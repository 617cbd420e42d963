// float32 batch normalisation through oneDNN's batch_normalization primitives
// (docs/pooling-normalization.md): flags use_scale / use_shift for the optional weight and bias,
// use_global_stats for evaluation (and for the backward of an evaluation forward, whose
// statistics are constants). oneDNN takes the variance where rcuda keeps 1 / sqrt(var + eps),
// so evaluation and the backward hand it 1 / invstd^2 with eps 0: oneDNN's 1 / sqrt(var + 0)
// is invstd again within float32 rounding (subtracting eps instead would cancel when the
// variance is far below eps).
#include <cmath>

#include "onednn.h"

namespace rcuda::cpu::onednn {
namespace {

using dnnl::normalization_flags;

// [N, C, S] as 4-D [N, C, S, 1]: oneDNN's JIT implementations cover nchw and nhwc, while 3-D
// data would only get its reference one.
dnnl::memory::desc data_desc(const Tensor& t) {
  return f32_desc({t.shape()[0], t.shape()[1], t.shape()[2], 1}, !t.is_contiguous());
}

dnnl::memory::desc channel_desc(int64_t channels) {
  return dnnl::memory::desc({channels}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
}

normalization_flags flags_for(const Tensor& weight, const Tensor& bias, bool global_stats) {
  auto flags = normalization_flags::none;
  if (weight.defined()) flags |= normalization_flags::use_scale;
  if (bias.defined()) flags |= normalization_flags::use_shift;
  if (global_stats) flags |= normalization_flags::use_global_stats;
  return flags;
}

// 1 / invstd^2: the variance oneDNN reads, with eps 0.
Tensor variance_from(const Tensor& invstd) {
  Tensor var = Tensor::empty(invstd.shape(), DType::Float32);
  const float* r = invstd.data<float>();
  float* v = var.data<float>();
  for (int64_t c = 0; c < invstd.numel(); ++c) {
    const double rc = static_cast<double>(r[c]);
    v[c] = static_cast<float>(1.0 / (rc * rc));
  }
  return var;
}

}  // namespace

bool try_batch_norm(const Tensor& out, const Tensor& mean, const Tensor& variance,
                    const Tensor& invstd, const Tensor& in, const Tensor& weight,
                    const Tensor& bias, bool training, double eps) {
  const int64_t channels = in.shape()[1];
  const dnnl::memory::desc data = data_desc(in), channel = channel_desc(channels);
  const auto kind =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const float epsilon = training ? static_cast<float>(eps) : 0.0f;
  dnnl::batch_normalization_forward::primitive_desc pd;
  try {
    const dnnl::batch_normalization_forward::desc d(kind, data, epsilon,
                                                    flags_for(weight, bias, !training));
    pd = dnnl::batch_normalization_forward::primitive_desc(d, engine());
  } catch (const dnnl::error&) {
    return false;
  }
  const Tensor var = training ? variance : variance_from(invstd);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, wrap(data, in)},
                                                {DNNL_ARG_DST, wrap(data, out)},
                                                {DNNL_ARG_MEAN, wrap(channel, mean)},
                                                {DNNL_ARG_VARIANCE, wrap(channel, var)}};
  if (weight.defined()) args.emplace(DNNL_ARG_SCALE, wrap(channel, weight));
  if (bias.defined()) args.emplace(DNNL_ARG_SHIFT, wrap(channel, bias));
  execute(dnnl::batch_normalization_forward(pd), args, "batch_norm");
  return true;
}

bool try_batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                             const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                             const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                             bool batch_stats) {
  const int64_t channels = in.shape()[1];
  const dnnl::memory::desc data = data_desc(in), channel = channel_desc(channels);
  // The scale gradient is wanted without a weight only as a sum; oneDNN computes it with
  // use_scale, so that flag follows either.
  const bool scale = weight.defined() || grad_weight.defined();
  const bool shift = grad_bias.defined();
  auto flags = normalization_flags::none;
  if (scale) flags |= normalization_flags::use_scale;
  if (shift) flags |= normalization_flags::use_shift;
  if (!batch_stats) flags |= normalization_flags::use_global_stats;
  // oneDNN reads scale whenever use_scale is set; without a weight that is ones.
  Tensor w = weight;
  if (scale && !w.defined()) {
    w = Tensor::empty({channels}, DType::Float32);
    for (int64_t c = 0; c < channels; ++c) w.data<float>()[c] = 1.0f;
  }
  const float eps = 0.0f;  // with the variance 1 / invstd^2 below
  dnnl::batch_normalization_backward::primitive_desc pd;
  try {
    const dnnl::batch_normalization_forward::desc fd(dnnl::prop_kind::forward_training, data, eps,
                                                     flags);
    const dnnl::batch_normalization_forward::primitive_desc hint(fd, engine());
    const auto kind = scale || shift ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data;
    const dnnl::batch_normalization_backward::desc d(kind, data, data, eps, flags);
    pd = dnnl::batch_normalization_backward::primitive_desc(d, engine(), hint);
  } catch (const dnnl::error&) {
    return false;
  }
  // oneDNN always writes the input gradient and every parameter gradient its flags name.
  const Tensor dx = grad_in.defined() ? grad_in : Tensor::empty(in.shape(), DType::Float32);
  const Tensor dw =
      scale && !grad_weight.defined() ? Tensor::empty({channels}, DType::Float32) : grad_weight;
  const Tensor var = variance_from(invstd);
  // dx of a channels-last input is channels-last too (ops allocate it so).
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, wrap(data, in)},
                                                {DNNL_ARG_DIFF_DST, wrap(data, grad_out)},
                                                {DNNL_ARG_MEAN, wrap(channel, mean)},
                                                {DNNL_ARG_VARIANCE, wrap(channel, var)},
                                                {DNNL_ARG_DIFF_SRC, wrap(data, dx)}};
  if (scale) {
    args.emplace(DNNL_ARG_SCALE, wrap(channel, w));
    args.emplace(DNNL_ARG_DIFF_SCALE, wrap(channel, dw));
  }
  Tensor unused_shift;
  if (shift) {
    // oneDNN asks for the shift even though its gradient does not read it.
    unused_shift = Tensor::empty({channels}, DType::Float32);
    for (int64_t c = 0; c < channels; ++c) unused_shift.data<float>()[c] = 0.0f;
    args.emplace(DNNL_ARG_SHIFT, wrap(channel, unused_shift));
    args.emplace(DNNL_ARG_DIFF_SHIFT, wrap(channel, grad_bias));
  }
  execute(dnnl::batch_normalization_backward(pd), args, "batch_norm_backward");
  return true;
}

}  // namespace rcuda::cpu::onednn
