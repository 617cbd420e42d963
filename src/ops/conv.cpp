// Convolutions (rcuda/ops/conv.h): argument checks, output shapes, memory formats, explicit
// padding, then one backend primitive per pass (Note [Convolution primitives] in backend.h).
//
// Note [Convolution operands]
// The primitives take every tensor of a call in one memory format with exactly that format's
// strides. The format is the input's (suggest_memory_format); an operand that fits it apart
// from the strides of size-1 dims is re-strided without a copy, any other is copied into it.
// So a channels-last network stays channels-last with no copies of activations, and a
// channels-last input meets a contiguous weight by one copy of the (small) weight.
//
// Note [Explicit padding]
// The primitives pad symmetrically. padding="same" with an even dilated kernel size needs one
// zero more at the end, and a transposed convolution whose output_padding is not below its
// stride (torch allows it below the dilation instead) corresponds to a convolution whose
// natural output is larger than the transposed input. Both cases pad a tensor with zeros at the
// end of its spatial dims here, once, on every backend (torch pads the input the same way for
// "same"), and crop the matching gradient.
#include "rcuda/ops/conv.h"

#include <algorithm>
#include <string>

#include "ops_util.h"
#include "rcuda/backend/fused.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {
namespace {

using ConvArgs = Backend::ConvArgs;
using Pair = std::array<int64_t, 2>;

std::string pair_str(const Pair& v) {
  return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
}

ConvArgs backend_args(const ConvParams& p) { return {p.stride, p.padding, p.dilation, p.groups}; }

void check_params(const char* op, const ConvParams& p, bool transposed) {
  RCUDA_CHECK(p.groups >= 1, ValueError, op, ": groups must be positive, got ", p.groups);
  for (int d = 0; d < 2; ++d) {
    RCUDA_CHECK(p.stride[d] >= 1, ValueError, op, ": stride must be positive, got ",
                pair_str(p.stride));
    RCUDA_CHECK(p.dilation[d] >= 1, ValueError, op, ": dilation must be positive, got ",
                pair_str(p.dilation));
    RCUDA_CHECK(p.padding[d] >= 0, ValueError, op, ": padding must be non-negative, got ",
                pair_str(p.padding));
    RCUDA_CHECK(p.padding_end_extra[d] >= 0, ValueError, op,
                ": padding_end_extra must be non-negative, got ", pair_str(p.padding_end_extra));
  }
  RCUDA_CHECK(!transposed || p.padding_end_extra == (Pair{0, 0}), ValueError, op,
              ": padding_end_extra is for convolutions only, got ", pair_str(p.padding_end_extra));
}

void check_rank(const char* op, const char* arg, const Shape& shape, const char* layout) {
  RCUDA_CHECK(shape.size() == 4, ShapeError, op, ": ", arg, " must be 4-D ", layout, ", got shape ",
              shape_str(shape));
}

void check_tensor(const char* op, const char* arg, const Tensor& t, const char* layout) {
  RCUDA_CHECK(t.defined(), ValueError, op, ": ", arg, " is undefined");
  check_rank(op, arg, t.shape(), layout);
  check_not_float8(op, t);
  check_floating(op, arg, t);
}

void check_like(const char* op, const char* arg, const Tensor& t, const char* ref_arg,
                const Tensor& ref) {
  RCUDA_CHECK(t.dtype() == ref.dtype(), DTypeError, op, ": ", arg, " is ", dtype_name(t.dtype()),
              " but ", ref_arg, " is ", dtype_name(ref.dtype()));
  RCUDA_CHECK(t.device() == ref.device(), DeviceError, op, ": ", arg, " is on ", t.device().str(),
              " but ", ref_arg, " is on ", ref.device().str());
}

void check_bias(const char* op, const Tensor& bias, int64_t channels, const Tensor& input) {
  if (!bias.defined()) return;
  RCUDA_CHECK(bias.dim() == 1 && bias.size(0) == channels, ShapeError, op,
              ": bias must have shape [", channels, "] (one per output channel), got ",
              shape_str(bias.shape()));
  check_like(op, "bias", bias, "input", input);
}

// Spatial sizes must be positive and the kernel at least 1 in both dims.
void check_spatial(const char* op, const Shape& input, const Shape& weight) {
  RCUDA_CHECK(input[2] >= 1 && input[3] >= 1, ShapeError, op,
              ": input's spatial dims must be positive, got input of shape ", shape_str(input));
  RCUDA_CHECK(weight[2] >= 1 && weight[3] >= 1, ShapeError, op,
              ": the kernel must be at least 1x1, got weight of shape ", shape_str(weight));
}

// One dim of a convolution's output; ShapeError when the dilated kernel is larger than the
// padded input.
int64_t conv_output_size(const char* op, int dim, int64_t input, int64_t kernel,
                         const ConvParams& p) {
  const int64_t padded = input + 2 * p.padding[dim] + p.padding_end_extra[dim];
  const int64_t dilated = p.dilation[dim] * (kernel - 1) + 1;
  RCUDA_CHECK(dilated <= padded, ShapeError, op, ": the kernel (", kernel, " with dilation ",
              p.dilation[dim], " spans ", dilated, ") is larger than the padded input (", input,
              " + padding ", p.padding[dim] * 2 + p.padding_end_extra[dim], " = ", padded,
              ") in spatial dim ", dim, " (", dim == 0 ? "height" : "width", ")");
  return (padded - dilated) / p.stride[dim] + 1;
}

Shape conv_shape(const char* op, const Shape& input, const Shape& weight, const ConvParams& p) {
  check_params(op, p, false);
  check_rank(op, "input", input, "[N, C, H, W]");
  check_rank(op, "weight", weight, "[out_channels, in_channels / groups, KH, KW]");
  check_spatial(op, input, weight);
  RCUDA_CHECK(input[1] % p.groups == 0, ValueError, op, ": input channels (", input[1],
              ") must be divisible by groups (", p.groups, ")");
  RCUDA_CHECK(weight[0] % p.groups == 0, ValueError, op, ": output channels (weight's first dim, ",
              weight[0], ") must be divisible by groups (", p.groups, ")");
  RCUDA_CHECK(weight[1] * p.groups == input[1], ShapeError, op, ": weight of shape ",
              shape_str(weight), " with groups ", p.groups, " expects input with ",
              weight[1] * p.groups, " channels, got input of shape ", shape_str(input));
  return {input[0], weight[0], conv_output_size(op, 0, input[2], weight[2], p),
          conv_output_size(op, 1, input[3], weight[3], p)};
}

// The shapes of a transposed convolution, and the extra zeros its input needs at the end of
// each dim (Note [Explicit padding]) for the convolution whose gradient it is.
struct TransposedShapes {
  Shape output;
  Pair input_end_extra{0, 0};
};

TransposedShapes transposed_shapes(const char* op, const Shape& input, const Shape& weight,
                                   const ConvParams& p, const Pair& output_padding) {
  check_params(op, p, true);
  check_rank(op, "input", input, "[N, C, H, W]");
  check_rank(op, "weight", weight, "[in_channels, out_channels / groups, KH, KW]");
  check_spatial(op, input, weight);
  RCUDA_CHECK(weight[0] == input[1], ShapeError, op, ": weight of shape ", shape_str(weight),
              " expects input with ", weight[0], " channels (its first dim), got input of shape ",
              shape_str(input));
  RCUDA_CHECK(input[1] % p.groups == 0, ValueError, op, ": input channels (", input[1],
              ") must be divisible by groups (", p.groups, ")");
  TransposedShapes s;
  s.output = {input[0], weight[1] * p.groups, 0, 0};
  for (int d = 0; d < 2; ++d) {
    const int64_t op_d = output_padding[d];
    RCUDA_CHECK(op_d >= 0 && (op_d < p.stride[d] || op_d < p.dilation[d]), ValueError, op,
                ": output_padding must be non-negative and smaller than the stride or the "
                "dilation, got output_padding ",
                pair_str(output_padding), " with stride ", pair_str(p.stride), " and dilation ",
                pair_str(p.dilation));
    const int64_t size = (input[2 + d] - 1) * p.stride[d] - 2 * p.padding[d] +
                         p.dilation[d] * (weight[2 + d] - 1) + op_d + 1;
    RCUDA_CHECK(size >= 1, ShapeError, op, ": the output would have size ", size,
                " in spatial dim ", d, " (input ", shape_str(input), ", weight ", shape_str(weight),
                ", stride ", pair_str(p.stride), ", padding ", pair_str(p.padding), ", dilation ",
                pair_str(p.dilation), ")");
    s.output[2 + d] = size;
    // The convolution of the output has input[2 + d] + floor(op_d / stride) positions.
    s.input_end_extra[d] = op_d / p.stride[d];
  }
  return s;
}

// output_padding recovered from a transposed convolution's input and output shapes (for its
// backward, which is given the shapes only); ShapeError when no valid one matches.
Pair output_padding_of(const char* op, const Shape& input, const Shape& weight, const Shape& output,
                       const ConvParams& p) {
  Pair op_pad{0, 0};
  for (int d = 0; d < 2; ++d)
    op_pad[d] = output[2 + d] - ((input[2 + d] - 1) * p.stride[d] - 2 * p.padding[d] +
                                 p.dilation[d] * (weight[2 + d] - 1) + 1);
  const TransposedShapes s = transposed_shapes(op, input, weight, p, op_pad);
  RCUDA_CHECK(s.output == output, ShapeError, op, ": grad_out has shape ", shape_str(output),
              ", expected ", shape_str(s.output));
  return op_pad;
}

// t in format f with exactly its strides (Note [Convolution operands]): t itself, a re-strided
// alias, or a copy.
Tensor in_format(const Tensor& t, MemoryFormat f) {
  const Strides wanted = memory_format_strides(t.shape(), f);
  if (t.strides() == wanted) return t;
  if (fits_memory_format(t, f)) {
    Tensor same = t.alias();
    same.impl()->strides = wanted;
    return same;
  }
  Tensor copy = empty_with_format(t.shape(), t.dtype(), t.device(), f);
  copy_(copy, t);
  return copy;
}

// t with `extra` zeros appended to its spatial dims (Note [Explicit padding]), in format f.
Tensor pad_end(const Tensor& t, const Pair& extra, MemoryFormat f) {
  if (extra == Pair{0, 0}) return t;
  Tensor padded = empty_with_format(
      {t.size(0), t.size(1), t.size(2) + extra[0], t.size(3) + extra[1]}, t.dtype(), t.device(), f);
  fill_(padded, 0);
  copy_(padded.narrow(2, 0, t.size(2)).narrow(3, 0, t.size(3)), t);
  return padded;
}

// The leading [.., H, W] corner of t, in format f.
Tensor crop(const Tensor& t, const Shape& shape, MemoryFormat f) {
  if (t.shape() == shape) return t;
  return in_format(t.narrow(2, 0, shape[2]).narrow(3, 0, shape[3]), f);
}

// The three passes on checked operands. Zero-element operands never reach the backend: an
// empty result is returned as it is, and a sum over nothing (no channels, no batch) is zeros.
Tensor forward(const Tensor& x, const Tensor& w, const Shape& out_shape, const ConvArgs& args,
               MemoryFormat f) {
  Tensor out = empty_with_format(out_shape, x.dtype(), x.device(), f);
  if (out.numel() == 0) return out;
  if (x.numel() == 0 || w.numel() == 0) return fill_(out, 0), out;
  backend_of(x).conv2d(out, in_format(x, f), in_format(w, f), args);
  return out;
}

Tensor backward_input(const Tensor& grad_out, const Tensor& w, const Shape& in_shape,
                      const ConvArgs& args, MemoryFormat f) {
  Tensor grad_in = empty_with_format(in_shape, grad_out.dtype(), grad_out.device(), f);
  if (grad_in.numel() == 0) return grad_in;
  if (grad_out.numel() == 0 || w.numel() == 0) return fill_(grad_in, 0), grad_in;
  backend_of(grad_out).conv2d_backward_input(grad_in, in_format(grad_out, f), in_format(w, f),
                                             args);
  return grad_in;
}

Tensor backward_weight(const Tensor& grad_out, const Tensor& x, const Shape& w_shape,
                       const ConvArgs& args, MemoryFormat f) {
  Tensor grad_w = empty_with_format(w_shape, grad_out.dtype(), grad_out.device(), f);
  if (grad_w.numel() == 0) return grad_w;
  if (grad_out.numel() == 0 || x.numel() == 0) return fill_(grad_w, 0), grad_w;
  backend_of(grad_out).conv2d_backward_weight(grad_w, in_format(grad_out, f), in_format(x, f),
                                              args);
  return grad_w;
}

// out += bias[o] along the channel dim, in place.
void add_bias(const Tensor& out, const Tensor& bias) {
  if (!bias.defined() || out.numel() == 0) return;
  const Tensor spread = bias.as_strided(out.shape(), {0, bias.stride(0), 0, 0}, bias.offset());
  backend_of(out).binary(BinaryOp::Add, out, out, spread);
}

void check_operands(const char* op, const Tensor& input, const Tensor& weight) {
  check_tensor(op, "input", input, "[N, C, H, W]");
  check_tensor(op, "weight", weight, "[O, C / groups, KH, KW]");
  check_like(op, "weight", weight, "input", input);
}

void check_grad_out(const char* op, const Tensor& grad_out, const Shape& expected,
                    const Tensor& other, const char* other_arg) {
  check_tensor(op, "grad_out", grad_out, "[N, C, H, W]");
  RCUDA_CHECK(grad_out.shape() == expected, ShapeError, op, ": grad_out has shape ",
              shape_str(grad_out.shape()), ", expected ", shape_str(expected));
  check_like(op, other_arg, other, "grad_out", grad_out);
}

}  // namespace

