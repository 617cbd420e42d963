// ONNX import: linear quantization (kernel.h, Note [Kernels run the public ops]):
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, the QDQ form in which ONNX Runtime's
// quantization tools write int8 and uint8 models. Computed in float32 with rcuda's public ops:
// x / scale rounded half to even, plus the zero point, saturated to the 8-bit type's range.
#include <string>

#include "io/onnx/import/kernel.h"
#include "io/onnx/import/ops_nn.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {
namespace {

// The range of a quantized type (uint8, int8), refusing the others by name.
std::pair<double, double> quantized_range(DType dtype, const std::string& where) {
  if (dtype == DType::UInt8) return {0, 255};
  if (dtype == DType::Int8) return {-128, 127};
  throw DTypeError(where + ": quantized type " + dtype_name(dtype) +
                   " is not supported by rcuda's ONNX import (uint8 and int8 are)");
}

// A per-tensor scale or zero point as is; a 1-D one (per axis) shaped to broadcast along `axis`
// of a tensor of rank `rank`.
Tensor along_axis(const Tensor& t, int64_t axis, int64_t rank, const std::string& where) {
  if (t.dim() == 0 || (t.dim() == 1 && t.size(0) == 1)) return rcuda::reshape(t, {});
  RCUDA_CHECK(t.dim() == 1, ShapeError, where,
              ": scales and zero points must be scalars or 1-D, got ", shape_str(t.shape()));
  const int64_t a = normalize_axis(axis, rank, where + ": axis");
  Shape shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(a)] = t.size(0);
  return rcuda::reshape(t, shape);
}

void refuse_blocks(NodeReader& node) {
  if (node.i("block_size", 0) != 0)
    node.unsupported("blocked quantization (block_size " + std::to_string(node.i("block_size", 0)) +
                     ")");
}

Kernel make_quantize_linear(NodeReader& node) {
  const int64_t axis = node.i("axis", 1);
  refuse_blocks(node);
  const std::string where = node.where();
  // The output's type when there is no zero point (version 21's output_dtype; uint8 before).
  DType output_dtype = DType::UInt8;
  if (node.i("output_dtype", 0) != 0) {
    output_dtype =
        dtype_from_onnx(static_cast<int32_t>(node.i("output_dtype")), where + ": output_dtype");
    quantized_range(output_dtype, where);
  }
  return [axis, output_dtype, where](const std::vector<Tensor>& in,
                                     const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const bool has_zero = in.size() > 2 && in[2].defined();
    const DType dtype = has_zero ? in[2].dtype() : output_dtype;
    const auto [low, high] = quantized_range(dtype, where);
    const Tensor scale = along_axis(rcuda::to(in[1], DType::Float32), axis, x.dim(), where);
    Tensor q = rcuda::round(rcuda::div(rcuda::to(x, DType::Float32), scale));
    if (has_zero)
      q = rcuda::add(q, along_axis(rcuda::to(in[2], DType::Float32), axis, x.dim(), where));
    return {rcuda::to(rcuda::clamp(q, Scalar(low), Scalar(high)), dtype)};
  };
}

Kernel make_dequantize_linear(NodeReader& node) {
  const int64_t axis = node.i("axis", 1);
  refuse_blocks(node);
  const std::string where = node.where();
  return [axis, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    RCUDA_CHECK(x.dtype() == DType::UInt8 || x.dtype() == DType::Int8 || x.dtype() == DType::Int32,
                DTypeError, where, ": input of dtype ", dtype_name(x.dtype()),
                " is not supported by rcuda's ONNX import (uint8, int8 and int32 are)");
    const DType out = is_floating(in[1].dtype()) ? in[1].dtype() : DType::Float32;
    Tensor y = rcuda::to(x, DType::Float32);
    if (in.size() > 2 && in[2].defined())
      y = rcuda::sub(y, along_axis(rcuda::to(in[2], DType::Float32), axis, x.dim(), where));
    y = rcuda::mul(y, along_axis(rcuda::to(in[1], DType::Float32), axis, x.dim(), where));
    return {rcuda::to(y, out)};
  };
}

