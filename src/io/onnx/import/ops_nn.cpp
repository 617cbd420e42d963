// ONNX import: the nn ops (kernel.h, Note [Kernels run the public ops]). This file holds the
// family's table, the sliding-window attributes its ops share, the convolutions and the matrix
// products; ops_nn.h lists the other files of the family.
#include <algorithm>
#include <string>
#include <vector>

#include "io/onnx/import/ops_nn.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/nn/layers.h"
#include "rcuda/nn/resample.h"
#include "rcuda/ops/conv.h"
#include "rcuda/tensor/autograd_meta.h"
#include "rcuda/tensor/memory_format.h"

namespace rcuda::io::onnx_import::nn {

void fail_at_run(const std::string& where, const std::string& why) {
  throw ValueError(where + ": " + why);
}

namespace {

// Python's floor division, which ONNX's formulas for split pads assume.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

void check_positive(NodeReader& node, const char* name, const std::vector<int64_t>& values) {
  for (int64_t v : values)
    if (v < 1) node.fail(std::string(name) + " must be positive, got " + std::to_string(v));
}

}  // namespace

Window Window::read(NodeReader& node) {
  Window w;
  w.where = node.where();
  w.auto_pad = node.s("auto_pad", "NOTSET");
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" &&
      w.auto_pad != "VALID")
    node.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got \"" + w.auto_pad +
              "\"");
  w.kernel = node.ints("kernel_shape", {});
  w.strides = node.ints("strides", {});
  w.dilations = node.ints("dilations", {});
  w.pads = node.ints("pads", {});
  check_positive(node, "kernel_shape", w.kernel);
  check_positive(node, "strides", w.strides);
  check_positive(node, "dilations", w.dilations);
  for (int64_t p : w.pads)
    if (p < 0) node.unsupported("negative pads " + shape_str(w.pads));
  return w;
}

ResolvedWindow Window::resolve(const std::vector<int64_t>& in,
                               const std::vector<int64_t>& kernel_of_input) const {
  const size_t n = in.size();
  auto per_dim = [&](const std::vector<int64_t>& v, const char* name, int64_t def) {
    if (v.empty()) return std::vector<int64_t>(n, def);
    if (v.size() != n)
      fail_at_run(where, std::string(name) + " " + shape_str(v) + " has " +
                             std::to_string(v.size()) + " values for an input of " +
                             std::to_string(n) + " spatial dims");
    return v;
  };
  if (kernel_of_input.size() != n)
    fail_at_run(where, "the weight has " + std::to_string(kernel_of_input.size()) +
                           " spatial dims, the input " + std::to_string(n));
  ResolvedWindow r;
  r.kernel = kernel_of_input;
  if (!kernel.empty() && kernel != kernel_of_input)
    fail_at_run(where, "kernel_shape " + shape_str(kernel) + " differs from the weight's " +
                           shape_str(kernel_of_input));
  r.stride = per_dim(strides, "strides", 1);
  r.dilation = per_dim(dilations, "dilations", 1);
  r.begin.assign(n, 0);
  r.end.assign(n, 0);
  if (auto_pad == "NOTSET" && !pads.empty()) {
    if (pads.size() != 2 * n)
      fail_at_run(where, "pads " + shape_str(pads) + " has " + std::to_string(pads.size()) +
                             " values for " + std::to_string(n) + " spatial dims (expected " +
                             std::to_string(2 * n) + ")");
    r.begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
    r.end.assign(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // The output keeps ceil(in / stride); the odd pad goes at the end (UPPER) or start (LOWER).
    for (size_t d = 0; d < n; ++d) {
      const int64_t out = (in[d] + r.stride[d] - 1) / r.stride[d];
      const int64_t dilated = (r.kernel[d] - 1) * r.dilation[d] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * r.stride[d] + dilated - in[d]);
      const int64_t small = total / 2, large = total - total / 2;
      r.begin[d] = auto_pad == "SAME_UPPER" ? small : large;
      r.end[d] = auto_pad == "SAME_UPPER" ? large : small;
    }
  }
  return r;
}

namespace {

// rcuda::nn::pad's list (before, after per dim, from the last dim backwards) for the spatial
// dims of an [N, C, ...] tensor.
std::vector<int64_t> spatial_pad_list(const std::vector<int64_t>& begin,
                                      const std::vector<int64_t>& end) {
  std::vector<int64_t> list;
  for (size_t d = begin.size(); d-- > 0;) {
    list.push_back(begin[d]);
    list.push_back(end[d]);
  }
  return list;
}

std::vector<int64_t> spatial_sizes(const Tensor& t) {
  if (t.dim() < 2) return {};  // refused by the caller's rank checks
  return std::vector<int64_t>(t.shape().begin() + 2, t.shape().end());
}

// The number of spatial dims when known at load (from kernel_shape or a constant weight), else 0.
int64_t known_spatial_dims(NodeReader& node, const Window& window) {
  if (!window.kernel.empty()) return static_cast<int64_t>(window.kernel.size());
  if (const Tensor* w = node.constant_input(1)) return w->dim() - 2;
  return 0;
}

}  // namespace