Shape conv2d_output_shape(const Shape& input, const Shape& weight, const ConvParams& params) {
  return conv_shape("conv2d", input, weight, params);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const ConvParams& params) {
  constexpr const char* kOp = "conv2d";
  check_operands(kOp, input, weight);
  const Shape out_shape = conv_shape(kOp, input.shape(), weight.shape(), params);
  check_bias(kOp, bias, weight.size(0), input);
  const MemoryFormat f = suggest_memory_format(input);
  const Tensor x = pad_end(input, params.padding_end_extra, f);
  Tensor out = forward(x, weight, out_shape, backend_args(params), f);
  add_bias(out, bias);
  return out;
}

Tensor conv2d_bias_relu(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvParams& params) {
  constexpr const char* kOp = "conv2d_bias_relu";
  check_operands(kOp, input, weight);
  const Shape out_shape = conv_shape(kOp, input.shape(), weight.shape(), params);
  check_bias(kOp, bias, weight.size(0), input);
  auto* fused = dynamic_cast<FusedConvolution*>(&backend_of(input));
  if (fused != nullptr && bias.defined() && input.numel() > 0 && weight.numel() > 0 &&
      numel(out_shape) > 0) {
    const MemoryFormat f = suggest_memory_format(input);
    const Tensor x = in_format(pad_end(input, params.padding_end_extra, f), f);
    Tensor out = empty_with_format(out_shape, x.dtype(), x.device(), f);
    if (fused->conv2d_bias_relu(out, x, in_format(weight, f), contiguous(bias),
                                backend_args(params)))
      return out;
  }
  return relu(conv2d(input, weight, bias, params));  // the three passes
}

Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Shape& input_shape,
                             const ConvParams& params, MemoryFormat format) {
  constexpr const char* kOp = "conv2d_backward_input";
  check_tensor(kOp, "weight", weight, "[O, C / groups, KH, KW]");
  check_grad_out(kOp, grad_out, conv_shape(kOp, input_shape, weight.shape(), params), weight,
                 "weight");
  const Pair& extra = params.padding_end_extra;
  const Shape padded = {input_shape[0], input_shape[1], input_shape[2] + extra[0],
                        input_shape[3] + extra[1]};
  const Tensor grad = backward_input(grad_out, weight, padded, backend_args(params), format);
  return crop(grad, input_shape, format);
}