// ONNX's formula: the range [min(0, min x), max(0, max x)] mapped onto [0, 255].
Kernel make_dynamic_quantize_linear(NodeReader& node) {
  const std::string where = node.where();
  return [where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor x = rcuda::to(in[0], DType::Float32);
    const Tensor zero = rcuda::zeros({}, TensorOptions(DType::Float32, x.device()));
    const Tensor low = x.numel() > 0 ? rcuda::minimum(rcuda::min(x), zero) : zero;
    const Tensor high = x.numel() > 0 ? rcuda::maximum(rcuda::max(x), zero) : zero;
    const Tensor scale = rcuda::div(rcuda::sub(high, low), Scalar(255.0));
    const Tensor zero_point =
        rcuda::round(rcuda::clamp(rcuda::div(rcuda::neg(low), scale), Scalar(0.0), Scalar(255.0)));
    const Tensor y = rcuda::clamp(rcuda::add(rcuda::round(rcuda::div(x, scale)), zero_point),
                                  Scalar(0.0), Scalar(255.0));
    return {rcuda::to(y, DType::UInt8), scale, rcuda::to(zero_point, DType::UInt8)};
  };
}

// ---- integer products: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv ---------------
//
// Note [Integer products in float64]
// The 8-bit operands, less their zero points, are multiplied and summed in float64, where every
// int32 accumulator ONNX defines is exact (below 2^53), with rcuda's float matmul and conv; the
// result is converted to int32, or scaled and requantized as ONNX's reference does (the scale
// product in float32, the rounding half to even in float64).

// An 8-bit (or int32) tensor less its zero point, in float64. A 1-D zero point of a matmul's
// left operand is per row ([M] -> [M, 1]); of a right operand or a conv weight, per column or
// output channel, which `shape_zero_point` arranges.
Tensor centered(const Tensor& x, const Tensor& zero_point, Shape zero_shape = {}) {
  Tensor y = rcuda::to(x, DType::Float64);
  if (!zero_point.defined()) return y;
  Tensor z = rcuda::to(zero_point, DType::Float64);
  if (z.numel() == 1)
    z = rcuda::reshape(z, {});
  else if (!zero_shape.empty())
    z = rcuda::reshape(z, zero_shape);
  return rcuda::sub(y, z);
}

// Per row of a matmul's left operand: [M] -> [M, 1]; scalars stay.
Shape per_row(const Tensor& t, const Tensor& x) {
  if (!t.defined() || t.numel() == 1 || x.dim() < 2) return {};
  return {t.numel(), 1};
}
// Per output channel of a convolution's result [N, C, ...]: [C] -> [C, 1, ...].
Shape per_channel(const Tensor& t, int64_t rank) {
  if (!t.defined() || t.numel() == 1) return {};
  Shape s(static_cast<size_t>(rank - 1), 1);
  s[0] = t.numel();
  return s;
}

// saturate(round(acc * a_scale * b_scale / y_scale) + y_zero_point), in y_zero_point's type.
Tensor requantize(const Tensor& acc, const Tensor& a_scale, const Tensor& b_scale,
                  Shape b_scale_shape, const Tensor& y_scale, const Tensor& y_zero_point,
                  const std::string& where) {
  Tensor b = rcuda::to(b_scale, DType::Float32);
  b = b.numel() == 1 ? rcuda::reshape(b, {}) : rcuda::reshape(b, b_scale_shape);
  const Tensor multiplier =
      rcuda::div(rcuda::mul(rcuda::reshape(rcuda::to(a_scale, DType::Float32), {}), b),
                 rcuda::reshape(rcuda::to(y_scale, DType::Float32), {}));
  Tensor y = rcuda::round(rcuda::mul(acc, rcuda::to(multiplier, DType::Float64)));
  const DType dtype = y_zero_point.defined() ? y_zero_point.dtype() : DType::UInt8;
  const auto [low, high] = quantized_range(dtype, where);
  if (y_zero_point.defined())
    y = rcuda::add(y, rcuda::reshape(rcuda::to(y_zero_point, DType::Float64), {}));
  return rcuda::to(rcuda::clamp(y, Scalar(low), Scalar(high)), dtype);
}

