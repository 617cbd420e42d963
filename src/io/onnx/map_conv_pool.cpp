// Convolutions and pools. Sizes may be recorded as one value for every spatial dim or one per
// dim; ONNX wants one per dim, and pads as all the starts then all the ends.
#include "io/onnx/mappings.h"

namespace rcuda::io::onnx_export {
namespace {

// A size attribute as `n` values (one recorded value repeats); `fallback` when absent or empty.
std::vector<int64_t> sizes(Builder& b, const char* name, int64_t n,
                           const std::vector<int64_t>& fallback) {
  std::vector<int64_t> v;
  if (const AttributeValue* a = b.node().attrs.find(name)) {
    if (const auto* i = std::get_if<int64_t>(a))
      v = {*i};
    else
      v = b.attr<std::vector<int64_t>>(name);
  }
  if (v.empty()) v = fallback;
  if (v.size() == 1) v.assign(static_cast<size_t>(n), v[0]);
  if (static_cast<int64_t>(v.size()) != n)
    b.fail(name, " has ", v.size(), " values for ", n, " spatial dims");
  return v;
}

std::vector<int64_t> symmetric_pads(const std::vector<int64_t>& padding) {
  std::vector<int64_t> pads = padding;
  pads.insert(pads.end(), padding.begin(), padding.end());
  return pads;
}

// `op_type` on input 0 (and `more` inputs) with a batch dim: an unbatched input ([C, H, W])
// gains one for the op and loses it after.
onnx::NodeProto* batched(Builder& b, const std::string& op_type, std::vector<std::string> inputs,
                         int64_t spatial) {
  const bool unbatched = b.in_rank(0) == spatial + 1;
  if (!unbatched && b.in_rank(0) != spatial + 2)
    b.fail("input has ", b.in_rank(0), " dims; expected ", spatial + 1, " or ", spatial + 2);
  if (!unbatched) return b.add(op_type, inputs, {b.out()});
  inputs[0] = b.add1("Unsqueeze", {inputs[0], b.ints({0})});
  onnx::NodeProto* n = b.add(op_type, inputs, {});
  b.add("Squeeze", {n->output(0), b.ints({0})}, {b.out()});
  return n;
}

// A pool's second output (the indices) is torch's offset within each plane, where ONNX's
// MaxPool counts over the whole tensor: export only graphs that do not read it.
void refuse_used_indices(Builder& b) {
  if (b.node().outputs.size() > 1 && b.used(b.node().outputs[1]))
    b.fail(
        "the graph reads the pool's indices, which ONNX counts differently (over the whole "
        "tensor, not within each plane)");
}

}  // namespace

void conv(Builder& b) {
  const DType dtype = b.out_value().dtype;
  const Shape& weight = b.in_value(1).shape;
  const int64_t spatial = static_cast<int64_t>(weight.size()) - 2;
  const std::vector<int64_t> kernel(weight.begin() + 2, weight.end());
  const std::vector<int64_t> dilation = sizes(b, "dilation", spatial, {1});
  std::vector<int64_t> pads;
  const std::string mode = b.attr_or<std::string>("padding_mode", "");
  if (mode == "same") {
    // torch's "same": the dilated kernel's overhang split, the odd one at the end.
    std::vector<int64_t> ends;
    for (int64_t d = 0; d < spatial; ++d) {
      const int64_t total = dilation[static_cast<size_t>(d)] * (kernel[static_cast<size_t>(d)] - 1);
      pads.push_back(total / 2);
      ends.push_back(total - total / 2);
    }
    pads.insert(pads.end(), ends.begin(), ends.end());
  } else if (mode == "valid") {
    pads.assign(static_cast<size_t>(2 * spatial), 0);
  } else if (mode.empty()) {
    pads = symmetric_pads(sizes(b, "padding", spatial, {0}));
  } else {
    b.fail("padding_mode must be \"same\" or \"valid\", got \"", mode, "\"");
  }
  std::vector<std::string> inputs = {b.in_as(0, dtype), b.in_as(1, dtype)};
  if (b.has_in(2)) inputs.push_back(b.in_as(2, dtype));
  onnx::NodeProto* n = batched(b, "Conv", inputs, spatial);
  set_attr(n, "kernel_shape", kernel);
  set_attr(n, "strides", sizes(b, "stride", spatial, {1}));
  set_attr(n, "pads", pads);
  set_attr(n, "dilations", dilation);
  set_attr(n, "group", b.attr_or<int64_t>("groups", 1));
}

void conv_transpose2d(Builder& b) {
  const DType dtype = b.out_value().dtype;
  const Shape& weight = b.in_value(1).shape;
  const int64_t spatial = 2;
  std::vector<std::string> inputs = {b.in_as(0, dtype), b.in_as(1, dtype)};
  if (b.has_in(2)) inputs.push_back(b.in_as(2, dtype));
  onnx::NodeProto* n = batched(b, "ConvTranspose", inputs, spatial);
  set_attr(n, "kernel_shape", std::vector<int64_t>(weight.begin() + 2, weight.end()));
  set_attr(n, "strides", sizes(b, "stride", spatial, {1}));
  set_attr(n, "pads", symmetric_pads(sizes(b, "padding", spatial, {0})));
  set_attr(n, "output_padding", sizes(b, "output_padding", spatial, {0}));
  set_attr(n, "dilations", sizes(b, "dilation", spatial, {1}));
  set_attr(n, "group", b.attr_or<int64_t>("groups", 1));
}

void max_pool(Builder& b) {
  refuse_used_indices(b);
  const int64_t spatial = b.node().op == OpId::MaxPool1d ? 1 : 2;
  const std::vector<int64_t> kernel = sizes(b, "kernel_size", spatial, {});
  onnx::NodeProto* n = batched(b, "MaxPool", {b.in(0)}, spatial);
  set_attr(n, "kernel_shape", kernel);
  set_attr(n, "strides", sizes(b, "stride", spatial, kernel));
  set_attr(n, "pads", symmetric_pads(sizes(b, "padding", spatial, {0})));
  set_attr(n, "dilations", sizes(b, "dilation", spatial, {1}));
  set_attr(n, "ceil_mode", static_cast<int64_t>(b.attr_or<bool>("ceil_mode", false)));
}

void avg_pool(Builder& b) {
  if (b.has_attr("divisor_override")) b.fail("divisor_override has no ONNX form");
  const int64_t spatial = b.node().op == OpId::AvgPool1d ? 1 : 2;
  const std::vector<int64_t> kernel = sizes(b, "kernel_size", spatial, {});
  onnx::NodeProto* n = batched(b, "AveragePool", {b.in(0)}, spatial);
  set_attr(n, "kernel_shape", kernel);
  set_attr(n, "strides", sizes(b, "stride", spatial, kernel));
  set_attr(n, "pads", symmetric_pads(sizes(b, "padding", spatial, {0})));
  set_attr(n, "ceil_mode", static_cast<int64_t>(b.attr_or<bool>("ceil_mode", false)));
  set_attr(n, "count_include_pad",
           static_cast<int64_t>(b.attr_or<bool>("count_include_pad", true)));
}

// Output 1x1: the global pool. Otherwise a fixed pool when each traced input size is a multiple
// of the output size (then every adaptive window has the same size and stride); uneven windows
// have no ONNX form.
void adaptive_pool2d(Builder& b, bool is_max) {
  if (is_max) refuse_used_indices(b);
  const std::vector<int64_t> out = sizes(b, "output_size", 2, {});
  const Shape& in = b.in_value(0).shape;
  if (in.size() < 2) b.fail("needs an input of 3 or 4 dims");
  const std::vector<int64_t> hw = {in[in.size() - 2], in[in.size() - 1]};
  if (out[0] == 1 && out[1] == 1) {
    batched(b, is_max ? "GlobalMaxPool" : "GlobalAveragePool", {b.in(0)}, 2);
    return;
  }
  std::vector<int64_t> kernel;
  for (size_t d = 0; d < 2; ++d) {
    if (out[d] <= 0 || hw[d] % out[d] != 0)
      b.fail("output_size ", out[d], " does not divide the input's size ", hw[d],
             "; ONNX has no adaptive pool with uneven windows");
    kernel.push_back(hw[d] / out[d]);
  }
  onnx::NodeProto* n = batched(b, is_max ? "MaxPool" : "AveragePool", {b.in(0)}, 2);
  set_attr(n, "kernel_shape", kernel);
  set_attr(n, "strides", kernel);
}

}  // namespace rcuda::io::onnx_export