Tensor conv2d_backward_weight(const Tensor& grad_out, const Tensor& input,
                              const Shape& weight_shape, const ConvParams& params,
                              MemoryFormat format) {
  constexpr const char* kOp = "conv2d_backward_weight";
  check_tensor(kOp, "input", input, "[N, C, H, W]");
  check_grad_out(kOp, grad_out, conv_shape(kOp, input.shape(), weight_shape, params), input,
                 "input");
  const MemoryFormat f = suggest_memory_format(input);
  const Tensor x = pad_end(input, params.padding_end_extra, f);
  return in_format(backward_weight(grad_out, x, weight_shape, backend_args(params), f), format);
}

Tensor conv_bias_backward(const Tensor& grad_out) {
  check_tensor("conv_bias_backward", "grad_out", grad_out, "[N, C, H, W]");
  return sum(grad_out, {0, 2, 3});
}

Shape conv_transpose2d_output_shape(const Shape& input, const Shape& weight,
                                    const ConvParams& params,
                                    std::array<int64_t, 2> output_padding) {
  return transposed_shapes("conv_transpose2d", input, weight, params, output_padding).output;
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvParams& params, std::array<int64_t, 2> output_padding) {
  constexpr const char* kOp = "conv_transpose2d";
  check_tensor(kOp, "input", input, "[N, C, H, W]");
  check_tensor(kOp, "weight", weight, "[C, O / groups, KH, KW]");
  check_like(kOp, "weight", weight, "input", input);
  const TransposedShapes s =
      transposed_shapes(kOp, input.shape(), weight.shape(), params, output_padding);
  check_bias(kOp, bias, s.output[1], input);
  const MemoryFormat f = suggest_memory_format(input);
  const Tensor x = pad_end(input, s.input_end_extra, f);
  Tensor out = backward_input(x, weight, s.output, backend_args(params), f);
  add_bias(out, bias);
  return out;
}