Kernel make_matmul_integer(NodeReader& node) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor a_zero = optional_input(in, 2), b_zero = optional_input(in, 3);
    const Tensor acc =
        rcuda::matmul(centered(in[0], a_zero, per_row(a_zero, in[0])), centered(in[1], b_zero));
    return {rcuda::to(acc, DType::Int32)};
  };
}

Kernel make_qlinear_matmul(NodeReader& node) {
  const std::string where = node.where();
  return [where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor acc =
        rcuda::matmul(centered(in[0], in[2], per_row(in[2], in[0])), centered(in[3], in[5]));
    const Tensor& a_scale = in[1];
    RCUDA_CHECK(a_scale.numel() == 1, ValueError, where,
                ": a per-row a_scale is not supported by rcuda's ONNX import");
    return {requantize(acc, a_scale, in[4], {in[4].numel()}, in[6], in[7], where)};
  };
}

// The Conv kernel made from this node's attributes, run on float64 copies of the operands. cuDNN
// has no float64 convolutions, so on CUDA the product runs on the host and its result comes back.
Tensor integer_conv(const Kernel& conv, const Tensor& x, const Tensor& w, const RunContext& ctx) {
  const Device device = x.device();
  if (device.is_cpu()) return conv({x, w}, ctx)[0];
  const RunContext host{Device()};
  return rcuda::to(conv({rcuda::to(x, Device()), rcuda::to(w, Device())}, host)[0], device);
}

Kernel make_conv_integer(NodeReader& node) {
  const Kernel conv = nn::make_conv(node);
  return [conv](const std::vector<Tensor>& in, const RunContext& ctx) -> std::vector<Tensor> {
    const Tensor w_zero = optional_input(in, 3);
    const Tensor acc = integer_conv(conv, centered(in[0], optional_input(in, 2)),
                                    centered(in[1], w_zero, per_channel(w_zero, in[1].dim())), ctx);
    return {rcuda::to(acc, DType::Int32)};
  };
}

Kernel make_qlinear_conv(NodeReader& node) {
  const Kernel conv = nn::make_conv(node);
  const std::string where = node.where();
  return
      [conv, where](const std::vector<Tensor>& in, const RunContext& ctx) -> std::vector<Tensor> {
        const Tensor& w_zero = in[5];
        Tensor acc = integer_conv(conv, centered(in[0], in[2]),
                                  centered(in[3], w_zero, per_channel(w_zero, in[3].dim())), ctx);
        const Tensor bias = optional_input(in, 8);
        if (bias.defined())  // int32, one per output channel, added before the scaling
          acc = rcuda::add(
              acc, rcuda::reshape(rcuda::to(bias, DType::Float64), per_channel(bias, acc.dim())));
        return {requantize(acc, in[1], in[4], per_channel(in[4], acc.dim()), in[6], in[7], where)};
      };
}

}  // namespace

const std::vector<ImportOp>& quantize_ops() {
  static const std::vector<ImportOp> ops = {
      {"QuantizeLinear", make_quantize_linear, 10},
      {"DequantizeLinear", make_dequantize_linear, 10},
      {"DynamicQuantizeLinear", make_dynamic_quantize_linear, 11},
      {"MatMulInteger", make_matmul_integer, 10},
      {"QLinearMatMul", make_qlinear_matmul, 10},
      {"ConvInteger", make_conv_integer, 10},
      {"QLinearConv", make_qlinear_conv, 10},
  };
  return ops;
}

}  // namespace rcuda::io::onnx_import
