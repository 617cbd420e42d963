// float32 pooling through oneDNN's pooling_v2 primitives, for the calls where oneDNN computes
// PyTorch's result (docs/pooling-normalization.md, "CPU pooling"): values-only max pooling,
// and average pooling without divisor_override whose windows (with ceil_mode's overhang) stay
// inside the declared padding when the padding counts. Everything else returns false.
#include <algorithm>

#include "onednn.h"

namespace rcuda::cpu::onednn {
namespace {

using dims = dnnl::memory::dims;

struct PoolGeometry {
  dims strides, kernel, dilation, padding_l, padding_r;
  dnnl::algorithm algorithm;
};

// oneDNN's output size is floor((in + pad_l + pad_r - extent) / stride) + 1; ceil_mode's larger
// outputs become extra right padding. pad_r may then be below pad_l (never below 0).
int64_t right_padding(int64_t in, int64_t out, int64_t extent, int64_t stride, int64_t pad) {
  return std::max<int64_t>(0, (out - 1) * stride + extent - in - pad);
}

bool geometry(const PoolArgs& a, int64_t h, int64_t w, int64_t oh, int64_t ow, PoolGeometry* g) {
  if (a.adaptive || a.divisor_override != 0) return false;
  const bool max = a.op == PoolOp::Max;
  const int64_t extent_h = max ? (a.kernel_h - 1) * a.dilation_h + 1 : a.kernel_h;
  const int64_t extent_w = max ? (a.kernel_w - 1) * a.dilation_w + 1 : a.kernel_w;
  if (!max && a.count_include_pad &&
      ((oh - 1) * a.stride_h + a.kernel_h > h + 2 * a.pad_h ||
       (ow - 1) * a.stride_w + a.kernel_w > w + 2 * a.pad_w))
    return false;  // PyTorch's divisor would stop at the padding, oneDNN's would not
  g->strides = {a.stride_h, a.stride_w};
  g->kernel = {a.kernel_h, a.kernel_w};
  g->dilation = max ? dims{a.dilation_h - 1, a.dilation_w - 1} : dims{0, 0};
  g->padding_l = {a.pad_h, a.pad_w};
  g->padding_r = {right_padding(h, oh, extent_h, a.stride_h, a.pad_h),
                  right_padding(w, ow, extent_w, a.stride_w, a.pad_w)};
  g->algorithm = max                   ? dnnl::algorithm::pooling_max
                 : a.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                       : dnnl::algorithm::pooling_avg_exclude_padding;
  return true;
}

dims nchw(const Tensor& t) { return {t.shape()[0], t.shape()[1], t.shape()[2], t.shape()[3]}; }

dnnl::pooling_v2_forward::primitive_desc forward_desc(const PoolGeometry& g,
                                                      const dnnl::memory::desc& src,
                                                      const dnnl::memory::desc& dst,
                                                      dnnl::prop_kind kind) {
  const dnnl::pooling_v2_forward::desc d(kind, g.algorithm, src, dst, g.strides, g.kernel,
                                         g.dilation, g.padding_l, g.padding_r);
  return dnnl::pooling_v2_forward::primitive_desc(d, engine());
}

}  // namespace

bool try_pool2d(const PoolArgs& args, const Tensor& out, const Tensor& indices, const Tensor& in) {
  if (in.dtype() != DType::Float32 || indices.defined()) return false;
  PoolGeometry g;
  if (!geometry(args, in.shape()[2], in.shape()[3], out.shape()[2], out.shape()[3], &g))
    return false;
  const dnnl::memory::desc src = f32_desc(nchw(in), args.channels_last);
  const dnnl::memory::desc dst = f32_desc(nchw(out), args.channels_last);
  dnnl::pooling_v2_forward::primitive_desc pd;
  try {
    pd = forward_desc(g, src, dst, dnnl::prop_kind::forward_inference);
  } catch (const dnnl::error&) {
    return false;  // no implementation for this call: the loops run it
  }
  execute(dnnl::pooling_v2_forward(pd),
          {{DNNL_ARG_SRC, wrap(src, in)}, {DNNL_ARG_DST, wrap(dst, out)}}, "pool2d");
  return true;
}

bool try_pool2d_backward(const PoolArgs& args, const Tensor& grad_in, const Tensor& grad_out) {
  // Max pooling's backward is a scatter by PyTorch's indices, which oneDNN does not take.
  if (grad_in.dtype() != DType::Float32 || args.op != PoolOp::Avg) return false;
  PoolGeometry g;
  if (!geometry(args, grad_in.shape()[2], grad_in.shape()[3], grad_out.shape()[2],
                grad_out.shape()[3], &g))
    return false;
  const dnnl::memory::desc src = f32_desc(nchw(grad_in), args.channels_last);
  const dnnl::memory::desc dst = f32_desc(nchw(grad_out), args.channels_last);
  dnnl::pooling_v2_backward::primitive_desc pd;
  try {
    const auto hint = forward_desc(g, src, dst, dnnl::prop_kind::forward_training);
    const dnnl::pooling_v2_backward::desc d(g.algorithm, src, dst, g.strides, g.kernel, g.dilation,
                                            g.padding_l, g.padding_r);
    pd = dnnl::pooling_v2_backward::primitive_desc(d, engine(), hint);
  } catch (const dnnl::error&) {
    return false;
  }
  execute(dnnl::pooling_v2_backward(pd),
          {{DNNL_ARG_DIFF_DST, wrap(dst, grad_out)}, {DNNL_ARG_DIFF_SRC, wrap(src, grad_in)}},
          "pool2d_backward");
  return true;
}

}  // namespace rcuda::cpu::onednn