// ---- Conv -----------------------------------------------------------------------------------

namespace {

// Whether a fused convolution may run as one inference pass: nothing to record (grad mode off or
// no operand requiring grad), no autocast to apply and no tracer listening, since the fused op
// is below the funnel (Note [Fused Conv and Relu] in load.cpp).
bool fused_pass_allowed(const Tensor& x, const Tensor& w, const Tensor& bias) {
  if (autograd::observed() || autocast::any_enabled()) return false;
  if (!GradMode::is_enabled()) return true;
  return !x.requires_grad() && !w.requires_grad() && !(bias.defined() && bias.requires_grad());
}

// Pads become rcuda's symmetric padding plus zeros more at the end (padding_end_extra, as
// torch's padding="same" pads): a model rcuda exported with "same" loads back to the same call.
// More at the start than at the end is an explicit zero pad first. With `relu`, the kernel
// computes relu(Conv) (the node's Relu reader then passes its input on).
Kernel conv_kernel(NodeReader& node, bool relu) {
  const Window window = Window::read(node);
  const int64_t groups = node.i("group", 1);
  if (groups < 1) node.fail("group must be positive, got " + std::to_string(groups));
  const int64_t spatial = known_spatial_dims(node, window);
  if (spatial != 0 && spatial != 1 && spatial != 2)
    node.unsupported(std::to_string(spatial) + "-D Conv (rcuda has 1-D and 2-D convolutions)");
  return [window, groups, relu](const std::vector<Tensor>& in, const RunContext&) {
    Tensor x = in[0];
    const Tensor& w = in[1];
    const Tensor bias = optional_input(in, 2);
    const int64_t dims = x.dim() - 2;
    if (dims != 1 && dims != 2)
      fail_at_run(window.where, "Conv of " + std::to_string(dims) +
                                    " spatial dims is not supported by rcuda's ONNX import "
                                    "(rcuda has 1-D and 2-D convolutions)");
    if (w.dim() != x.dim())
      fail_at_run(window.where, "weight " + shape_str(w.shape()) +
                                    " must have the rank of the input " + shape_str(x.shape()));
    const ResolvedWindow r = window.resolve(spatial_sizes(x), spatial_sizes(w));
    std::vector<int64_t> padding(r.begin.size()), extra(r.begin.size()), lead(r.begin.size());
    bool has_lead = false;
    for (size_t d = 0; d < r.begin.size(); ++d) {
      padding[d] = std::min(r.begin[d], r.end[d]);
      extra[d] = r.end[d] - padding[d];
      lead[d] = r.begin[d] - padding[d];
      has_lead = has_lead || lead[d] > 0;
    }
    if (has_lead) x = rcuda::pad(x, spatial_pad_list(lead, std::vector<int64_t>(lead.size(), 0)));
    if (dims == 1) {
      Tensor y =
          rcuda::conv1d(x, w, bias, r.stride[0], padding[0], r.dilation[0], groups, extra[0]);
      return std::vector<Tensor>{relu ? rcuda::relu(y) : y};
    }
    // A channels-last weight (Note [Channels-last convolutions] in load.cpp) takes its input
    // channels-last too; the layout then flows through the elementwise ops to the next
    // convolution without a copy.
    if (suggest_memory_format(w) == MemoryFormat::ChannelsLast)
      x = rcuda::contiguous(x, MemoryFormat::ChannelsLast);
    ConvParams params;
    params.stride = {r.stride[0], r.stride[1]};
    params.padding = {padding[0], padding[1]};
    params.dilation = {r.dilation[0], r.dilation[1]};
    params.groups = groups;
    params.padding_end_extra = {extra[0], extra[1]};
    if (relu && fused_pass_allowed(x, w, bias))
      return std::vector<Tensor>{ops::conv2d_bias_relu(x, w, bias, params)};
    Tensor y = rcuda::conv2d(x, w, bias, params);
    return std::vector<Tensor>{relu ? rcuda::relu(y) : y};
  };
}

}  // namespace

Kernel make_conv(NodeReader& node) { return conv_kernel(node, false); }
Kernel make_conv_relu(NodeReader& node) { return conv_kernel(node, true); }