Tensor conv_transpose2d_backward_input(const Tensor& grad_out, const Tensor& weight,
                                       const Shape& input_shape, const ConvParams& params,
                                       MemoryFormat format) {
  constexpr const char* kOp = "conv_transpose2d_backward_input";
  check_tensor(kOp, "weight", weight, "[C, O / groups, KH, KW]");
  check_tensor(kOp, "grad_out", grad_out, "[N, O, H, W]");
  check_like(kOp, "weight", weight, "grad_out", grad_out);
  const Pair op_pad = output_padding_of(kOp, input_shape, weight.shape(), grad_out.shape(), params);
  const TransposedShapes s = transposed_shapes(kOp, input_shape, weight.shape(), params, op_pad);
  const Shape natural = {input_shape[0], input_shape[1], input_shape[2] + s.input_end_extra[0],
                         input_shape[3] + s.input_end_extra[1]};
  const Tensor grad = forward(grad_out, weight, natural, backend_args(params), format);
  return crop(grad, input_shape, format);
}

Tensor conv_transpose2d_backward_weight(const Tensor& grad_out, const Tensor& input,
                                        const Shape& weight_shape, const ConvParams& params,
                                        MemoryFormat format) {
  constexpr const char* kOp = "conv_transpose2d_backward_weight";
  check_tensor(kOp, "input", input, "[N, C, H, W]");
  check_tensor(kOp, "grad_out", grad_out, "[N, O, H, W]");
  check_like(kOp, "input", input, "grad_out", grad_out);
  const Pair op_pad = output_padding_of(kOp, input.shape(), weight_shape, grad_out.shape(), params);
  const TransposedShapes s = transposed_shapes(kOp, input.shape(), weight_shape, params, op_pad);
  const MemoryFormat f = suggest_memory_format(input);
  // The convolution's roles: grad_out is its input, the (padded) input its output gradient.
  const Tensor x = pad_end(input, s.input_end_extra, f);
  return in_format(backward_weight(x, grad_out, weight_shape, backend_args(params), f), format);
}

}  // namespace rcuda::ops
