// ONNX import, the nn family: what its files share (ops_nn.cpp holds the table; convolutions
// and matrix products there, pools in ops_nn_pool.cpp, Resize and Upsample in
// ops_nn_resize.cpp, the recurrent layers in ops_nn_rnn.cpp).
#pragma once

#include <string>
#include <vector>

#include "io/onnx/import/kernel.h"

namespace rcuda::io::onnx_import::nn {

// ValueError "<where>: <why>" at run, for what only the inputs' shapes reveal.
[[noreturn]] void fail_at_run(const std::string& where, const std::string& why);

// The sliding window of Conv, ConvTranspose and the pools, per spatial dim, resolved for one
// input: every size explicit and the pads split into begin and end.
struct ResolvedWindow {
  std::vector<int64_t> kernel, stride, dilation, begin, end;
};

// The window attributes as a node gives them (kernel_shape, strides, dilations, pads, auto_pad),
// read and checked at load; pads of auto_pad SAME_UPPER / SAME_LOWER depend on the input's size
// and are resolved at run.
struct Window {
  std::string where;
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel, strides, dilations, pads;  // empty: not given

  static Window read(NodeReader& node);
  // For an input of spatial sizes `in` and a kernel of `kernel` (the weight's, for Conv).
  ResolvedWindow resolve(const std::vector<int64_t>& in, const std::vector<int64_t>& kernel) const;
};

// The make functions of each file (the table is nn_ops() in ops_nn.cpp). make_conv's kernel
// also runs the integer convolutions of ops_quantize.cpp (ConvInteger, QLinearConv), which share
// Conv's attributes.
Kernel make_conv(NodeReader& node);
// relu(Conv) as one kernel: a Conv whose only reader is a Relu (Note [Fused Conv and Relu] in
// load.cpp).
Kernel make_conv_relu(NodeReader& node);
Kernel make_max_pool(NodeReader& node);
Kernel make_average_pool(NodeReader& node);
Kernel make_global_average_pool(NodeReader& node);
Kernel make_global_max_pool(NodeReader& node);
Kernel make_resize(NodeReader& node);
Kernel make_upsample(NodeReader& node);
Kernel make_lstm(NodeReader& node);
Kernel make_gru(NodeReader& node);
Kernel make_rnn(NodeReader& node);

}  // namespace rcuda::io::onnx_import::nn