namespace {

// ---- ConvTranspose --------------------------------------------------------------------------

struct TransposedConv {
  Window window;
  int64_t groups = 1;
  std::vector<int64_t> output_padding, output_shape;
  bool pads_given = false;
};

// The output's start (in the full, unpadded result of size stride (in - 1) + dilated kernel)
// and size per spatial dim, as ONNX's reference computes them.
void transposed_extent(const TransposedConv& t, const ResolvedWindow& r,
                       const std::vector<int64_t>& in, const std::vector<int64_t>& output_padding,
                       std::vector<int64_t>& start, std::vector<int64_t>& size) {
  const size_t n = in.size();
  std::vector<int64_t> out_shape = t.output_shape;
  if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != n)
    fail_at_run(t.window.where, "output_shape " + shape_str(t.output_shape) + " does not fit " +
                                    std::to_string(n) + " spatial dims");
  start.assign(n, 0);
  size.assign(n, 0);
  const bool same = t.window.auto_pad == "SAME_UPPER" || t.window.auto_pad == "SAME_LOWER";
  for (size_t d = 0; d < n; ++d) {
    const int64_t full =
        r.stride[d] * (in[d] - 1) + (r.kernel[d] - 1) * r.dilation[d] + 1 + output_padding[d];
    if (same && !t.pads_given) {
      size[d] = out_shape.empty() ? in[d] * r.stride[d] : out_shape[d];
      const int64_t total = full - size[d];
      start[d] =
          t.window.auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
    } else {
      start[d] = r.begin[d];
      size[d] = out_shape.empty() ? full - r.begin[d] - r.end[d] : out_shape[d];
    }
  }
}

Kernel make_conv_transpose(NodeReader& node) {
  TransposedConv t;
  t.window = Window::read(node);
  t.pads_given = !t.window.pads.empty();
  t.groups = node.i("group", 1);
  if (t.groups < 1) node.fail("group must be positive, got " + std::to_string(t.groups));
  t.output_padding = node.ints("output_padding", {});
  t.output_shape = node.ints("output_shape", {});
  const int64_t spatial = known_spatial_dims(node, t.window);
  if (spatial != 0 && spatial != 1 && spatial != 2)
    node.unsupported(std::to_string(spatial) +
                     "-D ConvTranspose (rcuda has 1-D and 2-D transposed convolutions)");
  return [t](const std::vector<Tensor>& in, const RunContext&) {
    Tensor x = in[0], w = in[1];
    const Tensor bias = optional_input(in, 2);
    const int64_t dims = x.dim() - 2;
    if (dims != 1 && dims != 2)
      fail_at_run(t.window.where, "ConvTranspose of " + std::to_string(dims) +
                                      " spatial dims is not supported by rcuda's ONNX import");
    // 1-D runs as 2-D of height 1.
    Window window = t.window;
    if (dims == 1) {
      x = x.unsqueeze(2);
      w = w.unsqueeze(2);
      auto widen = [](std::vector<int64_t>& v, int64_t one, bool pads) {
        if (v.empty()) return;
        if (pads && v.size() == 2)
          v = {0, v[0], 0, v[1]};
        else if (!pads && v.size() == 1)
          v.insert(v.begin(), one);
      };
      widen(window.kernel, 1, false);
      widen(window.strides, 1, false);
      widen(window.dilations, 1, false);
      widen(window.pads, 0, true);
    }
    const std::vector<int64_t> sizes = spatial_sizes(x);
    const ResolvedWindow r = window.resolve(sizes, spatial_sizes(w));
    std::vector<int64_t> output_padding = t.output_padding;
    if (output_padding.empty()) output_padding.assign(static_cast<size_t>(dims), 0);
    if (static_cast<int64_t>(output_padding.size()) != dims)
      fail_at_run(t.window.where, "output_padding " + shape_str(output_padding) + " does not fit " +
                                      std::to_string(dims) + " spatial dims");
    if (dims == 1) output_padding.insert(output_padding.begin(), 0);
    TransposedConv t2 = t;
    t2.window = window;
    if (dims == 1 && t2.output_shape.size() == 1)
      t2.output_shape.insert(t2.output_shape.begin(), 1);
    if (dims == 1 && t2.output_shape.size() == 3)
      t2.output_shape = {t2.output_shape[0], t2.output_shape[1], 1, t2.output_shape[2]};
    std::vector<int64_t> start, size;
    transposed_extent(t2, r, sizes, output_padding, start, size);
    // A channels-last weight (Note [Channels-last convolutions] in load.cpp) takes its input
    // channels-last too; the layout then flows through the elementwise ops to the next
    // convolution without a copy.
    if (suggest_memory_format(w) == MemoryFormat::ChannelsLast)
      x = rcuda::contiguous(x, MemoryFormat::ChannelsLast);
    ConvParams params;
    params.stride = {r.stride[0], r.stride[1]};
    params.dilation = {r.dilation[0], r.dilation[1]};
    params.groups = t.groups;
    // rcuda's own call where ONNX's output is torch's: symmetric pads, an output_padding
    // smaller than the stride or the dilation (a model rcuda exported loads back to it).
    bool direct = true;
    for (size_t d = 0; d < 2; ++d) {
      const int64_t full_no_op =
          r.stride[d] * (sizes[d] - 1) + (r.kernel[d] - 1) * r.dilation[d] + 1;
      direct = direct && start[d] == r.end[d] && start[d] == r.begin[d] &&
               size[d] == full_no_op + output_padding[d] - 2 * start[d] &&
               output_padding[d] < std::max(r.stride[d], r.dilation[d]) && output_padding[d] >= 0;
    }
    Tensor y;
    if (direct) {
      params.padding = {start[0], start[1]};
      y = rcuda::conv_transpose2d(x, w, bias, params, {output_padding[0], output_padding[1]});
    } else {
      // The full result, then cropped or extended by zeros to ONNX's extent.
      y = rcuda::conv_transpose2d(x, w, Tensor(), params);
      std::vector<int64_t> after(2);
      for (size_t d = 0; d < 2; ++d)
        after[d] = size[d] - (y.size(static_cast<int64_t>(d) + 2) - start[d]);
      y = rcuda::pad(y, spatial_pad_list({-start[0], -start[1]}, after));
      if (bias.defined()) y = rcuda::add(y, bias.view({1, bias.numel(), 1, 1}));
    }
    if (dims == 1) y = y.squeeze(2);
    return std::vector<Tensor>{y};
  };
}

// ---- Gemm and MatMul ------------------------------------------------------------------------

// alpha A' B' + beta C. transB with alpha = beta = 1 and a bias of B's rows is rcuda's linear,
// and no transposes is addmm: the calls rcuda's export wrote these Gemms from, so a model rcuda
// exported computes bit for bit as before.
Kernel make_gemm(NodeReader& node) {
  const double alpha = node.f("alpha", 1.0), beta = node.f("beta", 1.0);
  const bool trans_a = node.i("transA", 0) != 0, trans_b = node.i("transB", 0) != 0;
  return [alpha, beta, trans_a, trans_b](const std::vector<Tensor>& in, const RunContext&) {
    const Tensor& a = in[0];
    const Tensor& b = in[1];
    const Tensor c = optional_input(in, 2);
    if (!trans_a && trans_b && alpha == 1.0 && beta == 1.0 && b.dim() == 2 &&
        (!c.defined() || (c.dim() == 1 && c.size(0) == b.size(0))))
      return std::vector<Tensor>{rcuda::nn::linear(a, b, c)};
    const Tensor a2 = trans_a ? a.t() : a, b2 = trans_b ? b.t() : b;
    if (c.defined()) return std::vector<Tensor>{rcuda::addmm(c, a2, b2, beta, alpha)};
    Tensor y = rcuda::mm(a2, b2);
    if (alpha != 1.0) y = rcuda::mul(y, alpha);
    return std::vector<Tensor>{y};
  };
}

// numpy's matmul, which is torch's (1-D operands promoted and the added dim removed).
Kernel make_matmul(NodeReader&) {
  return [](const std::vector<Tensor>& in, const RunContext&) {
    return std::vector<Tensor>{rcuda::matmul(in[0], in[1])};
  };
}

}  // namespace
}  // namespace rcuda::io::onnx_import::nn

namespace rcuda::io::onnx_import {

const std::vector<ImportOp>& nn_ops() {
  static const std::vector<ImportOp> ops = {
      {"Conv", nn::make_conv, 1},
      {"ConvTranspose", nn::make_conv_transpose, 1},
      {"Gemm", nn::make_gemm, 1},
      {"MatMul", nn::make_matmul, 1},
      {"MaxPool", nn::make_max_pool, 1},
      {"AveragePool", nn::make_average_pool, 1},
      {"GlobalAveragePool", nn::make_global_average_pool, 1},
      {"GlobalMaxPool", nn::make_global_max_pool, 1},
      {"Resize", nn::make_resize, 10},
      {"Upsample", nn::make_upsample, 7},
      {"LSTM", nn::make_lstm, 1},
      {"GRU", nn::make_gru, 1},
      {"RNN", nn::make_rnn, 1},
  };
  return ops;
}

}  // namespace rcuda::io::onnx_import
